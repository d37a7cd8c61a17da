"""A conversation's state as plain JSON, read back and checked; decisions on pending calls.

`dump_state` writes what `Conversation.export_state()` returns, `load_state` reads it back
(every field checked: a state is data from storage), `verdicts` checks a person's decisions
before anything runs. The layout, version 1:

```
{"toolreg": "conversation-state", "version": 1, "id": "<hex>",
 "status": "ready" | "approval_required" | "resumed",
 "options": {...},                  the conversation's options (model, dialect, ...)
 "messages": [...],                 the history
 "server": null | {"previous_response_id": "...", "known": N},
 "pending": [{"call_id", "tool_name", "arguments", "schema"}],
 "turn": null | {...}}              a paused turn: rounds, usage, results, the round
```

`schema` is a fingerprint of the tool's parameters when the call was paused: a state whose
tool has changed since is refused. `status` becomes "resumed" when a conversation resumes
the state object it was exported as or rebuilt from, so that resuming it again raises.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import (
    ConversationStateError,
    InvalidArgumentsError,
    InvalidJSONError,
    RepeatedCallError,
    ToolCallError,
    ToolDeniedError,
    ToolExecutionError,
    ToolTimeoutError,
    UnknownToolError,
    UsageError,
)
from ..jsonvalues import copy_json
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .loop import PausedRound, TurnState, Verdict
from .reply import PendingCall, Usage

__all__ = [
    "MARK",
    "MAX_STATE_DEPTH",
    "MAX_STATE_SIZE",
    "VERSION",
    "Loaded",
    "dump_state",
    "load_state",
    "schema_fingerprint",
    "signing_keys",
    "verdicts",
]

MARK = "conversation-state"
VERSION = 2
MAX_STATE_DEPTH = 100
"""Containers nested in a state at most (tool arguments nest at most 64 by default)."""
MAX_STATE_SIZE = 32 << 20
"""Characters of text plus values in a state at most (about 32 MB of JSON)."""
MIN_KEY_BYTES = 16
SIGNATURE = "signature"
_SCHEME = "hmac-sha256:"
_OLD_VERSIONS = {
    1: "version 1 (toolreg before signed states): its approvals bind no content, so it "
    "cannot be resumed safely; finish that turn with the toolreg that paused it, or discard it"
}
_ERRORS: dict[str, type[ToolCallError]] = {
    cls.kind: cls
    for cls in (
        InvalidArgumentsError,
        InvalidJSONError,
        ToolDeniedError,
        RepeatedCallError,
        ToolExecutionError,
    )
}
Json = dict[str, Any]


def canonical(value: Any) -> bytes:
    """The one encoding a state is signed and digested in: sorted keys, no whitespace,
    `ensure_ascii=False`, UTF-8 (a lone surrogate kept as its own bytes, never an error)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def signing_keys(key: Any) -> list[bytes] | None:
    """`key=` of `export_state` / `from_state`: bytes or str of at least 16 bytes, or a list
    of them, newest first (it signs with the first and verifies with any). None: unsigned."""
    if key is None:
        return None
    given = list(key) if isinstance(key, (list, tuple)) else [key]
    if not given:
        raise UsageError("key=[]: give at least one signing key (the newest first)")
    keys = []
    for k in given:
        if isinstance(k, str):
            k = k.encode("utf-8", "surrogatepass")
        if not isinstance(k, (bytes, bytearray)):
            raise UsageError(
                f"key must be bytes or str, or a list of them (newest first), not "
                f"{type(k).__name__}"
            )
        if len(k) < MIN_KEY_BYTES:
            raise UsageError(
                f"key is {len(k)} bytes long; a signing key needs at least {MIN_KEY_BYTES} "
                "(e.g. secrets.token_bytes(32), kept with the application's secrets)"
            )
        keys.append(bytes(k))
    return keys


def _signature(key: bytes, state: Json) -> str:
    unsigned = {k: v for k, v in state.items() if k != SIGNATURE}
    return _SCHEME + hmac.new(key, canonical(unsigned), hashlib.sha256).hexdigest()


