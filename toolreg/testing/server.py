"""ScriptedServer: a real OpenAI-compatible HTTP server on 127.0.0.1 that answers a script.

Tests talk to it with the real ``openai`` SDK over a real socket, so everything between
the client and the wire (SDK parsing, streaming, errors) is exercised as in production::

    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny")]) as server:
        client = server.client()
        ...  # run the conversation
        server.assert_request(1, contains_tool_result="call_1")
        server.assert_all_consumed()

``before_send`` paces or cuts answers: it is called before each streamed chunk (a chat
chunk, a Responses API event or a Messages API event, as a dict) and before a plain answer's
body, with the index of the request in `ScriptedServer.requests`; it may sleep (a model
that takes its time) or wait for an event (a test that holds the stream at a chunk). If it
raises, the answer stops there: a stream ends without its remaining chunks and the connection
is dropped (a cut-off stream), a plain answer is never sent.

``POST /v1/chat/completions`` (plain or ``"stream": true``), ``POST /v1/responses`` and
Anthropic's ``POST /v1/messages`` (plain or streamed) each answer the next turn;
``GET /v1/models`` lists the model. No turn left, an unknown path or a body that is not a
JSON object is answered with an OpenAI-style error and recorded in `ScriptedServer.errors`.

Like OpenAI, the server refuses (HTTP 400, no turn used) a history in which a call is not
answered, is answered twice, or an answer has no call (see `history_problems`); on
``/v1/messages``, like Anthropic, one whose ``tool_use`` blocks are not all answered by the
``tool_result`` blocks of the very next user message (see `messages_problems`), or
whose ``tool_reference`` blocks name no deferred tool sent (see `references_problems`).
Media in tool results are held to what each API takes (see `media_problems`): text only in
a chat ``tool`` message; base64 images of the four image types, their data matching their
type, and PDF documents in a ``tool_result``; ``input_text``, ``input_image`` and
``input_file`` in a ``function_call_output``.
``server.anthropic_client()`` is an ``anthropic.Anthropic`` bound to it. The
Responses API keeps every response not sent with ``"store": false``: a request with
``previous_response_id`` continues from it (an unknown id is refused) and
`ScriptedServer.history` gives the whole history the model saw.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import UsageError
from ..jsonvalues import safe_json
from . import wire
from .inspection import (
    check_request,
    history_problems,
    media_problems,
    messages_problems,
    references_problems,
)
from .turns import Turn, TurnLike

if TYPE_CHECKING:
    import anthropic
    import openai

Json = dict[str, Any]
Reply = tuple[int, "Json | list[bytes] | _Paced"]

_CHAT = "/v1/chat/completions"
_RESPONSES = "/v1/responses"
_MESSAGES = "/v1/messages"
_UNSET: Any = object()


class ScriptedServer:
    """An OpenAI-compatible endpoint that answers scripted turns, in order.

    A real HTTP server on 127.0.0.1 (an ephemeral port) that answers
    `/v1/chat/completions`, `/v1/responses` and Anthropic's `/v1/messages`, streamed or not,
    from the script: each request takes the next turn. Use it as a context manager;
    `client()`, `async_client()` and `anthropic_client()` give SDK clients pointed at it,
    `base_url` its OpenAI base URL (`http://127.0.0.1:PORT/v1`).

    `requests` and `paths` record every model request (valid JSON sent to one of the
    endpoints) in arrival order; `errors` records what the server could not answer.
    `assert_all_consumed()` and `assert_request(...)` check them in a test.

    Args:
        turns: the script: `Turn`s built with `text`, `tool_call`, `tool_calls`, `error`,
            ..., or functions of the request that return one (`DynamicTurn`).
        model: the model name the answers carry.
        before_send: called with the index and the JSON of each streamed chunk before it is
            sent (to pause or cut off a stream in a test).

    Raises:
        UsageError: `before_send` is not callable.

    Example:
        with ScriptedServer([tool_call("add", a=2, b=3), text("5")]) as server:
            reply = Conversation(server.client(), "m", registry=tools).send("2 + 3?")
            server.assert_all_consumed()
    """

    def __init__(
        self,
        turns: Iterable[TurnLike] = (),
        *,
        model: str = "scripted-model",
        before_send: Callable[[int, Json], object] | None = None,
    ) -> None:
        if before_send is not None and not callable(before_send):
            raise UsageError(
                f"ScriptedServer: before_send must be a callable (index, chunk), "
                f"not {type(before_send).__name__}"
            )
        self.model = model
        self.before_send = before_send
        self.requests: list[Json] = []
        self.paths: list[str] = []
        self.errors: list[str] = []
        self._script: deque[TurnLike] = deque(turns)
        self._scripted = len(self._script)
        self._lock = threading.Lock()
        self._call_ids = 0
        self._stored: dict[str, list[Json]] = {}  # Responses API: id -> its whole history
        self._histories: list[list[Json]] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._clients: list[openai.OpenAI | anthropic.Anthropic] = []

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Bind an ephemeral port on 127.0.0.1 and serve from a daemon thread (idempotent)."""
        if self._closed:
            raise UsageError("ScriptedServer: a closed server cannot be started again")
        if self._httpd is not None:
            return
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"ScriptedServer:{self._httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Close the clients made by `client`, stop serving and join the thread.

        Never raises for script problems: call `assert_all_consumed` for that.
        """
        self._closed = True
        for made in self._clients:
            made.close()
        self._clients.clear()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``OpenAI(base_url=...)``."""
        if self._httpd is None:
            raise UsageError("ScriptedServer is not running: call start() or use `with`")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def client(self, **kw: Any) -> openai.OpenAI:
        """An ``openai.OpenAI`` bound to this server (api_key "test", no retries, 10 s timeout).

        Keywords override those defaults; the client is closed by `close`.
        """
        import openai

        made = openai.OpenAI(**self._client_options(kw))
        self._clients.append(made)
        return made

    def async_client(self, **kw: Any) -> openai.AsyncOpenAI:
        """An ``openai.AsyncOpenAI`` bound to this server; close it yourself (``async with``)."""
        import openai

        return openai.AsyncOpenAI(**self._client_options(kw))

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``, for ``anthropic.Anthropic(base_url=...)`` (which adds
        ``/v1/messages`` itself)."""
        return self.base_url.removesuffix("/v1")

    def anthropic_client(self, **kw: Any) -> anthropic.Anthropic:
        """An ``anthropic.Anthropic`` bound to this server (api_key "test", no retries, 10 s
        timeout); keywords override those defaults; the client is closed by `close`."""
        import anthropic

        made = anthropic.Anthropic(**self._client_options({"base_url": self.root_url, **kw}))
        self._clients.append(made)
        return made

    def async_anthropic_client(self, **kw: Any) -> anthropic.AsyncAnthropic:
        """An ``anthropic.AsyncAnthropic`` bound to this server; close it yourself."""
        import anthropic

        return anthropic.AsyncAnthropic(**self._client_options({"base_url": self.root_url, **kw}))

    def _client_options(self, kw: dict[str, Any]) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "api_key": "test",
            "max_retries": 0,
            "timeout": 10.0,
            **kw,
        }

    # -- the script ------------------------------------------------------------------------

    def add(self, *turns: TurnLike) -> None:
        """Append turns to the script."""
        with self._lock:
            self._script.extend(turns)
            self._scripted += len(turns)

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been requested yet."""
        with self._lock:
            return len(self._script)

    def assert_all_consumed(self) -> None:
        """Raise AssertionError if a turn was never requested or a request went unanswered."""
        with self._lock:
            left, problems = list(self._script), list(self.errors)
        if left:
            shown = ", ".join(_describe(t) for t in left[:3]) + (", ..." if len(left) > 3 else "")
            problems.insert(0, f"{len(left)} scripted turn(s) never requested: {shown}")
        if problems:
            raise AssertionError("ScriptedServer: " + "; ".join(problems))

    def assert_request(
        self,
        index: int,
        *,
        path: str | None = None,
        model: str | None = None,
        stream: bool | None = None,
        has_tools: bool | None = None,
        tool_names: Iterable[str] | None = None,
        tool_choice: object = _UNSET,
        contains_tool_result: str | None = None,
        tool_result_contains: str | None = None,
        contains_text: str | None = None,
        message_count: int | None = None,
    ) -> Json:
        """Check ``requests[index]`` (negative counts from the end) and return its body.

        ``contains_tool_result`` is a call id (``tool_call_id`` / ``call_id``, or the function
        name for legacy ``role: "function"`` messages); ``tool_result_contains`` is text that
        result (or, alone, any tool result) must contain; ``contains_text`` is text some
        message or the instructions must contain; ``tool_choice`` is compared with ``==``
        (``None`` when absent). All problems are reported together in one AssertionError.
        """
        with self._lock:
            bodies, paths = list(self.requests), list(self.paths)
        if not -len(bodies) <= index < len(bodies):
            raise AssertionError(
                f"ScriptedServer: no requests[{index}]: {len(bodies)} request(s) received"
            )
        body = bodies[index]
        expected: dict[str, Any] = {
            "path": path,
            "model": model,
            "stream": stream,
            "has_tools": has_tools,
            "tool_names": None if tool_names is None else sorted(tool_names),
            "contains_tool_result": contains_tool_result,
            "tool_result_contains": tool_result_contains,
            "contains_text": contains_text,
            "message_count": message_count,
        }
        if tool_choice is not _UNSET:
            expected["tool_choice"] = tool_choice
        check_request(f"requests[{index}]", paths[index], body, expected)
        return body

    def history(self, index: int) -> list[Json]:
        """The whole history the model saw at ``requests[index]``: the chat ``messages``, or
        the Responses API ``input`` after the history of its ``previous_response_id``."""
        with self._lock:
            histories = list(self._histories)
        if not -len(histories) <= index < len(histories):
            raise AssertionError(
                f"ScriptedServer: no requests[{index}]: {len(histories)} request(s) received"
            )
        return list(histories[index])

    # -- answering (called from handler threads) --------------------------------------------

    def _answer(self, method: str, target: str, raw_body: bytes) -> Reply:
        path = urlsplit(target).path.rstrip("/")
        if method == "GET" and path == "/v1/models":
            model = {"id": self.model, "object": "model", "created": wire.CREATED}
            return 200, {"object": "list", "data": [model | {"owned_by": "toolreg"}]}
        if method != "POST" or path not in (_CHAT, _RESPONSES, _MESSAGES):
            return self._fail(404, f"no endpoint {method} {path}", "not_found")
        try:
            body = json.loads(raw_body or b"null")
        except ValueError as exc:
            return self._fail(400, f"request body is not valid JSON ({exc})", "invalid_json")
        if not isinstance(body, dict):
            return self._fail(400, "request body is not a JSON object", "invalid_json")
        with self._lock:
            number = len(self.requests)
            self.requests.append(body)
            self.paths.append(path)
            history, refused = self._history_of(path, body)
            self._histories.append(history)
            turn = self._script.popleft() if self._script and refused is None else None
        if refused is not None:
            return self._fail(400, f"requests[{number}]: {refused}", "invalid_history")
        if turn is None:
            what = f"no scripted turn left for request #{number + 1} (requests[{number}])"
            return self._fail(500, f"{what}; {self._scripted} turn(s) were scripted", "no_turn")
        if not isinstance(turn, Turn):
            try:
                made: object = turn(body)
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
                return self._fail(
                    500, f"dynamic turn for requests[{number}] raised {why}", "dynamic_turn"
                )
            if not isinstance(made, Turn):
                why = f"returned {type(made).__name__}, not a Turn"
                return self._fail(500, f"dynamic turn for requests[{number}] {why}", "dynamic_turn")
            turn = made
        status, payload = self._encode(turn, path, body, number + 1, history)
        if self.before_send is None or turn.kind == "error" or isinstance(payload, _Paced):
            return status, payload
        return status, _Paced(number, payload, self.before_send)

    def _history_of(self, path: str, body: Json) -> tuple[list[Json], str | None]:
        """The whole history of a request, and why OpenAI would refuse it (None: it would
        not). Called with the lock held."""
        if path in (_CHAT, _MESSAGES):
            found = body.get("messages")
            history = [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []
            if path == _MESSAGES:
                problems = messages_problems(history) + references_problems(body)
                problems += media_problems(path, history)
                return history, ("; ".join(problems) if problems else None)
        else:
            history = wire.input_items(body.get("input"))
            previous = body.get("previous_response_id")
            if previous is not None:
                if previous not in self._stored:
                    return history, f"previous response {previous!r} not found (was it stored?)"
                history = [*self._stored[previous], *history]
        problems = history_problems(history) + media_problems(path, history)
        return history, ("; ".join(problems) if problems else None)

    def _encode(self, turn: Turn, path: str, body: Json, number: int, history: list[Json]) -> Reply:
        if turn.kind == "error":
            if path == _MESSAGES:
                return turn.status, wire.anthropic_error(turn)
            err = {"message": turn.content, "type": turn.error_type, "param": None}
            return turn.status, {"error": err | {"code": turn.error_code}}
        rid = f"scripted_{number}"
        message = wire.chat_message(turn, self._new_call_id)
        stream = body.get("stream") is True
        if path == _MESSAGES:
            answer = wire.anthropic_message(turn, message, rid=rid, model=self.model)
            return 200, (wire.sse_events(wire.anthropic_events(answer)) if stream else answer)
        if path == _RESPONSES:
            items = wire.output_items(message, rid=rid, new_call_id=self._new_call_id)
            resp = wire.response(turn, items, body, rid=rid, model=self.model)
            if body.get("store") is not False:
                with self._lock:
                    self._stored[resp["id"]] = [*history, *items]
            return 200, (wire.sse_events(wire.response_events(resp)) if stream else resp)
        rid = f"chatcmpl-scripted-{number}"
        if isinstance(message, list):
            return self._fail(
                500, f"{turn!r}: a list of output items answers /v1/responses only", "raw_items"
            )
        if not stream:
            return 200, wire.completion(turn, message, rid=rid, model=self.model)
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        chunks = wire.chunks(turn, message, rid=rid, model=self.model, include_usage=usage)
        return 200, wire.sse_chat(chunks)

    def _new_call_id(self) -> str:
        with self._lock:
            self._call_ids += 1
            return f"call_{self._call_ids}"

    def _fail(self, status: int, message: str, code: str) -> Reply:
        message = f"ScriptedServer: {message}"
        with self._lock:
            self.errors.append(message)
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Paced:
    """An answer to send through `before_send`: the request's index and the payload."""

    def __init__(
        self, index: int, payload: Json | list[bytes], pace: Callable[[int, Json], object]
    ) -> None:
        self.index, self.payload, self.pace = index, payload, pace

    def before(self, frame: Json | bytes) -> None:
        """Call `before_send` for a plain body or an SSE frame ("[DONE]" is not a chunk)."""
        if not isinstance(frame, bytes):
            self.pace(self.index, frame)
            return
        data = frame.decode().rpartition("data: ")[2].strip()
        if data != "[DONE]":
            self.pace(self.index, json.loads(data))


class _Cut(Exception):
    """`before_send` raised: the answer stops here."""


def _describe(turn: TurnLike) -> str:
    return repr(turn) if isinstance(turn, Turn) else f"dynamic {getattr(turn, '__name__', turn)}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no line on stderr per request."""

    def _handle(self) -> None:
        length = self.headers.get("Content-Length") or "0"
        if not length.isdigit():  # unreadable framing: answer, then drop the connection
            length, self.close_connection = "0", True
        raw_body = self.rfile.read(int(length))
        try:
            status, payload = self.server.scripted._answer(self.command, self.path, raw_body)
        except Exception as exc:  # a bug in the server itself: answer it, never hang
            status, payload = self.server.scripted._fail(500, f"internal error {exc!r}", "bug")
        try:
            self._send(status, payload)
        except (BrokenPipeError, ConnectionResetError, _Cut):  # the answer stopped midway
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _send(self, status: int, payload: Json | list[bytes] | _Paced) -> None:
        paced = payload if isinstance(payload, _Paced) else None
        payload = payload.payload if isinstance(payload, _Paced) else payload
        if isinstance(payload, dict):
            _pace(paced, payload)
        self.send_response(status)
        if isinstance(payload, dict):
            data = json.dumps(safe_json(payload), ensure_ascii=False).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in payload:
            _pace(paced, frame)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.write(b"0\r\n\r\n")


def _pace(paced: _Paced | None, frame: Json | bytes) -> None:
    if paced is None:
        return
    try:
        paced.before(frame)
    except Exception as exc:
        raise _Cut from exc


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, scripted: ScriptedServer) -> None:
        self.scripted = scripted
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a dropped connection is the client's business, not a traceback."""

    def drop_connections(self) -> None:
        """Shut down kept-alive connections so their handler threads end now."""
        with self._connections_lock:
            open_now = list(self._connections)
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
