"""The loop against a third-party mock of the model APIs: `@copilotkit/aimock` (npm).

aimock is not ours: it serves OpenAI's chat completions, the Responses API and Anthropic's
Messages API from the same JSON fixtures (`response.toolCalls` / `response.content`),
each in its own wire format, plain or streamed. The tests start it once for the module as
a child process (`llmock -p 0 -f FIXTURES --strict`, on 127.0.0.1) and drive
`toolreg.Conversation` / `AsyncConversation` through the real `openai` and `anthropic`
SDKs: the model calls toolreg tools (two at once where the fixture says so), the tools
run through dispatch, the model answers with text. With `--strict`, a request that no
fixture matches is refused (HTTP 503) instead of answered; the answer fixtures match only
when the request's last message is a tool result that says what the tool returned
(`hasToolResult` + `toolResultContains`), so the turn ends only if the results went back.

Each request toolreg sends is kept as sent (an httpx request hook) and checked against
the API's own rules; aimock's request journal (`GET /__aimock/journal`, per `X-Test-Id`)
says what aimock understood of it.

Where aimock is: `TOOLREG_AIMOCK_BIN` (the `llmock` script of an
`npm install --prefix DIR @copilotkit/aimock@AIMOCK_VERSION`: `DIR/node_modules/.bin/llmock`,
what `.ci/run` installs), else `llmock` on the PATH. Without it, or without `node`, the
module is skipped with the reason; with `TOOLREG_AIMOCK_BIN` set, a binary that does not
start is a failure, not a skip.

How aimock differs from the real APIs (none is papered over here; the tests that meet one
say so):
- usage: chat completions count tokens from lengths; the Responses and Messages APIs
  answer zeros unless a fixture gives usage;
- the Responses API keeps nothing: `previous_response_id` is ignored, so only the
  client-state loop (`store=False`, toolreg's default) can run against it;
- the journal holds each request translated to chat-completions shape, not as sent;
- the fixtures' `responseFormat` matcher sees only chat completions' `response_format`:
  the Responses API's `text.format` and Anthropic's `output_config` are not read;
- it does not refuse a history the real APIs refuse (a call left unanswered, a result
  for no call): each request is checked here with `toolreg.testing.inspection` instead;
- a filtered answer (`finishReason: "content_filter"`) is a Responses API response with
  `status: "failed"`, where the real API answers `"incomplete"` with the reason
  `content_filter`: toolreg reads a failed response as an error;
- a finish reason it has no Anthropic word for goes out as is (`content_filter` as a
  `stop_reason`; Anthropic says `refusal`);
- for a reasoning-capable model name its chat completions carry `reasoning_content`
  (as DeepSeek's and vLLM's do; OpenAI's never do);
- a `thinking` block's `signature` is a placeholder (`aimock-placeholder-signature`);
  aimock checks, like Anthropic, that a continued tool-use turn starts with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationError,
    Hooks,
    ModelResponseEvent,
    ToolRegistry,
)
from toolreg.testing.inspection import history_problems, messages_problems

AIMOCK_VERSION = "1.43.0"  # .ci/run installs this version
BIN_ENV = "TOOLREG_AIMOCK_BIN"
OPENAI_MODEL = "gpt-4o-mini"
CLAUDE = "claude-sonnet-4-5"  # a reasoning-capable name: aimock emits thinking for it

Json = dict[str, Any]

# One fixture pool for every API (aimock translates each request to one shape to match it).
# First match wins; each test asks its own question.
FIXTURES: list[Json] = [
    # two calls at once, then the answer once both results are back
    {
        "match": {"userMessage": "mugs and cups", "hasToolResult": False},
        "response": {
            "toolCalls": [
                {"name": "stock", "arguments": {"item": "mug"}},
                {"name": "stock", "arguments": {"item": "cup"}},
            ]
        },
    },
    {
        "match": {
            "userMessage": "mugs and cups",
            "hasToolResult": True,
            "toolResultContains": "5",  # the last result: the cup count
        },
        "response": {"content": "There are 3 mugs and 5 cups in stock, sir."},
    },
    # text before the call, then the answer
    {
        "match": {"userMessage": "bowls", "hasToolResult": False},
        "response": {
            "content": "Let me look.",
            "toolCalls": [{"name": "stock", "arguments": {"item": "bowl"}}],
        },
    },
    {
        "match": {"userMessage": "bowls", "hasToolResult": True, "toolResultContains": "0"},
        "response": {"content": "No bowls left."},
    },
    # a call of a tool that does not exist: answered with an error the model can read
    {
        "match": {"userMessage": "wipe the disk", "hasToolResult": False},
        "response": {"toolCalls": [{"name": "rm_rf", "arguments": {"path": "/"}}]},
    },
    {
        "match": {
            "userMessage": "wipe the disk",
            "hasToolResult": True,
            "toolResultContains": "rm_rf",
        },
        "response": {"content": "I cannot do that."},
    },
    # extended thinking before a call: the continuation must start with the thinking block
    {
        "match": {"userMessage": "think about plates", "hasToolResult": False},
        "response": {
            "reasoning": "The user wants the plate count; the stock tool has it.",
            "toolCalls": [{"name": "stock", "arguments": {"item": "plate"}}],
        },
    },
    {
        "match": {
            "userMessage": "think about plates",
            "hasToolResult": True,
            "toolResultContains": "7",
        },
        "response": {"content": "7 plates."},
    },
    # redacted thinking, then thinking, then a call (aimock puts redacted blocks first)
    {
        "match": {"userMessage": "think hard about cups", "hasToolResult": False},
        "response": {
            "redactedThinking": ["opaque-reasoning-1"],
            "reasoning": "Cups: ask the stock tool.",
            "reasoningSignature": "sig-cups",
            "toolCalls": [{"name": "stock", "arguments": {"item": "cup"}}],
        },
    },
    {
        "match": {
            "userMessage": "think hard about cups",
            "hasToolResult": True,
            "toolResultContains": "5",
        },
        "response": {"content": "5 cups."},
    },
    # the call first, then text, in one answer
    {
        "match": {"userMessage": "saucers", "hasToolResult": False},
        "response": {
            "blocks": [
                {"type": "toolCall", "name": "stock", "arguments": {"item": "saucer"}},
                {"type": "text", "text": "Checking the saucers."},
            ]
        },
    },
    {
        "match": {"userMessage": "saucers", "hasToolResult": True, "toolResultContains": "0"},
        "response": {"content": "No saucers."},
    },
    # a stream cut off after two chunks
    {
        "match": {"userMessage": "tell me a long story"},
        "response": {"content": "Once upon a time there was a mug that nobody ever used."},
        "truncateAfterChunks": 2,
    },
    # an answer cut off at the token limit; one filtered
    {
        "match": {"userMessage": "write me an essay"},
        "response": {"content": "It was a dark and", "finishReason": "length"},
    },
    {
        "match": {"userMessage": "say something rude"},
        "response": {"content": "", "finishReason": "content_filter"},
    },
    {  # Anthropic's own word for it (aimock passes a finishReason it does not map as is)
        "match": {"userMessage": "say something cruel"},
        "response": {"content": "", "finishReason": "refusal"},
    },
    # structured output: the JSON text
    {
        "match": {"userMessage": "mug count as JSON"},
        "response": {"content": {"item": "mug", "count": 3}},
    },
    # the endpoint is overloaded
    {
        "match": {"userMessage": "are you busy"},
        "response": {
            "error": {"message": "Overloaded, try later", "type": "overloaded_error"},
            "status": 529,
        },
    },
]

STOCK = {"mug": 3, "cup": 5, "plate": 7}


# -- aimock, once per module ----------------------------------------------------------------


def _binary() -> str:
    given = os.environ.get(BIN_ENV)
    if given:  # asked for: a binary that is not there is a failure, not a skip
        if not os.access(given, os.X_OK):
            pytest.fail(f"{BIN_ENV}={given} is not an executable file")
        return given
    if shutil.which("node") is None:
        pytest.skip("node is not installed: aimock is an npm package")
    found = shutil.which("llmock")
    if found is None:
        pytest.skip(
            f"aimock is not installed: npm install --prefix DIR @copilotkit/aimock@{AIMOCK_VERSION}"
            f" and set {BIN_ENV}=DIR/node_modules/.bin/llmock (.ci/run does)"
        )
    return found


@pytest.fixture(scope="module")
def aimock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """aimock's root URL (`http://127.0.0.1:PORT`), serving FIXTURES in strict mode."""
    binary = _binary()
    fixtures = tmp_path_factory.mktemp("aimock") / "fixtures.json"
    fixtures.write_text(json.dumps({"fixtures": FIXTURES}), encoding="utf-8")
    command = [binary, "-p", "0", "-h", "127.0.0.1", "-f", str(fixtures), "--strict"]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    try:
        url = _listening(child)
        drain = threading.Thread(target=_drain, args=(child,), daemon=True)
        drain.start()
        yield url
    finally:
        child.kill()
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()