def _verify(state: Json, keys: list[bytes] | None) -> None:
    signed = SIGNATURE in state
    if keys is None:
        if signed:
            raise ConversationStateError(
                "the conversation state is signed: give from_state() the key it was signed "
                "with (key=...)"
            )
        return
    if not signed:
        raise ConversationStateError(
            "the conversation state is not signed, and from_state() was given a key: an "
            "unsigned state is refused where signed ones are expected"
        )
    given = state[SIGNATURE]
    if not isinstance(given, str):
        raise _bad("its signature is not text")
    try:
        expected = [_signature(k, state).encode() for k in keys]
    except (TypeError, ValueError, RecursionError):  # _check_shape leaves none of these
        raise _bad("it cannot be encoded to verify its signature") from None
    found = given.encode("utf-8", "surrogatepass")
    if not any(hmac.compare_digest(e, found) for e in expected):
        raise ConversationStateError(
            "the conversation state's signature does not match: it was changed after "
            "export_state(), or signed with another key"
        )


def _check_shape(state: Any) -> None:
    """JSON values only, nested at most `MAX_STATE_DEPTH`, at most `MAX_STATE_SIZE` in all
    (walked without recursion: a 100,000-deep value is refused like a 101-deep one)."""
    stack: list[tuple[Any, int]] = [(state, 1)]
    size = 0
    while stack:
        value, depth = stack.pop()
        size += 1
        kind = type(value)
        if kind is dict or kind is list:
            if depth > MAX_STATE_DEPTH:
                raise _bad(f"it nests more than {MAX_STATE_DEPTH} levels")
            items = value.items() if kind is dict else enumerate(value)
            for k, item in items:
                if kind is dict:
                    if type(k) is not str:
                        raise _bad("an object has a key that is not text")
                    size += len(k)
                stack.append((item, depth + 1))
        elif kind is str:
            size += len(value)
        elif kind not in (int, float, bool, type(None)):
            raise _bad(f"it holds a {kind.__name__}, which is not a JSON value")
        if size > MAX_STATE_SIZE:
            raise _bad(f"it is larger than {MAX_STATE_SIZE} characters and values")


