"""The Anthropic provider: the loop over the Messages API through the real `anthropic` SDK.

Every test talks to `ScriptedServer`'s `/v1/messages` over a real socket on 127.0.0.1,
which refuses (HTTP 400) a history whose `tool_use` blocks are not answered by the
`tool_result` blocks of the very next user message, like Anthropic does.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolreg
from toolreg import AsyncConversation, Conversation, ConversationError, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, call, error, raw, text, tool_call, tool_calls

MODEL = "claude-test"


@pytest.fixture
def shop() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    def stock(item: str) -> int:
        """How many of an item are in stock."""
        return {"mug": 3, "cup": 5}.get(item, 0)

    @reg.register_tool(destructive=True)
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        refunds.append(order)
        return f"refunded {amount} on {order}"

    refunds: list[str] = []
    reg.refunds = refunds  # type: ignore[attr-defined]
    return reg


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b["type"] == kind]


def test_a_plain_answer(shop: ToolRegistry) -> None:
    with ScriptedServer([text("Hello!", usage=(12, 3))]) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop, system="Be brief.")
        reply = chat.send("Hi")
        body = server.requests[0]
    assert (reply.text, reply.stop_reason, reply.rounds) == ("Hello!", "answer", 1)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 3)
    assert server.paths == ["/v1/messages"]
    assert body["system"] == "Be brief."  # not a message: the API takes it apart
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert body["max_tokens"] == 4096  # the API requires one
    assert body["tool_choice"] == {"type": "auto"}
    assert {t["name"] for t in body["tools"]} == {"stock", "refund"}
    assert "input_schema" in body["tools"][0]
    assert chat.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello!"}],
    }


def test_max_tokens_and_other_request_options_override(shop: ToolRegistry) -> None:
    with ScriptedServer([text("ok")]) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop, max_tokens=100)
        chat.send("Hi")
    assert server.requests[0]["max_tokens"] == 100


def test_parallel_calls_are_answered_in_one_user_message(shop: ToolRegistry) -> None:
    script = [
        tool_calls(
            call("stock", item="mug", id="toolu_a"), call("stock", item="cup", id="toolu_b")
        ),
        text("3 mugs and 5 cups."),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop)
        reply = chat.send("What is in stock?")
        second = server.requests[1]["messages"]
        server.assert_request(1, contains_tool_result="toolu_b", tool_result_contains="5")
    assert reply.text == "3 mugs and 5 cups."
    assert [r.content for r in reply.tool_results] == ["3", "5"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    uses, results = _blocks(second[1], "tool_use"), _blocks(second[2], "tool_result")
    assert [u["input"] for u in uses] == [{"item": "mug"}, {"item": "cup"}]
    assert [(r["tool_use_id"], r["content"], r["is_error"]) for r in results] == [
        ("toolu_a", "3", False),
        ("toolu_b", "5", False),
    ]


def test_a_call_with_text_keeps_both_in_the_history(shop: ToolRegistry) -> None:
    script = [tool_calls(call("stock", item="mug"), content="Let me look."), text("3.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop)
        chat.send("Mugs?")
        sent = server.requests[1]["messages"][1]
    assert [b["type"] for b in sent["content"]] == ["text", "tool_use"]


@pytest.mark.parametrize("streamed", [False, True])
def test_streaming_sends_text_deltas_and_assembles_calls(
    shop: ToolRegistry, streamed: bool
) -> None:
    pieces: list[str] = []
    script = [tool_call("stock", item="mug"), text("There are 3 mugs in stock, sir.")]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.anthropic_client(),
            MODEL,
            registry=shop,
            stream=streamed,
            on_text=pieces.append if streamed else None,
        )
        reply = chat.send("Mugs?")
        first = server.requests[0]
    assert reply.text == "There are 3 mugs in stock, sir."
    assert [(r.ok, r.content, r.arguments) for r in reply.tool_results] == [
        (True, "3", {"item": "mug"})
    ]
    assert reply.usage.input_tokens == 20
    assert reply.usage.output_tokens == 10
    assert (first.get("stream") is True) == streamed
    if streamed:
        assert len(pieces) > 1
        assert "".join(pieces) == reply.text


def test_async_conversation_streams_over_async_anthropic(shop: ToolRegistry) -> None:
    pieces: list[str] = []

    async def main(server: ScriptedServer) -> Any:
        async with server.async_anthropic_client() as client:
            chat = AsyncConversation(
                client, MODEL, registry=shop, stream=True, on_text=pieces.append
            )
            return await chat.send("Mugs?")

    script = [tool_calls(call("stock", item="mug"), call("stock", item="cup")), text("3 and 5")]
    with ScriptedServer(script) as server:
        reply = asyncio.run(main(server))
        server.assert_all_consumed()
    assert reply.text == "3 and 5"
    assert "".join(pieces) == "3 and 5"
    assert [r.content for r in reply.tool_results] == ["3", "5"]


def test_approval_pauses_exports_and_resumes_elsewhere(shop: ToolRegistry) -> None:
    script = [
        tool_calls(call("stock", item="mug"), call("refund", order="A-1", amount=5)),
        text("Refunded; 3 mugs left."),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop, confirm="defer")
        paused = chat.send("Refund A-1 and count mugs")
        assert paused.stop_reason == "approval_required"
        assert [p.tool_name for p in paused.pending] == ["refund"]
        assert shop.refunds == []  # type: ignore[attr-defined]
        saved = json.loads(json.dumps(chat.export_state()))
        assert saved["options"]["dialect"] == "anthropic"

        again = Conversation.from_state(saved, server.anthropic_client(), registry=shop)
        reply = again.resume({paused.pending[0].call_id: True})
        sent = server.requests[1]["messages"]
    assert reply.text == "Refunded; 3 mugs left."
    assert shop.refunds == ["A-1"]  # type: ignore[attr-defined]
    results = _blocks(sent[2], "tool_result")
    assert [r["content"] for r in results] == ["3", "refunded 5.0 on A-1"]  # one message
    with pytest.raises(toolreg.ConversationStateError, match="resumed already"):
        Conversation.from_state(saved, anthropic.Anthropic(api_key="x"), registry=shop).resume(
            {paused.pending[0].call_id: True}
        )


def test_a_declined_call_is_answered_as_an_error(shop: ToolRegistry) -> None:
    script = [tool_call("refund", order="A-2", amount=1), text("Not refunded.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop, confirm="defer")
        paused = chat.send("Refund A-2")
        chat.resume({paused.pending[0].call_id: "not today"})
        result = _blocks(server.requests[1]["messages"][2], "tool_result")[0]
    assert result["is_error"] is True
    assert "not today" in result["content"]
    assert shop.refunds == []  # type: ignore[attr-defined]


@dataclass
class Stock:
    item: str
    count: int


def test_structured_output_uses_the_native_json_output(shop: ToolRegistry) -> None:
    script = [text('{"item": "mug"}'), text('{"item": "mug", "count": 3}')]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop)
        reply = chat.send("How many mugs, as JSON?", output_type=Stock)
        first, second = server.requests
    assert reply.output == Stock("mug", 3)
    fmt = first["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["required"] == ["item", "count"]
    retry = second["messages"][-1]
    assert retry["role"] == "user"
    assert "count" in retry["content"]


def test_trimming_keeps_tool_use_and_tool_result_together(shop: ToolRegistry) -> None:
    script = [
        tool_call("stock", item="mug"),
        text("3 mugs."),
        tool_calls(call("stock", item="cup"), call("stock", item="bowl")),
        text("5 cups, no bowls."),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.anthropic_client(), MODEL, registry=shop, system="S", max_history_messages=4
        )
        chat.send("Mugs?")
        reply = chat.send("Cups and bowls?")
        server.assert_all_consumed()  # the server refused no history
        last = server.requests[-1]["messages"]
    assert reply.text == "5 cups, no bowls."
    assert server.requests[-1]["system"] == "S"
    assert last[0] == {"role": "user", "content": "Cups and bowls?"}
    assert [len(_blocks(m, "tool_use")) for m in last if m["role"] == "assistant"] == [2]
    assert len(_blocks(last[-1], "tool_result")) == 2


def test_telemetry_names_the_provider_anthropic(shop: ToolRegistry) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    toolreg.instrument(provider)
    try:
        with ScriptedServer([tool_call("stock", item="mug"), text("3")]) as server:
            Conversation(server.anthropic_client(), MODEL, registry=shop).send("Mugs?")
    finally:
        toolreg.uninstrument()
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name.startswith("chat ")]
    agent = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(chats) == 2
    assert len(agent) == 1
    for span in [*chats, *agent]:
        assert span.attributes is not None
        assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert chats[0].attributes is not None
    assert chats[0].attributes["gen_ai.response.id"] == "msg_scripted_1"
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 10


# -- the provider follows from the client -------------------------------------------------------


def test_an_anthropic_client_speaks_only_its_own_dialect(shop: ToolRegistry) -> None:
    client = anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1:9")
    with pytest.raises(UsageError, match="Messages API"):
        Conversation(client, MODEL, registry=shop, dialect="tools")
    assert Conversation(client, MODEL, registry=shop, dialect="anthropic").messages == []


def test_the_anthropic_dialect_needs_an_anthropic_client(shop: ToolRegistry) -> None:
    with ScriptedServer() as server, pytest.raises(UsageError, match=r"anthropic\.Anthropic"):
        Conversation(server.client(), MODEL, registry=shop, dialect="anthropic")


def test_state_server_is_refused(shop: ToolRegistry) -> None:
    client = anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1:9")
    with pytest.raises(UsageError, match='state="server"'):
        Conversation(client, MODEL, registry=shop, state="server")


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "stream"), [(400, False), (529, True), (500, False)])
def test_http_errors_are_conversation_errors_naming_the_endpoint(
    shop: ToolRegistry, status: int, stream: bool
) -> None:
    with ScriptedServer([error(status, "Overloaded, try later")]) as server:
        client = server.anthropic_client(api_key="sk-ant-secret-key")
        chat = Conversation(client, MODEL, registry=shop, stream=stream)
        with pytest.raises(ConversationError) as caught:
            chat.send("Hi")
        url = server.root_url
    err = caught.value
    assert err.status_code == status
    assert "Overloaded, try later" in str(err)
    assert err.endpoint == url
    assert "secret" not in str(err)
    assert "secret" not in repr(err)
    assert chat.messages == []


class _Garbage(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answers: list[tuple[str, bytes]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content_type, body = self.answers.pop(0)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def garbage() -> Iterator[tuple[anthropic.Anthropic, list[tuple[str, bytes]]]]:
    answers: list[tuple[str, bytes]] = []
    handler = type("Handler", (_Garbage,), {"answers": answers})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with anthropic.Anthropic(base_url=url, api_key="test", max_retries=0) as client:
            yield client, answers
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


JSON, SSE = "application/json", "text/event-stream"


@pytest.mark.parametrize(
    ("stream", "content_type", "body", "problem"),
    [
        (False, JSON, b"this is not json", "JSONDecodeError"),
        (False, JSON, b"[1, 2]", "not a message"),
        (False, JSON, b'{"type": "message", "content": "hi"}', "list of content blocks"),
        (False, JSON, b'{"type": "message", "content": [{"type": "text"}]}', "without text"),
        (True, SSE, b"event: message_start\ndata: {nope\n\n", "JSONDecodeError"),
        (True, SSE, b"", "no events"),
        (True, SSE, b'event: ping\ndata: {"type": "ping"}\n\n', "no events"),
        (
            True,
            SSE,
            b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m", '
            b'"type": "message", "role": "assistant", "content": [], "model": "m", '
            b'"usage": {"input_tokens": 1, "output_tokens": 1}}}\n\n',
            "before the message was complete",
        ),
        (
            True,
            SSE,
            b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
            b'"message": "Overloaded"}}\n\n',
            "Overloaded",
        ),
    ],
)
def test_malformed_answers_are_conversation_errors(
    garbage: tuple[anthropic.Anthropic, list[tuple[str, bytes]]],
    shop: ToolRegistry,
    stream: bool,
    content_type: str,
    body: bytes,
    problem: str,
) -> None:
    client, answers = garbage
    answers.append((content_type, body))
    chat = Conversation(client, MODEL, registry=shop, stream=stream)
    with pytest.raises(ConversationError, match=problem):
        chat.send("Hi")
    assert chat.messages == []


# -- hostile answers ------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_a_call_to_an_unknown_tool_is_answered_with_an_error(
    shop: ToolRegistry, streamed: bool
) -> None:
    script = [tool_call("rm_rf", path="/"), text("Sorry.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop, stream=streamed)
        reply = chat.send("Delete everything")
        result = _blocks(server.requests[1]["messages"][2], "tool_result")[0]
    assert reply.text == "Sorry."
    assert result["is_error"] is True
    assert "rm_rf" in result["content"]
    assert "Traceback" not in result["content"]


@pytest.mark.parametrize("streamed", [False, True])
def test_malformed_input_is_refused_and_echoed_as_an_object(
    shop: ToolRegistry, streamed: bool
) -> None:
    script = [tool_call("stock", '{"item": "mu'), text("Let me retry.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop, stream=streamed)
        reply = chat.send("Mugs?")
        sent = server.requests[1]["messages"]
    assert reply.text == "Let me retry."
    assert not reply.tool_results[0].ok
    assert _blocks(sent[1], "tool_use")[0]["input"] == {}  # the API takes objects only
    result = _blocks(sent[2], "tool_result")[0]
    assert result["is_error"] is True
    assert "JSON" in result["content"]


def test_hostile_content_blocks(shop: ToolRegistry) -> None:
    blocks = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_x", "name": "stock", "input": ["not", "an", "object"]},
        {"type": "tool_use", "id": "toolu_y", "name": 42, "input": {}},
    ]
    with ScriptedServer([raw({"role": "assistant", "content": blocks}), text("ok")]) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=shop)
        reply = chat.send("Mugs?")
        sent = server.requests[1]["messages"]
    assert reply.text == "ok"
    assert [r.ok for r in reply.tool_results] == [False, False]
    assert sent[1]["content"][0]["type"] == "thinking"  # as received
    assert [u["input"] for u in _blocks(sent[1], "tool_use")] == [{}, {}]