def _listening(child: subprocess.Popen[str]) -> str:
    """The URL aimock says it listens on (it picks the free port given `-p 0`)."""
    seen: list[str] = []
    found: list[str] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            seen.append(line.rstrip())
            if "listening on http://127.0.0.1:" in line:
                found.append(line.rsplit(" ", 1)[-1].strip())
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    if not found:
        pytest.fail(f"aimock did not start (exit code {child.poll()}): {seen[-10:]}")
    return found[0]


def _drain(child: subprocess.Popen[str]) -> None:
    """Keep reading aimock's log so that a full pipe never blocks it."""
    assert child.stdout is not None
    for _ in child.stdout:
        pass


# -- clients that keep what they send --------------------------------------------------------


class Wire:
    """The JSON bodies sent to aimock by one test's clients, and aimock's journal of them."""

    def __init__(self, url: str, test_id: str) -> None:
        self.url = url
        self.test_id = test_id
        self.sent: list[Json] = []

    def record(self, request: Any) -> None:
        """An event hook of the SDK's HTTP client (httpx, or httpx2 in newer SDKs)."""
        if request.method == "POST":
            self.sent.append(json.loads(request.content))

    async def arecord(self, request: Any) -> None:
        self.record(request)

    def options(self, api: str, is_async: bool) -> Json:
        sdk: Any = anthropic if api == "anthropic" else openai
        hooks = {"request": [self.arecord if is_async else self.record]}
        kind = sdk.DefaultAsyncHttpxClient if is_async else sdk.DefaultHttpxClient
        return {
            "base_url": f"{self.url}/v1" if api != "anthropic" else self.url,
            "api_key": "sk-aimock-test",
            "max_retries": 0,
            "default_headers": {"X-Test-Id": self.test_id},
            "http_client": kind(event_hooks=hooks, timeout=10),
        }

    def client(self, api: str) -> Any:
        kind = anthropic.Anthropic if api == "anthropic" else openai.OpenAI
        return kind(**self.options(api, False))

    def async_client(self, api: str) -> Any:
        kind = anthropic.AsyncAnthropic if api == "anthropic" else openai.AsyncOpenAI
        return kind(**self.options(api, True))

    def journal(self) -> list[Json]:
        """aimock's record of this test's requests (as aimock translated them), in order."""
        query = urllib.parse.urlencode({"testId": self.test_id})
        with urllib.request.urlopen(f"{self.url}/__aimock/journal?{query}", timeout=10) as got:
            entries: list[Json] = json.load(got)
        return sorted(entries, key=lambda e: e["timestamp"])


