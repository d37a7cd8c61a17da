"""Loop overhead per turn, and the cost of pausing a turn for approval and resuming it.

A turn is two rounds against the same scripted endpoint: the model asks for `get_weather`,
the tool runs, the model answers. The endpoint (`toolreg.testing.ScriptedServer`) runs in a
process of its own (`python benchmarks/loop.py --serve`), so the CPU clock of this process
counts everything a loop does except waiting for the model: the SDK building requests and
parsing answers, the loop's decisions, dispatching the tool. Each path is compared with the
hand-written loop over the same SDK call (the floor: `create`, read the call, run the tool,
`create` again), measured interleaved in the same run; the difference is the loop's overhead.

Paths (each `label` -> a turn): toolreg `Conversation` / `AsyncConversation` in the
"tools", "responses" and "anthropic" dialects; the OpenAI Agents SDK `Runner.run` and
pydantic-ai `Agent.run`, each over chat completions and the Responses API; over Anthropic's
Messages API, pydantic-ai's `AnthropicModel` and the Agents SDK's `LitellmModel` (LiteLLM's
own Anthropic client: it runs only where `litellm` is installed, which the bench extra does
not ask for); the floors, sync and async, over the `openai` SDK and the `anthropic` SDK.
Async paths use an async tool (no worker-thread hop for anyone); sync paths a sync one.
With `--loop-baseline CHECKOUT`, that checkout's toolreg (imported beside this one) runs
the toolreg rows too, in the same rounds: "baseline ..." rows.

State: a conversation of 50 messages paused for approval: `export_state()` + `json.dumps`,
`json.loads` + `from_state()`, and `resume()` less its floor: the one model call it makes,
made by hand with the same messages and tools.
"""

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import measure

__all__ = ["PATHS", "endpoint", "loop_overhead", "serve"]

PROMPT = "What's the weather in Paris?"
ANSWER = "Sunny in Paris, 18 degrees."
MODEL = "scripted-model"
HISTORY = 50  # messages in the paused conversation of the state benchmark


def weather(city: str) -> dict[str, Any]:
    """Get the current weather of a city. Use it when the user asks about the weather.

    Args:
        city: The city, e.g. Paris.
    """
    return {"city": city, "temperature": 18, "condition": "sunny"}


async def aweather(city: str) -> dict[str, Any]:
    """Get the current weather of a city. Use it when the user asks about the weather.

    Args:
        city: The city, e.g. Paris.
    """
    return {"city": city, "temperature": 18, "condition": "sunny"}


# -- the endpoint, in a process of its own ---------------------------------------------------


def _answer(request: dict[str, Any]) -> Any:
    """Answer a tool result with text, anything else with a call of get_weather."""
    from toolreg.testing import text, tool_call

    found = request.get("messages") or request.get("input") or []
    last = found[-1] if isinstance(found, list) and found else {}
    content = last.get("content")
    answered = (
        last.get("role") == "tool"
        or last.get("type") == "function_call_output"
        or (  # Anthropic: a user message of tool_result blocks
            isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )
    )
    return text(ANSWER) if answered else tool_call("get_weather", city="Paris")


def serve() -> None:
    """`--serve`: print the base URL, answer until stdin closes."""
    from toolreg.testing import ScriptedServer

    with ScriptedServer([_answer] * 4000, model=MODEL) as server:
        print(server.base_url, flush=True)
        done = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        while not done.wait(0.05):
            if server.remaining < 2000:
                server.add(*[_answer] * 4000)


@contextlib.contextmanager
def endpoint() -> Iterator[str]:
    """The scripted endpoint's base URL, served by a child process for the duration."""
    here = os.path.abspath(__file__)
    child = subprocess.Popen(
        [sys.executable, here, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the scripted endpoint did not start: {url!r}")
        yield url
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# -- the paths ------------------------------------------------------------------------------

Turn = Callable[[], Any]  # sync: returns the answer; async: returns an awaitable of it


def _check(answer: Any, label: str) -> None:
    """Every path must really do the turn: call the tool, answer with the model's text."""
    if answer != ANSWER:
        raise RuntimeError(f"{label}: the turn answered {answer!r}")


def _tools(fmt: str) -> list[dict[str, Any]]:
    """The definitions toolreg sends, so that a floor's requests are the same size (the SDK's
    cost grows with what it sends)."""
    return _registry(weather).get_tools(fmt)


def floor_chat(client: Any) -> Turn:
    """The hand-written loop over chat completions (sync)."""
    tools = _tools("openai")

    def turn() -> str:
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            completion = client.chat.completions.create(
                model=MODEL, messages=messages, tools=tools, tool_choice="auto"
            )
            message = completion.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True))
            for tc in message.tool_calls:
                result = json.dumps(weather(**json.loads(tc.function.arguments)))
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})

    return turn


