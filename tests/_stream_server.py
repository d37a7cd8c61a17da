"""A loopback HTTP server that answers each model request with a scripted stream, verbatim.

`ScriptedServer` splits its answers the way real servers do; the stream tests need any
splitting at all: heads before arguments, calls interleaved, repeated heads, a stream that
stops before its terminal event. `StreamServer` answers each POST with the next scripted
answer: a list of SSE events (dicts, written as `data:` frames, with an `event:` line when
the API names its events) sent as they are, or a JSON body. One server serves many examples
(`script` replaces what is left); `requests` records the bodies, and a request whose history
OpenAI or Anthropic would refuse (a call answered twice, an id they do not take) is answered
with HTTP 400, as they do.

Builders of the events of each API: `chat_chunk`, `chat_text`; `responses_text`;
`anthropic_text`; `frames` writes a list of events as SSE frames. A `threading.Event` in a
stream holds it there until the event is set (at most `HOLD` seconds): a test holds a stream
until a tool has started.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolreg.testing.inspection import history_problems, messages_problems

Json = dict[str, Any]
Answer = list[bytes | threading.Event] | Json
HOLD = 5.0

_ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OPENAI_ID = re.compile(r"[\x21-\x7e]{1,40}")  # OpenAI takes any text up to 40 characters


def frames(events: Iterable[Json], *, named: bool = False, done: bool = False) -> list[bytes]:
    """SSE frames of `events` (`named`: with the `event: <type>` line the Responses and
    Messages APIs send; `done`: chat's closing `data: [DONE]`)."""
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
    if done:
        out.append(b"data: [DONE]\n\n")
    return out


def chat_chunk(delta: Json | None = None, finish: str | None = None) -> Json:
    """One `chat.completion.chunk` of choice 0."""
    choice = {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "stream-model",
        "choices": [choice],
    }


def chat_text(text: str) -> list[bytes]:
    return frames(
        [chat_chunk({"role": "assistant", "content": text}), chat_chunk({}, "stop")], done=True
    )


def response_shell(status: str, output: list[Json]) -> Json:
    return {
        "id": "resp_stream",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": "stream-model",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }


def responses_text(text: str) -> list[bytes]:
    item = {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    events = [
        {"type": "response.created", "response": response_shell("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": text,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response_shell("completed", [item])},
    ]
    return frames(
        [{**e, "sequence_number": n} for n, e in enumerate(events)], named=True, done=False
    )


def message_start() -> Json:
    message = {
        "id": "msg_stream",
        "type": "message",
        "role": "assistant",
        "model": "stream-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def anthropic_text(text: str) -> list[bytes]:
    events = [
        message_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    return frames(events, named=True)


class StreamServer:
    """See the module docstring. A context manager; `base_url` / `root_url` for the SDKs."""

    def __init__(self) -> None:
        self.requests: list[Json] = []
        self.refused: list[str] = []
        self._answers: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> StreamServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def script(self, *answers: Answer) -> None:
        """Answer the next requests with these, in order (forgets what was left, and the
        requests recorded so far)."""
        with self._lock:
            self._answers = deque(answers)
            self.requests.clear()
            self.refused.clear()

    @property
    def left(self) -> int:
        with self._lock:
            return len(self._answers)

    def answer(self, path: str, body: Json) -> tuple[int, Answer]:
        problems = _problems(path, body)
        with self._lock:
            self.requests.append(body)
            if problems:
                self.refused.append("; ".join(problems))
                return 400, _error("; ".join(problems))
            if not self._answers:
                return 500, _error("no answer scripted")
            return 200, self._answers.popleft()


def _problems(path: str, body: Json) -> list[str]:
    if path.endswith("/messages"):
        history = [m for m in body.get("messages") or () if isinstance(m, dict)]
        problems = messages_problems(history)
        ids = [
            b.get("id")
            for m in history
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        problems += [
            f"tool_use id {i!r} is not accepted" for i in ids if not _good(i, _ANTHROPIC_ID)
        ]
        if len(set(ids)) != len(ids):
            problems.append("tool_use ids must be unique")
        return problems
    history = body.get("messages") if path.endswith("/completions") else body.get("input")
    entries = [m for m in history or () if isinstance(m, dict)]
    ids = [str(c.get("id")) for m in entries for c in m.get("tool_calls") or ()]
    ids += [str(m.get("call_id")) for m in entries if m.get("type") == "function_call"]
    problems = history_problems(entries)
    problems += [f"call id {i!r} is not accepted" for i in ids if not _good(i, _OPENAI_ID)]
    return problems


def _good(value: Any, pattern: re.Pattern[str]) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def _error(message: str) -> Json:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return {"type": "error", "error": error}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and events go out in separate writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        status, answer = self.server.owner.answer(self.path, body)
        self.send_response(status)
        if isinstance(answer, dict):
            data = json.dumps(answer).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in answer:  # each event as it is, then a clean end of the body
            if isinstance(frame, threading.Event):
                self.wfile.flush()
                frame.wait(HOLD)
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: StreamServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


# -- events, one builder each --------------------------------------------------------------


def created() -> Json:
    return {"type": "response.created", "response": response_shell("in_progress", [])}


def item_added(index: int, item: Json) -> Json:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def arguments_delta(index: int | None, item_id: str, delta: str) -> Json:
    event: Json = {"type": "response.function_call_arguments.delta", "item_id": item_id}
    if index is not None:
        event["output_index"] = index
    return {**event, "delta": delta}


def item_done(index: int, item: Json) -> Json:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def completed(output: list[Json]) -> Json:
    return {"type": "response.completed", "response": response_shell("completed", output)}


def block_start(index: int, block: Json) -> Json:
    return {"type": "content_block_start", "index": index, "content_block": block}


def input_delta(index: int, piece: str) -> Json:
    delta = {"type": "input_json_delta", "partial_json": piece}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> Json:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str = "tool_use") -> Json:
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    return {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 3}}


def message_stop() -> Json:
    return {"type": "message_stop"}