@pytest.fixture
def wire(aimock: str, request: pytest.FixtureRequest) -> Wire:
    return Wire(aimock, request.node.nodeid)


@pytest.fixture
def shop() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    def stock(item: str) -> int:
        """How many of an item are in stock."""
        return STOCK.get(item, 0)

    return reg


APIS = ["chat", "responses", "anthropic"]
DIALECT = {"chat": "tools", "responses": "responses", "anthropic": "anthropic"}
MODEL = {"chat": OPENAI_MODEL, "responses": OPENAI_MODEL, "anthropic": CLAUDE}
# Each round's finish reason, as toolreg reads it: a Responses API response has a status
# ("completed") and no reason of its own for stopping at a call.
CALLED_THEN_ANSWERED = {
    "chat": ["tool_calls", "stop"],
    "responses": ["stop", "stop"],
    "anthropic": ["tool_calls", "stop"],  # tool_use, then end_turn
}


def _turn(
    wire: Wire,
    api: str,
    question: str,
    registry: ToolRegistry,
    *,
    is_async: bool = False,
    **options: Any,
) -> tuple[Any, list[str | None]]:
    """One `send` of `question` over `api`: the reply and each round's finish reason."""
    finished: list[str | None] = []

    def seen(event: ModelResponseEvent) -> None:
        finished.append(event.finish_reason)

    kw = {"registry": registry, "dialect": DIALECT[api], "hooks": Hooks(after_model_call=seen)}
    if not is_async:
        with wire.client(api) as client:
            chat = Conversation(client, MODEL[api], **kw, **options)
            return chat.send(question), finished

    async def main() -> Any:
        async with wire.async_client(api) as client:
            chat = AsyncConversation(client, MODEL[api], **kw, **options)
            return await chat.send(question)

    return asyncio.run(main()), finished


