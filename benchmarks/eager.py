"""Starting tools while the model is still streaming: time from the request to the answer.

`python benchmarks/eager.py [--rounds N] [--peers all|none|openai-agents,pydantic-ai-slim]
[--json]`

The endpoint is `toolreg.testing.ScriptedServer` on 127.0.0.1, paced by its `before_send`
hook like a model that takes its time: the first answer is three tool calls, and the
arguments of call k are complete (its argument pieces arrive; its head comes when call k-1
is complete) at SCHEDULE_MS[k] after the request, 200, 400 and 600 ms; a plain
(non-streamed) answer is sent whole at 600 ms, when the stream would have ended. The tools
take TOOL_MS = [900, 100, 100] ms (`time.sleep` for a sync driver, `asyncio.sleep` for an
async one). The second answer, after the tool results, is "done" at once.

Bounds, from that schedule alone:
- eager: the latest of each call's completion plus its tool's time (200 + 900 ms);
- run-after-stream: the end of the stream plus the slowest tool (600 + 900 ms);
- sequential: the end of the stream plus every tool, one after another (600 + 1,100 ms).

Rows: toolreg's `Conversation` and `AsyncConversation` streaming with eager start off and,
when this checkout has it, on; the Agents SDK (`Runner.run`, `Runner.run_streamed`) and
pydantic-ai (`Agent.run`) on the same endpoint and tools, in the same rounds (a peer that is
not installed is reported as skipped). Median wall time over interleaved rounds; nothing
here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import random
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [p for p in (HERE, ROOT) if p not in sys.path[:2]]  # this checkout's toolreg

import toolreg  # noqa: E402
from toolreg.testing import ScriptedServer, call, text, tool_calls  # noqa: E402

SCHEDULE_MS = (200, 400, 600)  # when call k's arguments are complete; the last: the end
TOOL_MS = (900, 100, 100)
NAMES = ("fetch_report", "get_weather", "get_time")
PROMPT = "Get the report, the weather in Paris and the time in Tokyo."
ANSWER = "done"
MODEL = "scripted-model"

BOUNDS = {
    "bound: eager": max(c + t for c, t in zip(SCHEDULE_MS, TOOL_MS)),
    "bound: run-after-stream": SCHEDULE_MS[-1] + max(TOOL_MS),
    "bound: sequential": SCHEDULE_MS[-1] + sum(TOOL_MS),
}
PEERS = ("openai-agents", "pydantic-ai-slim")


# -- the tools -------------------------------------------------------------------------------


def _doc(fn: Any, what: str) -> Any:
    fn.__doc__ = f"{what}\n\nArgs:\n    topic: What to look up."
    return fn


def _sync_tool(name: str, ms: int) -> Callable[[str], str]:
    def tool(topic: str) -> str:
        time.sleep(ms / 1000)
        return f"{name}: {topic} ok"

    tool.__name__ = name
    return _doc(tool, f"Look up {name.replace('_', ' ')}.")  # type: ignore[no-any-return]


def _async_tool(name: str, ms: int) -> Callable[[str], Awaitable[str]]:
    async def tool(topic: str) -> str:
        await asyncio.sleep(ms / 1000)
        return f"{name}: {topic} ok"

    tool.__name__ = name
    return _doc(tool, f"Look up {name.replace('_', ' ')}.")  # type: ignore[no-any-return]


SYNC_TOOLS = [_sync_tool(n, ms) for n, ms in zip(NAMES, TOOL_MS)]
ASYNC_TOOLS = [_async_tool(n, ms) for n, ms in zip(NAMES, TOOL_MS)]


# -- the endpoint ----------------------------------------------------------------------------


def _turn(request: dict[str, Any]) -> Any:
    """Three calls first; "done" once the tool results are in."""
    history = request.get("messages") or request.get("input") or []
    answered = any(
        isinstance(m, dict) and (m.get("role") == "tool" or m.get("type") == "function_call_output")
        for m in history
    )
    if answered:
        return text(ANSWER)
    return tool_calls(*(call(n, {"topic": n}) for n in NAMES))


class Pacer:
    """`before_send`: holds each chunk of a calls answer until its time in SCHEDULE_MS."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}
        self.lock = threading.Lock()

    def __call__(self, index: int, chunk: dict[str, Any]) -> None:
        with self.lock:
            t0 = self.started.setdefault(index, time.perf_counter())
        at = _due(chunk)
        if at is not None:
            delay = t0 + at / 1000 - time.perf_counter()
            if delay > 0:
                time.sleep(delay)


