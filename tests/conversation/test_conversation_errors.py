"""Endpoint failures: ConversationError with the status and message; the history stays valid."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

from toolreg import Conversation, ConversationError, ToolRegistry
from toolreg.testing import ScriptedServer, error, raw, text, tool_call

MODEL = "scripted-model"


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    return reg


@pytest.mark.parametrize(("status", "message"), [(500, "The model crashed"), (400, "Bad 'tools'")])
def test_http_errors_raise_with_status_and_message(
    registry: ToolRegistry, status: int, message: str
) -> None:
    with ScriptedServer([error(status, message)]) as server:
        conv = Conversation(server.client(), MODEL, registry=registry, system="S")
        with pytest.raises(ConversationError) as caught:
            conv.send("hi")
        assert len(server.requests) == 1  # no retry layer of toolreg's own
    assert caught.value.status_code == status
    assert message in str(caught.value)
    assert str(status) in str(caught.value)
    assert isinstance(caught.value.__cause__, openai.APIStatusError)
    assert conv.messages == [{"role": "system", "content": "S"}]


def test_a_failure_mid_loop_keeps_the_call_that_ran_and_a_valid_history(
    registry: ToolRegistry,
) -> None:
    script = [text("Hello."), tool_call("get_weather", city="Paris"), error(503, "Overloaded")]
    with ScriptedServer(script) as server:
        conv = Conversation(server.client(), MODEL, registry=registry)
        conv.send("hi")
        before = list(conv.messages)
        with pytest.raises(ConversationError, match="Overloaded") as caught:
            conv.send("Weather in Paris?")
        assert caught.value.status_code == 503
        # the call ran before the endpoint failed: the model will read its result
        kept = conv.messages
        assert [m["role"] for m in kept] == [
            *(m["role"] for m in before),
            "user",
            "assistant",
            "tool",
        ]
        assert [r.outcome for r in conv.turn_results] == ["completed"]

        server.add(text("Sunny."))
        reply = conv.send("And now?")
        retried = server.requests[3]
    assert retried["messages"] == [*kept, {"role": "user", "content": "And now?"}]
    assert reply.text == "Sunny."


def test_streamed_request_error(registry: ToolRegistry) -> None:
    with ScriptedServer([error(429, "Slow down", code="rate_limit_exceeded")]) as server:
        conv = Conversation(server.client(), MODEL, registry=registry, stream=True)
        with pytest.raises(ConversationError, match="Slow down") as caught:
            conv.send("hi")
    assert caught.value.status_code == 429


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_connection_refused(registry: ToolRegistry) -> None:
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="test", max_retries=0
    )
    with client:
        conv = Conversation(client, MODEL, registry=registry)
        with pytest.raises(ConversationError, match="APIConnectionError") as caught:
            conv.send("hi")
    assert caught.value.status_code is None
    assert conv.messages == []


# -- malformed answers, from a server that speaks no valid OpenAI ------------------------------


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
def garbage() -> Iterator[tuple[openai.OpenAI, list[tuple[str, bytes]]]]:
    answers: list[tuple[str, bytes]] = []
    handler = type("Handler", (_Garbage,), {"answers": answers})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        with openai.OpenAI(base_url=url, api_key="test", max_retries=0) as client:
            yield client, answers
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


JSON = "application/json"
SSE = "text/event-stream"


@pytest.mark.parametrize(
    ("stream", "content_type", "body", "problem"),
    [
        (False, JSON, b"this is not json", "JSONDecodeError"),
        (False, "text/plain", b"this is not json", "without any choices"),
        (False, JSON, b'{"id": "x", "object": "chat.completion"}', "without any choices"),
        (False, JSON, b'{"choices": [{"index": 0}]}', "without a message"),
        (False, JSON, b"[1, 2]", "without any choices"),
        (True, SSE, b"data: {nope\n\n", "JSONDecodeError"),
        (True, SSE, b"", "no chunks"),
        (True, SSE, b"data: [DONE]\n\n", "no chunks"),
    ],
)
def test_malformed_answers_raise_conversation_error(
    garbage: tuple[openai.OpenAI, list[tuple[str, bytes]]],
    registry: ToolRegistry,
    stream: bool,
    content_type: str,
    body: bytes,
    problem: str,
) -> None:
    client, answers = garbage
    answers.append((content_type, body))
    conv = Conversation(client, MODEL, registry=registry, stream=stream)
    with pytest.raises(ConversationError, match=problem):
        conv.send("hi")
    assert conv.messages == []


@pytest.mark.filterwarnings("ignore::UserWarning")  # the SDK warns while it parses the junk
def test_a_malformed_tool_call_is_a_conversation_error(adder: ToolRegistry) -> None:
    turn = raw(
        {"role": "assistant", "content": None, "tool_calls": ["x"]}, finish_reason="tool_calls"
    )
    with ScriptedServer([turn]) as server:
        conversation = Conversation(server.client(), "m", registry=adder)
        with pytest.raises(ConversationError, match="tool call that is not an object"):
            conversation.send("go")
        assert conversation.messages == []


def test_programming_errors_are_not_disguised(registry: ToolRegistry) -> None:
    """An option the SDK's create method does not take is refused when it is given (a
    UsageError is a TypeError too), never sent, never taken for an endpoint's failure."""
    with ScriptedServer([]) as server:
        with pytest.raises(TypeError, match="not_an_option"):
            Conversation(server.client(), MODEL, registry=registry, not_an_option=1)
        assert server.requests == []