def _problems(api: str, body: Json) -> list[str]:
    """What the API itself would refuse in this request's history."""
    if api == "anthropic":
        return messages_problems(body["messages"])
    return history_problems(body["messages"] if api == "chat" else body["input"])


def _answered(api: str, body: Json) -> tuple[list[str], list[tuple[str, Any]]]:
    """The ids of the calls echoed back in a request, and `(id, result)` of the answers,
    each read the way its API writes them."""
    if api == "chat":
        calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
        results = [
            (m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"
        ]
        return calls, results
    if api == "responses":
        items = body["input"]
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        outs = [
            (i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"
        ]
        return calls, outs
    blocks = [
        (m["role"], b)
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    ]
    calls = [b["id"] for role, b in blocks if role == "assistant" and b["type"] == "tool_use"]
    results = [
        (b["tool_use_id"], b["content"])
        for role, b in blocks
        if role == "user" and b["type"] == "tool_result"
    ]
    return calls, results


MODES = [
    pytest.param(False, False, id="sync"),
    pytest.param(False, True, id="sync-stream"),
    pytest.param(True, False, id="async"),
    pytest.param(True, True, id="async-stream"),
]


# -- the round trip: two calls at once, then the answer ----------------------------------------


@pytest.mark.parametrize(("is_async", "stream"), MODES)
@pytest.mark.parametrize("api", APIS)
def test_parallel_calls_run_and_the_answer_follows(
    wire: Wire, shop: ToolRegistry, api: str, is_async: bool, stream: bool
) -> None:
    pieces: list[str] = []
    on_text = pieces.append if stream else None
    reply, finished = _turn(
        wire, api, "How many mugs and cups?", shop, is_async=is_async, stream=stream,
        on_text=on_text,
    )  # fmt: skip

    assert reply.text == "There are 3 mugs and 5 cups in stock, sir."
    assert (reply.stop_reason, reply.rounds) == ("answer", 2)
    assert finished == CALLED_THEN_ANSWERED[api]
    assert [(r.tool_name, r.arguments, r.ok, r.content) for r in reply.tool_results] == [
        ("stock", {"item": "mug"}, True, "3"),
        ("stock", {"item": "cup"}, True, "5"),
    ]
    if api == "chat":  # aimock counts tokens from lengths; also streamed (include_usage)
        assert reply.usage.input_tokens > 0
        assert reply.usage.output_tokens > 0
    else:  # Responses and Messages: aimock answers zeros unless a fixture gives usage
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == (0, 0)
    if stream:
        assert len(pieces) > 1  # aimock streams 20 characters a chunk
        assert "".join(pieces) == reply.text

    first, second = wire.sent
    assert (first.get("stream") is True) == stream
    assert _problems(api, second) == []
    calls, results = _answered(api, second)
    ids = [r.call_id for r in reply.tool_results]
    assert calls == ids  # the ids aimock made up, echoed back
    assert len(set(ids)) == 2
    assert results == [(ids[0], "3"), (ids[1], "5")]

    journal = wire.journal()
    assert [e["response"]["status"] for e in journal] == [200, 200]
    understood = [m for m in journal[1]["body"]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in understood] == results


def test_chat_results_are_tool_messages_after_the_calls(wire: Wire, shop: ToolRegistry) -> None:
    _turn(wire, "chat", "How many mugs and cups?", shop)
    messages = wire.sent[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    calls = messages[1]["tool_calls"]
    assert [(c["type"], c["function"]["name"]) for c in calls] == [("function", "stock")] * 2
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"item": "mug"},
        {"item": "cup"},
    ]


def test_responses_results_are_function_call_outputs(wire: Wire, shop: ToolRegistry) -> None:
    reply, _ = _turn(wire, "responses", "How many mugs and cups?", shop)
    first, second = wire.sent
    assert first["store"] is False  # the whole input every time: aimock keeps no state
    items = second["input"]
    assert [i.get("type", i.get("role")) for i in items] == [
        "user",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert [json.loads(i["arguments"]) for i in items[1:3]] == [{"item": "mug"}, {"item": "cup"}]
    assert reply.messages[-1]["type"] == "message"  # the answer, ready to send again


def test_anthropic_results_are_one_user_message_of_tool_results(
    wire: Wire, shop: ToolRegistry
) -> None:
    reply, _ = _turn(wire, "anthropic", "How many mugs and cups?", shop)
    first, second = wire.sent
    assert first["max_tokens"] == 4096
    assert first["tool_choice"] == {"type": "auto"}
    messages = second["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use", "tool_use"]
    assert [b["input"] for b in messages[1]["content"]] == [{"item": "mug"}, {"item": "cup"}]
    results = messages[2]["content"]
    assert [(b["type"], b["is_error"]) for b in results] == [("tool_result", False)] * 2
    assert reply.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "There are 3 mugs and 5 cups in stock, sir."}],
    }