def floor_responses(client: Any) -> Turn:
    """The hand-written loop over the Responses API (sync)."""
    tools = _tools("responses")

    def turn() -> str:
        items: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            response = client.responses.create(
                model=MODEL, input=items, tools=tools, tool_choice="auto", store=False
            )
            calls = [i for i in response.output if i.type == "function_call"]
            if not calls:
                return str(response.output_text)
            items += [i.model_dump(exclude_none=True) for i in response.output]
            for c in calls:
                result = json.dumps(weather(**json.loads(c.arguments)))
                items.append(
                    {"type": "function_call_output", "call_id": c.call_id, "output": result}
                )

    return turn


MAX_TOKENS = 4096  # what toolreg's Anthropic provider sends when given none; so the floor


def _anthropic_text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def _anthropic_echo(message: Any, calls: list[Any], results: list[Any]) -> list[Any]:
    """The assistant's blocks as received, then one user message of all the results."""
    took = {
        "role": "assistant",
        "content": [b.model_dump(exclude_none=True) for b in message.content],
    }
    answers = [
        {"type": "tool_result", "tool_use_id": c.id, "content": json.dumps(r)}
        for c, r in zip(calls, results)
    ]
    return [took, {"role": "user", "content": answers}]


def floor_anthropic(client: Any) -> Turn:
    """The hand-written loop over Anthropic's Messages API (sync `anthropic` SDK)."""
    tools = _tools("anthropic")

    def turn() -> str:
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            message = client.messages.create(
                model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=tools,
                tool_choice={"type": "auto"},
            )  # fmt: skip
            calls = [b for b in message.content if b.type == "tool_use"]
            if not calls:
                return _anthropic_text(message)
            messages += _anthropic_echo(message, calls, [weather(**c.input) for c in calls])

    return turn


def afloor_chat(client: Any) -> Turn:
    """The hand-written loop over chat completions (async)."""
    tools = _tools("openai")

    async def turn() -> str:
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            completion = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=tools, tool_choice="auto"
            )
            message = completion.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True))
            for tc in message.tool_calls:
                result = json.dumps(await aweather(**json.loads(tc.function.arguments)))
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})

    return turn


def afloor_responses(client: Any) -> Turn:
    """The hand-written loop over the Responses API (async)."""
    tools = _tools("responses")

    async def turn() -> str:
        items: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            response = await client.responses.create(
                model=MODEL, input=items, tools=tools, tool_choice="auto", store=False
            )
            calls = [i for i in response.output if i.type == "function_call"]
            if not calls:
                return str(response.output_text)
            items += [i.model_dump(exclude_none=True) for i in response.output]
            for c in calls:
                result = json.dumps(await aweather(**json.loads(c.arguments)))
                items.append(
                    {"type": "function_call_output", "call_id": c.call_id, "output": result}
                )

    return turn


def afloor_anthropic(client: Any) -> Turn:
    """The hand-written loop over Anthropic's Messages API (async `anthropic` SDK)."""
    tools = _tools("anthropic")

    async def turn() -> str:
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            message = await client.messages.create(
                model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=tools,
                tool_choice={"type": "auto"},
            )  # fmt: skip
            calls = [b for b in message.content if b.type == "tool_use"]
            if not calls:
                return _anthropic_text(message)
            results = [await aweather(**c.input) for c in calls]
            messages += _anthropic_echo(message, calls, results)

    return turn


def _registry(fn: Callable[..., Any], package: Any = None, **flags: Any) -> Any:
    import toolreg

    reg = (package or toolreg).ToolRegistry()
    reg.register_tool(name="get_weather", **flags)(fn)
    return reg