def _cut_off_call() -> tuple[ToolRegistry, list[Any]]:
    """A weather tool, and a model whose first call is cut off mid-arguments (a small local
    model at max_tokens), then retries: ScriptedServer, like llama.cpp's server, refuses a
    history that echoes the broken arguments as they are."""
    from toolreg.testing import call, tool_calls

    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    script = [
        tool_calls(call("get_weather", '{"city": "Par'), call("get_weather", city="Rome")),
        tool_call("get_weather", city="Paris"),
        text("Sunny in both."),
    ]
    return reg, script


def test_broken_call_arguments_are_echoed_parseable_and_the_model_is_told() -> None:
    """The loop echoes `{}` for broken arguments and the observation says what was wrong,
    so the model retries."""
    reg, script = _cut_off_call()
    with ScriptedServer(script) as server:
        reply = Conversation(server.client(), "m", registry=reg).send("Paris and Rome?")
        second = server.requests[1]["messages"]
    assert reply.text == "Sunny in both."
    echoed = second[-3]["tool_calls"]
    assert [c["function"]["arguments"] for c in echoed] == ["{}", '{"city": "Rome"}']
    assert second[-2]["content"].startswith("Arguments are not valid JSON")
    assert [r.error_kind for r in reply.tool_results] == ["invalid_json", None, None]
    assert server.errors == []


def test_a_hand_written_chat_loop_echoes_with_openai_echo() -> None:
    """`formats.openai.echo` turns the SDK's message into the assistant message a request
    takes; with the observations after it, a hand-written loop on the SDK runs to the
    answer, broken arguments going back as `{}` like the loop's."""
    from openai.types.chat import ChatCompletionMessageParam

    from toolreg.formats import openai as openai_format

    reg, script = _cut_off_call()
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Paris, Rome?"}]
    with ScriptedServer(script) as server:
        client = server.client()
        completion = client.chat.completions.create(
            model="m", messages=messages, tools=reg.get_tools()
        )
        while calls := openai_format.parse_calls(completion):
            messages.append(openai_format.echo(completion))
            messages.extend(openai_format.observation(r) for r in reg.dispatch_many(calls))
            completion = client.chat.completions.create(
                model="m", messages=messages, tools=reg.get_tools()
            )
        sent = server.requests[1]["messages"]
    assert completion.choices[0].message.content == "Sunny in both."
    assert server.errors == []
    first = sent[1]
    assert first["role"] == "assistant"
    assert first["content"] is None
    assert [c["function"]["arguments"] for c in first["tool_calls"]] == ["{}", '{"city": "Rome"}']
    assert [c["id"] for c in first["tool_calls"]] == [m["tool_call_id"] for m in sent[2:4]]
    assert sent[2]["content"].startswith("Arguments are not valid JSON")
    assert set(first) == {"role", "content", "tool_calls"}  # nothing only a response has


# -- answers of the wrong shape ---------------------------------------------------------------


class _Junk(BaseHTTPRequestHandler):
    body: bytes = b""
    stream = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        kind = "text/event-stream" if self.stream else "application/json"
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


def _answer(body: bytes, *, stream: bool = False) -> Iterator[str]:
    handler = type("Handler", (_Junk,), {"body": body, "stream": stream})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _completion(message: dict[str, Any], usage: Any = None) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def _send(url: str, *, stream: bool = False) -> Any:
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
    try:
        return Conversation(client, "m", stream=stream, registry=ToolRegistry()).send("hi")
    finally:
        client.close()


@pytest.mark.parametrize(
    ("message", "usage", "problem"),
    [
        ({"role": "assistant", "content": 5}, None, "content that is not text"),
        ({"role": "assistant", "content": {"a": 1}}, None, "content that is not text"),
        ({"role": "assistant", "content": "hi"}, "lots", "usage that is not an object"),
        ({"role": "assistant", "content": "hi"}, {"prompt_tokens": "9"}, "not a token count"),
    ],
)
def test_a_malformed_answer_is_a_conversation_error(
    message: dict[str, Any], usage: Any, problem: str
) -> None:
    for url in _answer(_completion(message, usage)):
        with pytest.raises(ConversationError, match=problem):
            _send(url)


def test_content_given_as_parts_is_read_as_text() -> None:
    parts = [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world."}]
    for url in _answer(_completion({"role": "assistant", "content": parts})):
        reply = _send(url)
    assert reply.text == "Hello, world."
    assert isinstance(reply.text, str)


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": [{"index": 0, "delta": {"content": 5}}]},
        {"choices": [{"index": 0, "delta": "nope"}]},
        {"choices": ["nope"]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": 3}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": 7}}]}}]},
        {"choices": [], "usage": "lots"},
    ],
)
def test_a_malformed_stream_chunk_is_a_conversation_error(chunk: dict[str, Any]) -> None:
    frame = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", **chunk}
    body = f"data: {json.dumps(frame)}\n\ndata: [DONE]\n\n".encode()
    for url in _answer(body, stream=True):
        with pytest.raises(ConversationError):
            _send(url, stream=True)