# -- text beside a call; the next question in the same conversation ---------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_text_before_a_call_stays_in_the_history(
    wire: Wire, shop: ToolRegistry, api: str, stream: bool
) -> None:
    reply, finished = _turn(wire, api, "Any bowls?", shop, stream=stream)
    assert (reply.text, reply.stop_reason) == ("No bowls left.", "answer")
    assert finished == CALLED_THEN_ANSWERED[api]
    second = wire.sent[1]
    assert _problems(api, second) == []
    if api == "chat":
        took = second["messages"][1]
        assert (took["content"], len(took["tool_calls"])) == ("Let me look.", 1)
    elif api == "responses":
        kinds = [(i.get("type"), i.get("role")) for i in second["input"]]
        assert kinds[1:] == [
            ("message", "assistant"),
            ("function_call", None),
            ("function_call_output", None),
        ]
        assert second["input"][1]["content"][0]["text"] == "Let me look."
    else:
        took = second["messages"][1]["content"]
        assert [b["type"] for b in took] == ["text", "tool_use"]
        assert took[0]["text"] == "Let me look."


@pytest.mark.parametrize("api", APIS)
def test_a_second_question_resends_the_first_turn(wire: Wire, shop: ToolRegistry, api: str) -> None:
    with wire.client(api) as client:
        chat = Conversation(client, MODEL[api], registry=shop, dialect=DIALECT[api])
        first = chat.send("How many mugs and cups?")
        second = chat.send("And any bowls?")
    assert first.text == "There are 3 mugs and 5 cups in stock, sir."
    assert second.text == "No bowls left."
    assert len(wire.sent) == 4
    last = wire.sent[3]
    assert _problems(api, last) == []
    calls, results = _answered(api, last)
    assert len(calls) == len(results) == 3  # both turns' calls, each answered
    assert [r.content for r in second.tool_results] == ["0"]


