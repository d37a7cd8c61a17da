"""The conversation state codec: a conversation as plain JSON, and read back, checked.

`dump_state` writes what `Conversation.export_state()` returns, `load_state` reads it back
(every field checked: a state is data from storage; signed ones verified, see `signing`).
What a resume then checks against the conversation (its options, its paused round against
the history) is `resume`'s; a person's decisions are `approvals`'. The layout, version 3:

```
{"toolreg": "conversation-state", "version": 3, "id": "<hex>",
 "status": "ready" | "approval_required" | "resumed",
 "options": {...},                  the conversation's options (model, dialect, ...)
 "messages": [...],                 the history
 "server": null | {"previous_response_id": "...", "known": N},
 "pending": [{"call_id", "tool_name", "arguments", "tool", "digest"}],
 "turn": null | {...},              a paused turn: rounds, usage, results, the round
 "discovered": ["name", ...],       deferred tools the model found with search_tools
 "conversation_id": "<id>",         the id in its calls' idempotency keys
 "signature": "hmac-sha256:<hex>"}  only when signed: over everything else, `canonical`
```

A paused turn keeps its `turn_id` and its `retry_keys` (`[[tool, canonical arguments,
key], ...]`: calls that failed while they ran, whose key a repeat of the call keeps), so
that the calls it resumes run with the keys they had (see `toolreg.idempotency`; the keys
are worked out again, not read). Every result keeps its `outcome` and `idempotency_key`.
A state written before these existed is read as a conversation with a new id.

A paused round's result of a client-executed tool search keeps the names of the tools it
found (`"found"`): on resume they are loaded again (by reference, or by definition), if
they still are deferred tools the conversation allows.

Version 2 (before tool search) is read too: its conversation searched no tools and
found none (no `tool_search` option, no `discovered`).

`tool` is a fingerprint of the tool's whole definition when the call was paused (a state
whose tool has changed since is refused); `digest` binds the call to it
(`signing.call_digest`), and a decision keyed by a digest applies to that call only.
`status` becomes "resumed" when a conversation resumes the state object it was exported as
or rebuilt from, so that resuming it again raises; a copy in storage is the application's to
claim once.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..content import parts_json, read_parts_json
from ..errors import (
    CallLimitError,
    ConversationStateError,
    GuardrailRejectedError,
    InvalidArgumentsError,
    InvalidJSONError,
    RepeatedCallError,
    RetryRequestedError,
    ToolCallError,
    ToolDeniedError,
    ToolExecutionError,
    ToolFailedError,
    ToolInterruptedError,
    ToolTimeoutError,
    UnknownToolError,
    with_article,
)
from ..idempotency import new_id, received_key
from ..jsonvalues import copy_json
from ..result import OUTCOMES, ToolCall, ToolResult
from .asking import asked_json, read_asked
from .loop import PausedRound, TurnState
from .offer import MAX_FOUND, Found, found_names
from .options import ConversationOptions
from .providers.history import entry_problem
from .reply import PendingCall, Usage
from .signing import SIGNATURE, call_digest, sign, verify

__all__ = [
    "MARK",
    "MAX_DISCOVERED",
    "MAX_STATE_DEPTH",
    "MAX_STATE_SIZE",
    "VERSION",
    "Loaded",
    "bad_state",
    "dump_state",
    "load_state",
]

MARK = "conversation-state"
VERSION = 3
_READS = (2, 3)  # 2: before tool search (upgraded as it is read)
MAX_STATE_DEPTH = 100
"""Containers nested in a state at most (tool arguments nest at most 64 by default)."""
MAX_STATE_SIZE = 32 << 20
"""Characters of text plus values in a state at most (about 32 MB of JSON)."""
MAX_DISCOVERED = 10_000
"""Deferred tools a state may say the model found, at most."""
MAX_ID_CHARS = 255  # a saved conversation or turn id (as `idempotency.received_key` bounds)
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
        RetryRequestedError,
        ToolFailedError,
        CallLimitError,
        ToolInterruptedError,
        GuardrailRejectedError,
    )
}
_ADDED_LATER = (
    "deferred_search",
    "tool_retries",
    "max_calls",
    "max_tool_calls",
    "on_call_limit",
    "max_concurrency",
    "versions",
)
Json = dict[str, Any]


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
                raise bad_state(f"it nests more than {MAX_STATE_DEPTH} levels")
            items = value.items() if kind is dict else enumerate(value)
            for k, item in items:
                if kind is dict:
                    if type(k) is not str:
                        raise bad_state("an object has a key that is not text")
                    size += len(k)
                stack.append((item, depth + 1))
        elif kind is str:
            size += len(value)
        elif kind is float and not math.isfinite(value):
            raise bad_state("it holds a number that is not finite (NaN, Infinity)")
        elif kind not in (int, float, bool, type(None)):
            raise bad_state(f"it holds {with_article(kind.__name__)}, which is not a JSON value")
        if size > MAX_STATE_SIZE:
            raise bad_state(f"it is larger than {MAX_STATE_SIZE} characters and values")


@dataclass(slots=True)
class Loaded:
    """A state read back: everything a conversation needs to go on."""

    id: str
    options: Json
    messages: list[Json]
    previous: tuple[str, int] | None
    turn: TurnState | None
    output: tuple[str, Json] | None  # the name and schema of the paused turn's output type
    schemas: dict[str, str]  # call id -> fingerprint of its tool's definition
    discovered: list[str] = dataclasses.field(default_factory=list)  # deferred tools found
    conversation_id: str = ""  # the id in its calls' idempotency keys ("": none saved)


def dump_state(
    *,
    options: Json,
    messages: list[Json],
    previous: tuple[str, int] | None,
    turn: TurnState | None,
    output: tuple[str, Json] | None,
    schemas: Mapping[str, str],
    keys: list[bytes] | None = None,
    discovered: list[str] | None = None,
    conversation_id: str = "",
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
            "tool": schemas[p.call_id],
            "digest": p.digest,
            **asked_json(p),
        }
        for p in (paused.pending.values() if paused is not None else ())
    ]
    state["turn"] = None if turn is None or paused is None else _turn_json(turn, paused, output)
    state["discovered"] = list(discovered or ())
    if conversation_id:
        state["conversation_id"] = conversation_id
    if keys:
        _check_shape(state)  # what from_state would refuse is not signed either
        state[SIGNATURE] = sign(keys[0], state)
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
        "turn_id": turn.turn_id,
        "retry_keys": [[n, a, k] for (n, a), k in turn.retry_keys.items()],
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
        "outcome": result.outcome,
    }
    if result.idempotency_key is not None:
        out["idempotency_key"] = result.idempotency_key
    if isinstance(result.error, ToolTimeoutError):
        out["timeout"] = result.error.timeout
    found = found_names(result)  # a search's: the names, loaded again on resume
    if found is not None:
        out["found"] = found
    if result.parts:
        out["parts"] = parts_json(result.parts)
    return out


# -- reading ------------------------------------------------------------------------------


def bad_state(problem: str) -> ConversationStateError:
    """The error of a state that cannot be used, saying why."""
    return ConversationStateError(f"not a usable conversation state: {problem}")


def _get(data: Any, key: str, kind: type | tuple[type, ...], where: str = "the state") -> Any:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise bad_state(f"{where} has no valid {key!r}")
    return value


def load_state(state: Any, keys: list[bytes] | None = None) -> Loaded:
    """Read a state written by `dump_state`, verified with `keys` (see `signing_keys`);
    `ConversationStateError` for anything else."""
    if not isinstance(state, dict) or state.get("toolreg") != MARK:
        raise bad_state("it was not made by Conversation.export_state()")
    _check_shape(state)
    version = state.get("version")
    if type(version) is not int or version not in _READS:
        if type(version) is int and version in _OLD_VERSIONS:
            raise bad_state(_OLD_VERSIONS[version])
        shown = repr(version)[:40]
        raise bad_state(f"version {shown}; this toolreg reads version {VERSION} (and 2)")
    sid = _get(state, "id", str)
    status = _get(state, "status", str)
    if status == "resumed":
        raise ConversationStateError(f"the conversation state {sid[:64]} was resumed already")
    verify(state, keys)
    if status not in ("ready", "approval_required"):
        raise bad_state(f"unknown status {status!r}")
    options = copy_json(_get(state, "options", dict))
    if version == 2:  # before tool search: none was asked for, nothing was found
        options.setdefault("tool_search", None)
    defaults = ConversationOptions().saved()
    for name in _ADDED_LATER:  # states from before these options existed get the default
        options.setdefault(name, defaults[name])
    messages = copy_json(_get(state, "messages", list))
    for message in messages:
        problem = entry_problem(message)
        if problem is not None:
            raise bad_state(problem)
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
        raise bad_state(f"status {status!r} does not match its turn and pending calls")
    turn, output = (None, None) if turn_data is None else _turn(turn_data, messages, pending)
    if turn is not None and not 0 <= turn.tool_rounds <= turn.calls_made:
        raise bad_state("its turn counts more tool rounds than model calls")
    rounds = options.get("max_rounds")
    if turn is not None and type(rounds) is int and turn.tool_rounds >= rounds:
        # a round pauses before the turn's last model call, never at or after it
        raise bad_state(
            f"its turn has {turn.tool_rounds} tool rounds, at least max_rounds={rounds}"
        )
    if turn is not None and previous is not None:
        turn.previous_id, turn.known = previous
    schemas = {}
    if turn is not None and turn.paused is not None:
        schemas = {
            p.call_id: _get(e, "tool", str, "a pending call")
            for p, e in zip(turn.paused.pending.values(), pending)
        }
    discovered = state.get("discovered") if version >= 3 else []
    if (
        not isinstance(discovered, list)
        or len(discovered) > MAX_DISCOVERED
        or not all(isinstance(n, str) for n in discovered)
    ):
        raise bad_state(f"its 'discovered' is not a list of at most {MAX_DISCOVERED} tool names")
    conversation = state.get("conversation_id", "")
    if conversation != "" and received_key(conversation) is None:
        raise bad_state(
            f"its 'conversation_id' is not an id (text of 1 to {MAX_ID_CHARS} characters)"
        )
    loaded = Loaded(sid, options, messages, previous, turn, output, schemas, list(discovered))
    loaded.conversation_id = conversation
    return loaded


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
        raise bad_state("the turn's recent calls are malformed") from None
    turn.paused = _round(_get(data, "round", dict, "the turn"), pending)
    turn_id = data.get("turn_id", "")
    if turn_id != "" and received_key(turn_id) is None:
        raise bad_state(
            f"its turn's 'turn_id' is not an id (text of 1 to {MAX_ID_CHARS} characters)"
        )
    turn.turn_id = turn_id or new_id()
    retry = data.get("retry_keys", [])
    if not isinstance(retry, list) or not all(
        isinstance(e, list)
        and len(e) == 3
        and all(isinstance(v, str) for v in e)
        and received_key(e[2]) is not None
        for e in retry
    ):
        raise bad_state("its turn's 'retry_keys' are not [tool, arguments, key] triples")
    turn.retry_keys = {(n, a): k for n, a, k in retry}
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
        result = _result(entry)
        if not 0 <= index < len(calls) or index in results:
            raise bad_state("its round's results do not match its calls")
        if (result.call_id, result.tool_name) != (calls[index].call_id, calls[index].name):
            raise bad_state(f"result {index + 1} of its round is not for call {index + 1}")
        results[index] = result
    waiting = _get(data, "waiting", list, "the round")
    if len(waiting) != len(pending) or not pending:
        raise bad_state("its pending calls do not match its round")
    paused = PausedRound(calls, results, {})
    for index, entry in zip(waiting, pending):
        if (
            type(index) is not int
            or not 0 <= index < len(calls)
            or index in results
            or index in paused.pending
        ):
            raise bad_state("its pending calls do not match its round")
        call_id = _get(entry, "call_id", str, "a pending call")
        name = _get(entry, "tool_name", str, "a pending call")
        arguments = copy_json(_get(entry, "arguments", dict, "a pending call"))
        digest = _get(entry, "digest", str, "a pending call")
        fingerprint = _get(entry, "tool", str, "a pending call")
        if any(p.call_id == call_id for p in paused.pending.values()):
            raise bad_state(f"two pending calls have the id {call_id[:64]!r}")
        if calls[index].call_id != call_id or calls[index].name != name:
            raise bad_state(f"the pending call {call_id[:64]!r} is not the call of its round")
        if call_digest(call_id, name, arguments, fingerprint) != digest:
            raise bad_state(f"the pending call {call_id[:64]!r} does not match its digest")
        paused.pending[index] = read_asked(entry, PendingCall(call_id, name, arguments, digest))
    if set(results) | set(paused.pending) != set(range(len(calls))):
        raise bad_state("its round has calls that are neither done nor pending")
    return paused


def _checked_arguments(arguments: Any) -> Any:
    if arguments is None or isinstance(arguments, (str, dict)):
        return arguments
    raise bad_state("a call's arguments are neither text nor an object")


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
    outcome = data.get("outcome", "completed")
    if outcome not in OUTCOMES:
        raise bad_state(f"a result's 'outcome' is not one of {', '.join(OUTCOMES)}")
    key = data.get("idempotency_key")
    if key is not None and received_key(key) is None:
        raise bad_state("a result's 'idempotency_key' is not a key")
    found = data.get("found")
    if found is not None and (
        not isinstance(found, list)
        or len(found) > MAX_FOUND
        or not all(isinstance(n, str) for n in found)
    ):
        raise bad_state(f"a result's 'found' is not a list of at most {MAX_FOUND} tool names")
    try:
        parts = read_parts_json(data["parts"]) if "parts" in data else ()
    except ValueError as exc:
        raise bad_state(f"a result's 'parts' are {exc}") from None
    return ToolResult(
        parts=parts if ok else (),
        tool_name=name,
        call_id=call_id if isinstance(call_id, str) else None,
        ok=ok,
        content=content,
        error=error,
        return_direct=data.get("return_direct") is True,
        value=None if found is None else Found(found),
        outcome=outcome,
        idempotency_key=key,
    )