def schema_fingerprint(tool: Tool) -> str:
    """A stable digest of the parameters a tool accepts."""
    text = json.dumps(tool.parameters, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(slots=True)
class Loaded:
    """A state read back: everything a conversation needs to go on."""

    id: str
    options: Json
    messages: list[Json]
    previous: tuple[str, int] | None
    turn: TurnState | None
    output: tuple[str, Json] | None  # the name and schema of the paused turn's output type
    schemas: dict[str, str]  # call id -> fingerprint of its tool's parameters


def dump_state(
    *,
    options: Json,
    messages: list[Json],
    previous: tuple[str, int] | None,
    turn: TurnState | None,
    output: tuple[str, Json] | None,
    schemas: Mapping[str, str],
    keys: list[bytes] | None = None,
) -> Json:
    """The plain-JSON state (copies: the conversation goes on changing its own), signed
    with the first of `keys` when there are any."""
    state: Json = {"toolreg": MARK, "version": VERSION, "id": uuid.uuid4().hex}
    paused = turn.paused if turn is not None else None
    state["status"] = "ready" if paused is None else "approval_required"
    state["options"] = copy_json(options)
    state["messages"] = copy_json(messages)
    state["server"] = (
        None if previous is None else {"previous_response_id": previous[0], "known": previous[1]}
    )
    state["pending"] = [
        {
            "call_id": p.call_id,
            "tool_name": p.tool_name,
            "arguments": copy_json(p.arguments),
            "schema": schemas[p.call_id],
        }
        for p in (paused.pending.values() if paused is not None else ())
    ]
    state["turn"] = None if turn is None or paused is None else _turn_json(turn, paused, output)
    if keys:
        _check_shape(state)  # what from_state would refuse is not signed either
        state[SIGNATURE] = _signature(keys[0], state)
    return state


def _turn_json(turn: TurnState, paused: PausedRound, output: tuple[str, Json] | None) -> Json:
    return {
        "rounds": turn.calls_made,
        "tool_rounds": turn.tool_rounds,
        "usage": {
            "prompt_tokens": turn.usage.prompt_tokens,
            "completion_tokens": turn.usage.completion_tokens,
            "total_tokens": turn.usage.total_tokens,
        },
        "final": turn.final,
        "limit_reached": turn.limit_reached,
        "after_observations": turn.after_observations,
        "retries_left": turn.retries_left,
        "stop_requested": turn.stop_requested,
        "recent": [[[n, a, c] for (n, a), c in keys.items()] for keys in turn.recent],
        "results": [_result_json(r) for r in turn.results],
        "round": {
            "calls": [
                {"name": c.name, "arguments": _arguments_json(c.arguments), "call_id": c.call_id}
                for c in paused.calls
            ],
            "done": [{"index": i, **_result_json(r)} for i, r in sorted(paused.results.items())],
            "waiting": sorted(paused.pending),
        },
        "output": None if output is None else {"name": output[0], "schema": copy_json(output[1])},
    }


def _arguments_json(arguments: Any) -> Any:
    if isinstance(arguments, bytes):
        return arguments.decode("utf-8", "replace")
    return copy_json(arguments) if isinstance(arguments, dict) else arguments


def _result_json(result: ToolResult) -> Json:
    out: Json = {
        "tool_name": result.tool_name,
        "call_id": result.call_id,
        "ok": result.ok,
        "content": result.content,
        "return_direct": result.return_direct,
        "error": None if result.error is None else result.error.kind,
    }
    if isinstance(result.error, ToolTimeoutError):
        out["timeout"] = result.error.timeout
    return out


# -- reading ------------------------------------------------------------------------------


def _bad(problem: str) -> ConversationStateError:
    return ConversationStateError(f"not a usable conversation state: {problem}")


def _get(data: Any, key: str, kind: type | tuple[type, ...], where: str = "the state") -> Any:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _bad(f"{where} has no valid {key!r}")
    return value


def load_state(state: Any, keys: list[bytes] | None = None) -> Loaded:
    """Read a state written by `dump_state`, verified with `keys` (see `signing_keys`);
    `ConversationStateError` for anything else."""
    if not isinstance(state, dict) or state.get("toolreg") != MARK:
        raise _bad("it was not made by Conversation.export_state()")
    _check_shape(state)
    version = state.get("version")
    if type(version) is not int or version != VERSION:
        if type(version) is int and version in _OLD_VERSIONS:
            raise _bad(_OLD_VERSIONS[version])
        shown = repr(version)[:40]
        raise _bad(f"version {shown}; this toolreg reads version {VERSION}")
    sid = _get(state, "id", str)
    status = _get(state, "status", str)
    if status == "resumed":
        raise ConversationStateError(f"the conversation state {sid[:64]} was resumed already")
    _verify(state, keys)
    if status not in ("ready", "approval_required"):
        raise _bad(f"unknown status {status!r}")
    options = copy_json(_get(state, "options", dict))
    messages = copy_json(_get(state, "messages", list))
    if not all(isinstance(m, dict) for m in messages):
        raise _bad("a message is not an object")
    server = state.get("server")
    previous = None
    if server is not None:
        previous = (
            _get(server, "previous_response_id", str, "server"),
            _get(server, "known", int, "server"),
        )
    pending = _get(state, "pending", list)
    turn_data = state.get("turn")
    if (status == "approval_required") != (turn_data is not None) or (
        turn_data is None and pending
    ):
        raise _bad(f"status {status!r} does not match its turn and pending calls")
    turn, output = (None, None) if turn_data is None else _turn(turn_data, messages, pending)
    if turn is not None and previous is not None:
        turn.previous_id, turn.known = previous
    schemas = {_get(p, "call_id", str, "a pending call"): _get(p, "schema", str) for p in pending}
    return Loaded(sid, options, messages, previous, turn, output, schemas)


def _turn(
    data: Any, messages: list[Json], pending: list[Any]
) -> tuple[TurnState, tuple[str, Json] | None]:
    usage = _get(data, "usage", dict, "the turn")
    turn = TurnState(
        history=messages,
        results=[_result(r) for r in _get(data, "results", list, "the turn")],
        usage=Usage(
            _get(usage, "prompt_tokens", int, "usage"),
            _get(usage, "completion_tokens", int, "usage"),
            _get(usage, "total_tokens", int, "usage"),
        ),
        calls_made=_get(data, "rounds", int, "the turn"),
        tool_rounds=_get(data, "tool_rounds", int, "the turn"),
        final=_get(data, "final", bool, "the turn"),
        limit_reached=_get(data, "limit_reached", bool, "the turn"),
        after_observations=_get(data, "after_observations", bool, "the turn"),
        retries_left=_get(data, "retries_left", int, "the turn"),
        stop_requested=_get(data, "stop_requested", bool, "the turn"),
    )
    try:
        turn.recent = [
            {(str(n), str(a)): str(c) for n, a, c in keys}
            for keys in _get(data, "recent", list, "the turn")
        ]
    except (TypeError, ValueError):
        raise _bad("the turn's recent calls are malformed") from None
    turn.paused = _round(_get(data, "round", dict, "the turn"), pending)
    output = data.get("output")
    if output is None:
        return turn, None
    return turn, (_get(output, "name", str, "output"), _get(output, "schema", dict, "output"))


def _round(data: Json, pending: list[Any]) -> PausedRound:
    calls = [
        ToolCall(
            _get(c, "name", str, "a call"),
            _checked_arguments(c.get("arguments") if isinstance(c, dict) else None),
            c.get("call_id") if isinstance(c.get("call_id"), str) else None,
        )
        for c in _get(data, "calls", list, "the round")
    ]
    results = {}
    for entry in _get(data, "done", list, "the round"):
        index = _get(entry, "index", int, "a result")
        results[index] = _result(entry)
    waiting = _get(data, "waiting", list, "the round")
    if len(waiting) != len(pending) or not pending:
        raise _bad("its pending calls do not match its round")
    paused = PausedRound(calls, results, {})
    for index, entry in zip(waiting, pending):
        if not isinstance(index, int) or not 0 <= index < len(calls) or index in results:
            raise _bad("its pending calls do not match its round")
        arguments = _get(entry, "arguments", dict, "a pending call")
        paused.pending[index] = PendingCall(
            _get(entry, "call_id", str, "a pending call"),
            _get(entry, "tool_name", str, "a pending call"),
            copy_json(arguments),
        )
    if set(results) | set(paused.pending) != set(range(len(calls))):
        raise _bad("its round has calls that are neither done nor pending")
    return paused


def _checked_arguments(arguments: Any) -> Any:
    if arguments is None or isinstance(arguments, (str, dict)):
        return arguments
    raise _bad("a call's arguments are neither text nor an object")


def _result(data: Any) -> ToolResult:
    name = _get(data, "tool_name", str, "a result")
    content = _get(data, "content", str, "a result")
    ok = _get(data, "ok", bool, "a result")
    kind = data.get("error")
    error: ToolCallError | None = None
    if kind == "timeout":
        timeout = data.get("timeout")
        limit = float(timeout) if isinstance(timeout, (int, float)) else 0.0
        error = ToolTimeoutError(content, tool_name=name, timeout=limit)
    elif kind == "unknown_tool":
        error = UnknownToolError(content, tool_name=name)
    elif isinstance(kind, str):
        error = _ERRORS.get(kind, ToolCallError)(content, tool_name=name)
    call_id = data.get("call_id")
    return ToolResult(
        tool_name=name,
        call_id=call_id if isinstance(call_id, str) else None,
        ok=ok,
        content=content,
        error=error,
        return_direct=data.get("return_direct") is True,
    )


# -- decisions ----------------------------------------------------------------------------


def verdicts(
    paused: PausedRound,
    decisions: Any,
    validate: Callable[[PendingCall, Any], dict[str, Any]],
) -> dict[str, Verdict]:
    """One `Verdict` per pending call from `decisions` ({call id: True | False | "reason" |
    {"arguments": {...}}}); edited arguments pass `validate`. A `UsageError` says what is
    wrong before anything runs."""
    if not isinstance(decisions, Mapping):
        raise UsageError("resume() takes a dict: {call_id: True | False | reason | {...}}")
    waiting = {p.call_id: p for p in paused.pending.values()}
    unknown = [repr(k) for k in decisions if k not in waiting]
    missing = [repr(k) for k in waiting if k not in decisions]
    if unknown or missing:
        problems = []
        if missing:
            problems.append(f"no decision for {', '.join(missing)}")
        if unknown:
            problems.append(f"{', '.join(unknown)} is not pending")
        raise UsageError(
            f"resume(): {'; '.join(problems)} (pending: {', '.join(map(repr, waiting))})"
        )
    out: dict[str, Verdict] = {}
    for call_id, pending in waiting.items():
        decision = decisions[call_id]
        if decision is True or decision is False:
            out[call_id] = Verdict(decision)
        elif isinstance(decision, str):
            out[call_id] = Verdict(False, reason=decision)
        elif isinstance(decision, Mapping) and set(decision) == {"arguments"}:
            out[call_id] = Verdict(True, arguments=validate(pending, decision["arguments"]))
        else:
            raise UsageError(
                f"resume(): the decision for {call_id!r} must be True, False, a reason (str) "
                f'or {{"arguments": {{...}}}}, not {type(decision).__name__}'
            )
    return out