def _due(chunk: dict[str, Any]) -> int | None:
    """When this chunk of a calls answer is due (ms after the request), None: at once."""
    kind = chunk.get("type") or chunk.get("object")
    if kind == "chat.completion":  # a plain answer: whole, when the stream would end
        message = chunk["choices"][0]["message"]
        return SCHEDULE_MS[-1] if message.get("tool_calls") else None
    if kind == "chat.completion.chunk":
        choice = (chunk.get("choices") or [{}])[0]
        if choice.get("finish_reason") == "tool_calls":
            return SCHEDULE_MS[-1]
        fragments = (choice.get("delta") or {}).get("tool_calls") or []
        if not fragments:
            return None
        index = fragments[0].get("index", 0)
        if fragments[0].get("id"):  # a call's head: when the call before it is complete
            return SCHEDULE_MS[index - 1] if index > 0 else None
        return SCHEDULE_MS[index]  # its arguments: when it is complete
    if kind == "response.output_item.added":
        index = chunk.get("output_index", 0)
        is_call = chunk.get("item", {}).get("type") == "function_call"
        return SCHEDULE_MS[index - 1] if is_call and index > 0 else None
    if kind in ("response.function_call_arguments.delta", "response.output_item.done"):
        index = chunk.get("output_index", 0)
        is_call = kind.endswith(".delta") or chunk.get("item", {}).get("type") == "function_call"
        return SCHEDULE_MS[index] if is_call else None
    if kind == "response.completed":
        output = chunk.get("response", {}).get("output") or []
        return SCHEDULE_MS[-1] if any(i.get("type") == "function_call" for i in output) else None
    if kind == "response":  # a plain Responses API answer
        output = chunk.get("output") or []
        return SCHEDULE_MS[-1] if any(i.get("type") == "function_call" for i in output) else None
    return None


# -- the paths -------------------------------------------------------------------------------

Run = Callable[[], Any]  # one turn: returns the answer (sync) or an awaitable of it (async)


def _registry(tools: list[Any]) -> Any:
    reg = toolreg.ToolRegistry()
    for fn in tools:
        reg.register_tool(fn, read_only=True)
    return reg


def _eager_options(eager: bool) -> dict[str, Any]:
    """`eager_tools=`, left out by a toolreg that has no eager start (it never starts early)."""
    return {"eager_tools": eager} if _has_eager() else {}


def toolreg_sync(eager: bool, dialect: str = "tools") -> Callable[[ScriptedServer], Run]:
    def make(server: ScriptedServer) -> Run:
        reg = _registry(SYNC_TOOLS)
        client = server.client()
        options = {"registry": reg, "stream": True, "dialect": dialect, **_eager_options(eager)}

        def run() -> str:
            chat = toolreg.Conversation(client, MODEL, **options)
            return chat.send(PROMPT).text

        return run

    return make


def toolreg_async(eager: bool, dialect: str = "tools") -> Callable[[ScriptedServer], Run]:
    def make(server: ScriptedServer) -> Run:
        reg = _registry(ASYNC_TOOLS)
        client = server.async_client()
        options = {"registry": reg, "stream": True, "dialect": dialect, **_eager_options(eager)}

        async def run() -> str:
            chat = toolreg.AsyncConversation(client, MODEL, **options)
            return (await chat.send(PROMPT)).text

        return run

    return make


def agents(streamed: bool) -> Callable[[ScriptedServer], Run]:
    def make(server: ScriptedServer) -> Run:
        from agents import (
            Agent,
            ModelSettings,
            OpenAIChatCompletionsModel,
            Runner,
            function_tool,
            set_tracing_disabled,
        )

        set_tracing_disabled(True)  # no trace export (it would go to the network)
        agent = Agent(
            name="eager",
            model=OpenAIChatCompletionsModel(model=MODEL, openai_client=server.async_client()),
            tools=[function_tool(fn) for fn in ASYNC_TOOLS],
            model_settings=ModelSettings(parallel_tool_calls=True),
        )

        async def run() -> str:
            if not streamed:
                return str((await Runner.run(agent, PROMPT)).final_output)
            result = Runner.run_streamed(agent, PROMPT)
            async for _ in result.stream_events():
                pass
            return str(result.final_output)

        return run

    return make


def pydantic_ai(server: ScriptedServer) -> Run:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=server.async_client()))
    agent = Agent(model, tools=[Tool(fn) for fn in ASYNC_TOOLS])

    async def run() -> str:
        return str((await agent.run(PROMPT)).output)

    return run