def toolreg_sync(dialect: str, package: Any = None) -> Callable[[Any], Turn]:
    """A turn of `Conversation` (of `package`: another checkout's toolreg, for a baseline)."""

    def make(client: Any) -> Turn:
        import toolreg

        conversation = (package or toolreg).Conversation
        reg = _registry(weather, package)

        def turn() -> str:
            chat = conversation(client, MODEL, registry=reg, dialect=dialect)
            return chat.send(PROMPT).text

        return turn

    return make


def toolreg_async(dialect: str, package: Any = None) -> Callable[[Any], Turn]:
    def make(client: Any) -> Turn:
        import toolreg

        conversation = (package or toolreg).AsyncConversation
        reg = _registry(aweather, package)

        async def turn() -> str:
            chat = conversation(client, MODEL, registry=reg, dialect=dialect)
            return (await chat.send(PROMPT)).text

        return turn

    return make


BASELINE = "toolreg_baseline"


def load_baseline(checkout: str) -> Any:
    """Another checkout's toolreg (e.g. the main branch), imported as `toolreg_baseline`
    beside this one, so that both run in the same process and the same rounds."""
    folder = os.path.join(os.path.abspath(checkout), "toolreg")
    spec = importlib.util.spec_from_file_location(
        BASELINE, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no toolreg package in {checkout}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[BASELINE] = module
    spec.loader.exec_module(module)
    return module


def baseline_paths(package: Any) -> dict[str, tuple[str, str, Callable[[Any], Turn]]]:
    """The toolreg rows again, run by the baseline checkout (in the dialects it speaks)."""
    import importlib

    try:  # a checkout with providers speaks anthropic too
        providers = importlib.import_module(f"{package.__name__}.conversation.providers")
        spoken = providers.dialect_names()
    except (ImportError, AttributeError):
        spoken = importlib.import_module(f"{package.__name__}.formats").DIALECTS
    out = {}
    for label, (peer, floor, _) in PATHS.items():
        dialect = label.rsplit(", ", 1)[1]
        if peer or dialect not in spoken:
            continue
        build = toolreg_async if "Async" in label else toolreg_sync
        out[label.replace("toolreg", "baseline", 1)] = ("", floor, build(dialect, package))
    return out


def agents_path(api: str) -> Callable[[Any], Turn]:
    def make(client: Any) -> Turn:
        from agents import (
            Agent,
            OpenAIChatCompletionsModel,
            OpenAIResponsesModel,
            Runner,
            function_tool,
            set_tracing_disabled,
        )

        set_tracing_disabled(True)  # no trace export (it would go to the network)
        kind = OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel
        agent = Agent(
            name="weather",
            model=kind(model=MODEL, openai_client=client),
            tools=[function_tool(aweather, name_override="get_weather")],
        )

        async def turn() -> str:
            return str((await Runner.run(agent, PROMPT)).final_output)

        return turn

    return make


def agents_litellm_path(client: Any) -> Turn:
    """The Agents SDK over Anthropic's Messages API: it has no Anthropic model of its own;
    `LitellmModel` sends through LiteLLM, which speaks to Anthropic with its own HTTP client
    (not the `anthropic` SDK): the endpoint of `client` is all it takes from it."""
    # LiteLLM fetches its model cost map from the network at import unless told not to
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.extensions.models.litellm_model import LitellmModel

    litellm.suppress_debug_info = True  # else a "Provider List" banner on stdout per call
    set_tracing_disabled(True)
    model = LitellmModel(
        model=f"anthropic/{MODEL}", base_url=str(client.base_url).rstrip("/"), api_key="none"
    )
    agent = Agent(
        name="weather", model=model, tools=[function_tool(aweather, name_override="get_weather")]
    )

    async def turn() -> str:
        return str((await Runner.run(agent, PROMPT)).final_output)

    return turn


def pydantic_ai_path(api: str) -> Callable[[Any], Turn]:
    def make(client: Any) -> Turn:
        from pydantic_ai import Agent, Tool

        if api == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            model: Any = AnthropicModel(MODEL, provider=AnthropicProvider(anthropic_client=client))
        else:
            from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
            from pydantic_ai.providers.openai import OpenAIProvider

            kind = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
            model = kind(MODEL, provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, tools=[Tool(aweather, name="get_weather")])

        async def turn() -> str:
            return str((await agent.run(PROMPT)).output)

        return turn

    return make


# label -> (async?, the SDK its client is of, make(client) -> a turn)
FLOORS: dict[str, tuple[bool, str, Callable[[Any], Turn]]] = {
    "raw SDK loop, chat (sync)": (False, "openai", floor_chat),
    "raw SDK loop, responses (sync)": (False, "openai", floor_responses),
    "raw SDK loop, anthropic (sync)": (False, "anthropic", floor_anthropic),
    "raw SDK loop, chat (async)": (True, "openai", afloor_chat),
    "raw SDK loop, responses (async)": (True, "openai", afloor_responses),
    "raw SDK loop, anthropic (async)": (True, "anthropic", afloor_anthropic),
}

# label -> (peer distribution, "" for toolreg; its floor; make(client) -> a turn)
PATHS: dict[str, tuple[str, str, Callable[[Any], Turn]]] = {
    "toolreg Conversation, tools": ("", "raw SDK loop, chat (sync)", toolreg_sync("tools")),
    "toolreg Conversation, responses": (
        "", "raw SDK loop, responses (sync)", toolreg_sync("responses")
    ),
    "toolreg AsyncConversation, tools": ("", "raw SDK loop, chat (async)", toolreg_async("tools")),
    "toolreg AsyncConversation, responses": (
        "", "raw SDK loop, responses (async)", toolreg_async("responses")
    ),
    "toolreg Conversation, anthropic": (
        "", "raw SDK loop, anthropic (sync)", toolreg_sync("anthropic")
    ),
    "toolreg AsyncConversation, anthropic": (
        "", "raw SDK loop, anthropic (async)", toolreg_async("anthropic")
    ),
    "openai-agents Runner, chat": (
        "openai-agents", "raw SDK loop, chat (async)", agents_path("chat")
    ),
    "openai-agents Runner, responses": (
        "openai-agents", "raw SDK loop, responses (async)", agents_path("responses")
    ),
    "pydantic-ai Agent, chat": (
        "pydantic-ai-slim", "raw SDK loop, chat (async)", pydantic_ai_path("chat")
    ),
    "pydantic-ai Agent, responses": (
        "pydantic-ai-slim", "raw SDK loop, responses (async)", pydantic_ai_path("responses")
    ),
    "pydantic-ai Agent, anthropic": (
        "pydantic-ai-slim", "raw SDK loop, anthropic (async)", pydantic_ai_path("anthropic")
    ),
    "openai-agents Runner, anthropic (LiteLLM)": (
        "openai-agents", "raw SDK loop, anthropic (async)", agents_litellm_path
    ),
}  # fmt: skip

# label -> (a module the path needs beyond its peer's distribution, how to install it)
NEEDS = {
    "openai-agents Runner, anthropic (LiteLLM)": (
        "litellm",
        "pip install 'openai-agents[litellm]'; not in the bench extra",
    ),
}


# -- state: pause, export, rebuild, resume ------------------------------------------------------


def _paused_history() -> list[dict[str, Any]]:
    """HISTORY - 2 messages of earlier turns (the turn's user message and the call follow)."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a weather bot."}]
    while len(history) < HISTORY - 2:
        n = len(history)
        history.append({"role": "user", "content": f"Question {n}: is it warm in city {n}?"})
        history.append({"role": "assistant", "content": f"Answer {n}: it is 18 degrees there."})
    return history[: HISTORY - 2]


def state_cases(client: Any) -> tuple[list[measure.Case], measure.Pair, dict[str, Any]]:
    """Export and rebuild (no model call) as cases; resume paired with its one model call
    made by hand with the same messages and tools."""
    import toolreg

    reg = _registry(weather, requires_confirmation=True)
    chat = toolreg.Conversation(client, MODEL, registry=reg, confirm="defer")
    chat.messages = _paused_history()
    paused = chat.send(PROMPT)
    if paused.stop_reason != "approval_required" or len(paused.messages) != HISTORY:
        raise RuntimeError(f"the state benchmark did not pause as planned: {paused.stop_reason}")
    call_id = paused.pending[0].call_id
    saved = json.dumps(chat.export_state())

    def rebuilt() -> Any:
        return toolreg.Conversation.from_state(json.loads(saved), client, registry=reg)

    def export(conv: Any) -> None:
        json.dumps(conv.export_state())

    def resume(conv: Any) -> None:
        _check(conv.resume({call_id: True}).text, "resume")

    observation = {"role": "tool", "tool_call_id": call_id, "content": json.dumps(weather("Paris"))}
    messages = [*paused.messages, observation]
    tools = reg.get_tools()

    def one_call() -> None:
        client.chat.completions.create(
            model=MODEL, messages=messages, tools=tools, tool_choice="auto"
        )

    cases = [
        measure.Case("export", measure.fresh_batch(rebuilt, export)),
        measure.Case("rebuild", measure.sync_batch(rebuilt)),
    ]
    pair = measure.Pair("resume", measure.pair_batch(resume, one_call, make=rebuilt))
    return cases, pair, {"messages": HISTORY, "state_bytes": len(saved)}


# -- the section ----------------------------------------------------------------------------


def loop_overhead(cfg: dict[str, Any], installed: Callable[[str], bool]) -> dict[str, Any]:
    """Time every path paired with its floor (a peer that is not installed: skipped, noted)."""
    import openai

    skipped: dict[str, str] = {}
    try:
        import anthropic
    except ImportError:
        anthropic = None
    with endpoint() as url:
        options = {"base_url": url, "api_key": "none", "max_retries": 0, "timeout": 30.0}
        clients = {("openai", False): openai.OpenAI(**options)}
        clients["openai", True] = openai.AsyncOpenAI(**options)
        if anthropic is not None:  # it adds /v1/messages to the root itself
            root = {**options, "base_url": url.removesuffix("/v1")}
            clients["anthropic", False] = anthropic.Anthropic(**root)
            clients["anthropic", True] = anthropic.AsyncAnthropic(**root)
        loop = asyncio.new_event_loop()

        def ready(label: str, floor: str, make: Callable[[Any], Turn]) -> Turn:
            is_async, sdk, _ = FLOORS[floor]
            turn = make(clients[sdk, is_async])
            _check(loop.run_until_complete(turn()) if is_async else turn(), label)
            return turn

        floors = {
            label: ready(label, label, make)
            for label, (is_async, sdk, make) in FLOORS.items()
            if (sdk, is_async) in clients
        }
        pairs, floor_of = [], {}
        paths = dict(PATHS)
        if cfg.get("loop_baseline"):
            paths |= baseline_paths(load_baseline(cfg["loop_baseline"]))
        for label, (peer, floor, make) in paths.items():
            if peer and peer not in cfg["peers"]:
                continue
            if peer and not installed(peer):
                skipped[label] = "not installed"
                continue
            if floor not in floors:
                skipped[label] = "not installed (anthropic: pip install anthropic)"
                continue
            module, how = NEEDS.get(label, ("", ""))
            if module and importlib.util.find_spec(module) is None:
                skipped[label] = f"not installed ({module}: {how})"
                continue
            is_async = FLOORS[floor][0]
            try:
                turn = ready(label, floor, make)
            except Exception as exc:
                skipped[label] = f"failed: {type(exc).__name__}: {exc}".splitlines()[0][:160]
                continue
            batch = measure.pair_batch(
                lambda _, t=turn: t(), floors[floor], loop=loop if is_async else None
            )
            pairs.append(measure.Pair(label, batch))
            floor_of[label] = floor
        cases, resume, state_info = state_cases(clients["openai", False])
        rounds, target = cfg["rounds"], cfg["loop_target"]
        paired = measure.interleave_pairs([*pairs, resume], rounds=rounds, target=target)
        single = measure.interleave(cases, rounds=rounds, target=target / 10)
        for (_, is_async), client in clients.items():
            if is_async:
                loop.run_until_complete(client.close())
            else:
                client.close()
        loop.close()
    rows = [
        {
            "label": pair.key,
            "floor_label": floor_of[pair.key],
            **{part: measure.clocks(v, 1e3) for part, v in paired[pair.key].items()},
        }
        for pair in pairs
    ]
    state_rows = {key: measure.clocks(single[key]) for key in ("export", "rebuild")}
    state_rows |= {f"resume {p}": measure.clocks(v) for p, v in paired["resume"].items()}
    state_out = {**state_info, "rows": state_rows}
    versions = {"openai": openai.__version__}
    if anthropic is not None:
        versions["anthropic"] = anthropic.__version__
    if any(label.endswith("(LiteLLM)") for label in floor_of):
        versions["litellm"] = importlib.metadata.version("litellm")
    return {**versions, "rows": rows, "skipped": skipped, "state": state_out}


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        serve()
    else:
        raise SystemExit("run benchmarks/run.py --sections loop")