# -- what the model gets wrong, and what the endpoint refuses ---------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_an_unknown_tool_is_answered_with_an_error(
    wire: Wire, shop: ToolRegistry, api: str, stream: bool
) -> None:
    reply, _ = _turn(wire, api, "Please wipe the disk", shop, stream=stream)
    assert (reply.text, reply.stop_reason) == ("I cannot do that.", "answer")
    (result,) = reply.tool_results
    assert not result.ok
    assert "rm_rf" in result.content
    assert "Traceback" not in result.content
    if api == "anthropic":
        block = wire.sent[1]["messages"][2]["content"][0]
        assert (block["type"], block["is_error"]) == ("tool_result", True)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_an_overloaded_endpoint_is_a_conversation_error(
    wire: Wire, shop: ToolRegistry, api: str, stream: bool
) -> None:
    with wire.client(api) as client:
        chat = Conversation(client, MODEL[api], registry=shop, dialect=DIALECT[api], stream=stream)
        with pytest.raises(ConversationError) as caught:
            chat.send("Hello, are you busy?")
    assert caught.value.status_code == 529
    assert "Overloaded, try later" in str(caught.value)
    assert "sk-aimock-test" not in str(caught.value)
    assert chat.messages == []


# -- Anthropic's extended thinking -------------------------------------------------------------


@pytest.mark.parametrize(("is_async", "stream"), MODES)
def test_thinking_goes_back_first_with_its_signature(
    wire: Wire, shop: ToolRegistry, is_async: bool, stream: bool
) -> None:
    """With `thinking` on, aimock (like Anthropic) refuses a continued tool-use turn that
    does not start with its thinking block, signed; toolreg sends it back as received."""
    thinking = {"type": "enabled", "budget_tokens": 1024}
    reply, _ = _turn(
        wire, "anthropic", "Please think about plates", shop, is_async=is_async, stream=stream,
        thinking=thinking,
    )  # fmt: skip
    assert (reply.text, reply.stop_reason) == ("7 plates.", "answer")
    first, second = wire.sent
    assert first["thinking"] == thinking
    took = second["messages"][1]["content"]
    assert [b["type"] for b in took] == ["thinking", "tool_use"]
    assert took[0]["thinking"] == "The user wants the plate count; the stock tool has it."
    assert took[0]["signature"] == "aimock-placeholder-signature"
    # the answer keeps no thinking (only a call's turn needs it back)
    assert reply.messages[-1]["content"] == [{"type": "text", "text": "7 plates."}]


# -- approvals across export and resume; structured output ---------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_deferred_call_resumes_from_the_exported_state(wire: Wire, api: str) -> None:
    shop = ToolRegistry()

    @shop.register_tool(requires_confirmation=True)
    def stock(item: str) -> int:
        """How many of an item are in stock (asks the user first)."""
        return STOCK.get(item, 0)

    with wire.client(api) as client:
        chat = Conversation(
            client, MODEL[api], registry=shop, dialect=DIALECT[api], confirm="defer"
        )
        paused = chat.send("How many mugs and cups?")
        assert paused.stop_reason == "approval_required"
        assert [p.arguments for p in paused.pending] == [{"item": "mug"}, {"item": "cup"}]
        saved = json.loads(json.dumps(chat.export_state()))
        again = Conversation.from_state(saved, client, registry=shop)
        reply = again.resume({p.call_id: True for p in paused.pending})
    assert (reply.text, reply.stop_reason) == (
        "There are 3 mugs and 5 cups in stock, sir.",
        "answer",
    )
    assert len(wire.sent) == 2
    assert _problems(api, wire.sent[1]) == []
    calls, results = _answered(api, wire.sent[1])
    assert results == [(calls[0], "3"), (calls[1], "5")]