# label -> (peer distribution, "" for toolreg; what runs; make(server) -> one turn)
PATHS: dict[str, tuple[str, str, Callable[[ScriptedServer], Run]]] = {
    "toolreg Conversation, no eager": (
        "",
        "stream=True, eager_tools=False; sync tools in threads",
        toolreg_sync(False),
    ),
    "toolreg AsyncConversation, no eager": (
        "",
        "stream=True, eager_tools=False; async tools as tasks",
        toolreg_async(False),
    ),
    "toolreg Conversation, eager": (
        "",
        "stream=True, eager start (read-only tools); sync tools in threads",
        toolreg_sync(True),
    ),
    "toolreg AsyncConversation, eager": (
        "",
        "stream=True, eager start (read-only tools); async tools as tasks",
        toolreg_async(True),
    ),
    "openai-agents Runner.run": ("openai-agents", "plain answer; async tools", agents(False)),
    "openai-agents Runner.run_streamed": (
        "openai-agents",
        "streamed answer; async tools",
        agents(True),
    ),
    "pydantic-ai Agent.run": ("pydantic-ai-slim", "plain answer; async tools", pydantic_ai),
}


def _has_eager() -> bool:
    return "eager_tools" in inspect.signature(toolreg.Conversation.__init__).parameters


def _installed(dist: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(dist)
    except PackageNotFoundError:
        return False
    return True


def _versions(peers: list[str]) -> dict[str, str]:
    from importlib.metadata import version

    found = {"openai": version("openai")}
    found.update({p: version(p) for p in peers if _installed(p)})
    return found


# -- measuring -------------------------------------------------------------------------------


def measure(rounds: int, peers: list[str]) -> dict[str, Any]:
    paths = {
        label: (dist, what, make)
        for label, (dist, what, make) in PATHS.items()
        if dist == "" or dist in peers
    }
    skipped: dict[str, str] = {}
    ready: dict[str, tuple[str, Run]] = {}
    loop = asyncio.new_event_loop()
    server = ScriptedServer(before_send=Pacer(), model=MODEL)
    with server:
        for label, (dist, what, make) in paths.items():
            if dist and not _installed(dist):
                skipped[label] = f"{dist} not installed"
                continue
            try:
                run = make(server)
                server.add(_turn, _turn)
                answer = _once(loop, run)
            except Exception as exc:  # a peer whose API changed: skipped with the error
                skipped[label] = f"{type(exc).__name__}: {exc}"[:200]
                continue
            if answer != ANSWER:
                skipped[label] = f"answered {answer!r}, not {ANSWER!r}"
                continue
            ready[label] = (what, run)
        times: dict[str, list[float]] = {label: [] for label in ready}
        for _ in range(rounds):
            order = list(ready)
            random.shuffle(order)
            for label in order:
                server.add(_turn, _turn)
                start = time.perf_counter()
                _once(loop, ready[label][1])
                times[label].append((time.perf_counter() - start) * 1000)
        server.assert_all_consumed()
    loop.close()
    eager_bound = BOUNDS["bound: eager"]
    rows = [
        {"label": label, "ms": ms, "x_eager_bound": ms / eager_bound, "what": "the schedule"}
        for label, ms in BOUNDS.items()
    ]
    for label, samples in times.items():
        ms = statistics.median(samples)
        row = {"label": label, "ms": ms, "x_eager_bound": ms / eager_bound, "what": ready[label][0]}
        rows.append(row | {"min_ms": min(samples), "max_ms": max(samples)})
    return {"rows": rows, "skipped": skipped, "rounds": rounds}


def _once(loop: asyncio.AbstractEventLoop, run: Run) -> Any:
    answer = run()
    return loop.run_until_complete(answer) if inspect.isawaitable(answer) else answer


def _fmt(ms: float) -> str:
    return f"{ms:,.0f}"


def markdown(result: dict[str, Any], versions: dict[str, str]) -> str:
    shown = ", ".join(f"{k} {v}" for k, v in versions.items())
    lines = [
        f"**Eager tool start — Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"median of {result['rounds']} interleaved rounds (wall clock)**",
        "",
        f"Versions: {shown}. Calls complete at {', '.join(map(str, SCHEDULE_MS))} ms; "
        f"tools take {', '.join(map(str, TOOL_MS))} ms.",
        "",
        "| path | ms to the answer | × eager bound | min–max ms | what runs |",
        "|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        spread = f"{_fmt(row['min_ms'])}–{_fmt(row['max_ms'])}" if "min_ms" in row else ""
        lines.append(
            f"| {row['label']} | {_fmt(row['ms'])} | {row['x_eager_bound']:.2f}× | {spread} "
            f"| {row['what']} |"
        )
    for label, why in result["skipped"].items():
        lines.append(f"\n- skipped **{label}**: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peers", default="all", help="all, none, or a comma-separated list")
    parser.add_argument("--json", action="store_true", help="print JSON, not markdown")
    args = parser.parse_args(argv)
    peers = list(PEERS) if args.peers == "all" else [p for p in args.peers.split(",") if p]
    if args.peers == "none":
        peers = []
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    result = measure(max(1, args.rounds), peers)
    versions = _versions(peers)
    if args.json:
        print(json.dumps({**result, "versions": versions}, indent=2))
    else:
        print(markdown(result, versions))


if __name__ == "__main__":
    main()