@dataclass
class Count:
    item: str
    count: int


@pytest.mark.parametrize("api", APIS)
def test_structured_output(wire: Wire, shop: ToolRegistry, api: str) -> None:
    with wire.client(api) as client:
        chat = Conversation(client, MODEL[api], registry=shop, dialect=DIALECT[api])
        reply = chat.send("The mug count as JSON", output_type=Count)
    assert reply.output == Count("mug", 3)
    assert reply.stop_reason == "answer"
    (sent,) = wire.sent
    if api == "chat":
        fmt = sent["response_format"]
        assert (fmt["type"], fmt["json_schema"]["name"]) == ("json_schema", "Count")
        schema = fmt["json_schema"]["schema"]
    elif api == "responses":
        fmt = sent["text"]["format"]
        assert (fmt["type"], fmt["name"]) == ("json_schema", "Count")
        schema = fmt["schema"]
    else:
        fmt = sent["output_config"]["format"]
        assert fmt["type"] == "json_schema"
        schema = fmt["schema"]
    assert schema["required"] == ["item", "count"]


def test_server_state_needs_an_endpoint_that_keeps_responses(
    wire: Wire, shop: ToolRegistry
) -> None:
    """`state="server"` sends only the new items after `previous_response_id`; aimock keeps
    no response, so the second request has no question to match and is refused (strict)."""
    with wire.client("responses") as client:
        chat = Conversation(
            client, OPENAI_MODEL, registry=shop, dialect="responses", state="server"
        )
        with pytest.raises(ConversationError) as caught:
            chat.send("How many mugs and cups?")
    assert caught.value.status_code == 503
    first, second = wire.sent
    assert first.get("store") is not False
    assert second["previous_response_id"]
    assert {i["type"] for i in second["input"]} == {"function_call_output"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_redacted_thinking_goes_back_first_with_its_data(
    wire: Wire, shop: ToolRegistry, stream: bool
) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    reply, _ = _turn(
        wire, "anthropic", "Please think hard about cups", shop, stream=stream, thinking=thinking
    )
    assert (reply.text, reply.stop_reason) == ("5 cups.", "answer")
    took = wire.sent[1]["messages"][1]["content"]
    assert [b["type"] for b in took] == ["redacted_thinking", "thinking", "tool_use"]
    assert took[0]["data"] == "opaque-reasoning-1"
    assert (took[1]["thinking"], took[1]["signature"]) == ("Cups: ask the stock tool.", "sig-cups")


# -- a call before text in one answer; a stream cut off ------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_call_before_text_in_one_answer(
    wire: Wire, shop: ToolRegistry, api: str, stream: bool
) -> None:
    pieces: list[str] = []
    reply, _ = _turn(
        wire, api, "Any saucers?", shop, stream=stream, on_text=pieces.append if stream else None
    )
    assert (reply.text, reply.stop_reason) == ("No saucers.", "answer")
    assert [(r.arguments, r.content) for r in reply.tool_results] == [({"item": "saucer"}, "0")]
    second = wire.sent[1]
    assert _problems(api, second) == []
    if api == "anthropic":  # the blocks in the order the model gave them
        took = second["messages"][1]["content"]
        assert [b["type"] for b in took] == ["tool_use", "text"]
        assert took[1]["text"] == "Checking the saucers."
    elif api == "chat":
        took = second["messages"][1]
        assert (took["content"], len(took["tool_calls"])) == ("Checking the saucers.", 1)
    else:
        kinds = [i.get("type") for i in second["input"][1:]]
        assert kinds == ["function_call", "message", "function_call_output"]
    if stream:
        assert "".join(pieces) == "Checking the saucers.No saucers."


@pytest.mark.parametrize("api", APIS)
def test_a_stream_cut_off_is_a_conversation_error(wire: Wire, shop: ToolRegistry, api: str) -> None:
    with wire.client(api) as client:
        chat = Conversation(client, MODEL[api], registry=shop, dialect=DIALECT[api], stream=True)
        with pytest.raises(ConversationError):
            chat.send("Please tell me a long story")
    assert chat.messages == []
    (entry,) = wire.journal()
    assert entry["response"].get("interrupted") is True


# -- reasoning over the OpenAI APIs ------------------------------------------------------------

REASONER = "gpt-5"  # a reasoning-capable name: aimock emits the fixture's reasoning for it
REASONING = "The user wants the plate count; the stock tool has it."


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_responses_reasoning_items_go_back_with_their_encrypted_content(
    wire: Wire, shop: ToolRegistry, stream: bool
) -> None:
    """With `store=False` the API keeps nothing: the reasoning item (with its
    `encrypted_content`) must go back before the call it led to."""
    with wire.client("responses") as client:
        chat = Conversation(client, REASONER, registry=shop, dialect="responses", stream=stream)
        reply = chat.send("Please think about plates")
    assert (reply.text, reply.stop_reason) == ("7 plates.", "answer")
    items = wire.sent[1]["input"]
    assert [i.get("type", i.get("role")) for i in items] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert items[1]["summary"][0]["text"] == REASONING
    assert items[1]["encrypted_content"]


def _chat_reasoning_sent(wire: Wire, shop: ToolRegistry, stream: bool) -> Json:
    with wire.client("chat") as client:
        chat = Conversation(client, REASONER, registry=shop, dialect="tools", stream=stream)
        reply = chat.send("Please think about plates")
    assert reply.text == "7 plates."
    took: Json = wire.sent[1]["messages"][1]
    return took


def test_chat_reasoning_content_goes_back_as_received(wire: Wire, shop: ToolRegistry) -> None:
    """aimock, like DeepSeek and vLLM, answers chat completions with `reasoning_content`
    beside the calls; a plain answer goes back with it, as received."""
    took = _chat_reasoning_sent(wire, shop, stream=False)
    assert took["reasoning_content"] == REASONING


def test_chat_reasoning_content_goes_back_when_streamed_too(wire: Wire, shop: ToolRegistry) -> None:
    """The stream assembler keeps the `reasoning_content` deltas: the history does not
    depend on `stream=`."""
    took = _chat_reasoning_sent(wire, shop, stream=True)
    assert took.get("reasoning_content") == REASONING


# -- answers that stop early -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_an_answer_cut_off_at_the_token_limit(
    wire: Wire, shop: ToolRegistry, api: str, stream: bool
) -> None:
    reply, finished = _turn(wire, api, "Please write me an essay", shop, stream=stream)
    assert (reply.text, reply.stop_reason, reply.rounds) == ("It was a dark and", "length", 1)
    assert finished == ["length"]  # max_tokens (Messages), incomplete (Responses)


@pytest.mark.parametrize(
    ("api", "question"),
    [("chat", "Please say something rude"), ("anthropic", "Please say something cruel")],
)
def test_a_filtered_answer(wire: Wire, shop: ToolRegistry, api: str, question: str) -> None:
    """finish_reason "content_filter" (chat completions), stop_reason "refusal" (Messages)."""
    reply, _ = _turn(wire, api, question, shop)
    assert (reply.text, reply.stop_reason) == ("", "content_filter")


def test_a_filtered_responses_answer_is_an_error_with_aimock(
    wire: Wire, shop: ToolRegistry
) -> None:
    """aimock answers `status: "failed"` (see the module docstring): an error to toolreg."""
    with pytest.raises(ConversationError, match="failed"):
        _turn(wire, "responses", "Please say something rude", shop)
