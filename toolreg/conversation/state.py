"""A conversation's state as plain JSON, read back and checked; decisions on pending calls.

`dump_state` writes what `Conversation.export_state()` returns, `load_state` reads it back
(every field checked: a state is data from storage), `check_round` holds a paused round
against the history it claims to come from, `verdicts` checks a person's decisions before
anything runs. The layout, version 3:

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
whose tool has changed since is refused); `digest` binds the call to it (`call_digest`), and
a decision keyed by a digest applies to that call only. Without a signature, anyone who can
write the state can recompute both: the digest protects the application that decides by
digest, the signature protects everything. `status` becomes "resumed" when a conversation
resumes the state object it was exported as or rebuilt from, so that resuming it again
raises; a copy in storage is the application's to claim once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import (
    CallLimitError,
    ConversationError,
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
    UsageError,
    with_article,
)
from ..formats import Format
from ..idempotency import new_id, received_key
from ..jsonvalues import copy_json, strict_decoder
from ..result import OUTCOMES, ToolCall, ToolResult
from ..tool import Tool
from ..toolsets import Toolset
from ..toolsets.search import ToolSearch
from .loop import PausedRound, TurnState, Verdict
from .offer import MAX_FOUND, Found, found_names
from .options import COLLABORATORS, ConversationOptions, check_saved, narrowing, saved_checks
from .policies import narrowed_calls
from .reply import PendingCall, Usage

__all__ = [
    "CONSTRUCTOR_OPTIONS",
    "MARK",
    "MAX_DISCOVERED",
    "MAX_STATE_DEPTH",
    "MAX_STATE_SIZE",
    "SAVED_OPTIONS",
    "VERSION",
    "Loaded",
    "call_digest",
    "check_round",
    "dump_state",
    "load_state",
    "resumed_options",
    "saved_options",
    "signing_keys",
    "tool_fingerprint",
    "verdicts",
    "with_digests",
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
MIN_KEY_BYTES = 16
MAX_ID_CHARS = 255  # a saved conversation or turn id (as `idempotency.received_key` bounds)
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
        RetryRequestedError,
        ToolFailedError,
        CallLimitError,
        ToolInterruptedError,
        GuardrailRejectedError,
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
        elif kind is float and not math.isfinite(value):
            raise _bad("it holds a number that is not finite (NaN, Infinity)")
        elif kind not in (int, float, bool, type(None)):
            raise _bad(f"it holds {with_article(kind.__name__)}, which is not a JSON value")
        if size > MAX_STATE_SIZE:
            raise _bad(f"it is larger than {MAX_STATE_SIZE} characters and values")


def tool_fingerprint(tool: Tool) -> str:
    """A digest of a tool's whole definition: what the model and the person were shown
    (name, description, parameters) and every flag that decides how it runs."""
    definition = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": tool.strict,
        "read_only": tool.read_only,
        "destructive": tool.destructive,
        "requires_confirmation": tool.requires_confirmation,
        "idempotent": tool.idempotent,
        "timeout": tool.timeout,
        "return_direct": tool.return_direct,
        "max_result_chars": tool.max_result_chars,
        "tags": sorted(tool.tags),
        "coerce": tool.coerce,
        "flatten": tool.flatten,
        "title": tool.title,
    }
    if tool.examples:  # shown to the model: part of what was approved (none: as before)
        definition["examples"] = list(tool.examples)
    if tool.scopes:  # only when set: the digests of tools without scopes stay as they were
        definition["scopes"] = sorted(tool.scopes)
    return "sha256:" + hashlib.sha256(canonical(definition)).hexdigest()


def call_digest(call_id: str, tool_name: str, arguments: Any, fingerprint: str) -> str:
    """`PendingCall.digest`: the call id, the tool's name, the canonical arguments and the
    tool's definition (`tool_fingerprint`), bound together."""
    bound = {"call_id": call_id, "tool_name": tool_name, "arguments": arguments}
    return "sha256:" + hashlib.sha256(canonical({**bound, "tool": fingerprint})).hexdigest()


def with_digests(paused: PausedRound, fingerprints: Mapping[str, str]) -> list[PendingCall]:
    """Give each pending call of `paused` its digest; the pending calls, in order."""
    for index, p in paused.pending.items():
        digest = call_digest(p.call_id, p.tool_name, p.arguments, fingerprints[p.call_id])
        paused.pending[index] = dataclasses.replace(p, digest=digest)
    return list(paused.pending.values())


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
        }
        for p in (paused.pending.values() if paused is not None else ())
    ]
    state["turn"] = None if turn is None or paused is None else _turn_json(turn, paused, output)
    state["discovered"] = list(discovered or ())
    if conversation_id:
        state["conversation_id"] = conversation_id
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
    if type(version) is not int or version not in _READS:
        if type(version) is int and version in _OLD_VERSIONS:
            raise _bad(_OLD_VERSIONS[version])
        shown = repr(version)[:40]
        raise _bad(f"version {shown}; this toolreg reads version {VERSION} (and 2)")
    sid = _get(state, "id", str)
    status = _get(state, "status", str)
    if status == "resumed":
        raise ConversationStateError(f"the conversation state {sid[:64]} was resumed already")
    _verify(state, keys)
    if status not in ("ready", "approval_required"):
        raise _bad(f"unknown status {status!r}")
    options = copy_json(_get(state, "options", dict))
    if version == 2:  # before tool search: none was asked for, nothing was found
        options.setdefault("tool_search", None)
    defaults = ConversationOptions().saved()
    for name in _ADDED_LATER:  # states from before these options existed get the default
        options.setdefault(name, defaults[name])
    messages = copy_json(_get(state, "messages", list))
    for message in messages:
        _check_message(message)
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
    if turn is not None and not 0 <= turn.tool_rounds <= turn.calls_made:
        raise _bad("its turn counts more tool rounds than model calls")
    rounds = options.get("max_rounds")
    if turn is not None and type(rounds) is int and turn.tool_rounds >= rounds:
        # a round pauses before the turn's last model call, never at or after it
        raise _bad(f"its turn has {turn.tool_rounds} tool rounds, at least max_rounds={rounds}")
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
        raise _bad(f"its 'discovered' is not a list of at most {MAX_DISCOVERED} tool names")
    conversation = state.get("conversation_id", "")
    if conversation != "" and received_key(conversation) is None:
        raise _bad(f"its 'conversation_id' is not an id (text of 1 to {MAX_ID_CHARS} characters)")
    loaded = Loaded(sid, options, messages, previous, turn, output, schemas, list(discovered))
    loaded.conversation_id = conversation
    return loaded


_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "observation"})


def _check_message(message: Any) -> None:
    """A history entry as the loop and the providers read it: a message with a text `role`
    or an item with a text `type`, its content text, parts or null, its calls lists of
    objects."""
    if not isinstance(message, dict):
        raise _bad("a message is not an object")
    role, kind = message.get("role"), message.get("type")
    if (role is None and kind is None) or not all(
        v is None or isinstance(v, str) for v in (role, kind)
    ):
        raise _bad("a message has no text 'role' nor 'type'")
    if role is not None and role not in _ROLES:
        raise _bad(f"a message has the role {role[:40]!r}")
    for key in ("content", "name", "call_id", "tool_call_id", "arguments", "output"):
        value = message.get(key)
        kinds: Any = (str, list) if key == "content" else str
        if key == "arguments" and kind == "tool_search_call":
            kinds = (str, dict)  # the Responses API's tool search sends an object
        if value is not None and not isinstance(value, kinds):
            raise _bad(f"a message's {key!r} is neither text nor null")
    calls = message.get("tool_calls")
    if calls is not None and (
        not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls)
    ):
        raise _bad("a message's 'tool_calls' are not a list of objects")
    for call in [*(calls or ()), message]:
        function = call.get("function_call" if call is message else "function")
        if function is not None and not isinstance(function, dict):
            raise _bad("a message has a function call that is not an object")


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
    turn_id = data.get("turn_id", "")
    if turn_id != "" and received_key(turn_id) is None:
        raise _bad(f"its turn's 'turn_id' is not an id (text of 1 to {MAX_ID_CHARS} characters)")
    turn.turn_id = turn_id or new_id()
    retry = data.get("retry_keys", [])
    if not isinstance(retry, list) or not all(
        isinstance(e, list)
        and len(e) == 3
        and all(isinstance(v, str) for v in e)
        and received_key(e[2]) is not None
        for e in retry
    ):
        raise _bad("its turn's 'retry_keys' are not [tool, arguments, key] triples")
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
            raise _bad("its round's results do not match its calls")
        if (result.call_id, result.tool_name) != (calls[index].call_id, calls[index].name):
            raise _bad(f"result {index + 1} of its round is not for call {index + 1}")
        results[index] = result
    waiting = _get(data, "waiting", list, "the round")
    if len(waiting) != len(pending) or not pending:
        raise _bad("its pending calls do not match its round")
    paused = PausedRound(calls, results, {})
    for index, entry in zip(waiting, pending):
        if (
            type(index) is not int
            or not 0 <= index < len(calls)
            or index in results
            or index in paused.pending
        ):
            raise _bad("its pending calls do not match its round")
        call_id = _get(entry, "call_id", str, "a pending call")
        name = _get(entry, "tool_name", str, "a pending call")
        arguments = copy_json(_get(entry, "arguments", dict, "a pending call"))
        digest = _get(entry, "digest", str, "a pending call")
        fingerprint = _get(entry, "tool", str, "a pending call")
        if any(p.call_id == call_id for p in paused.pending.values()):
            raise _bad(f"two pending calls have the id {call_id[:64]!r}")
        if calls[index].call_id != call_id or calls[index].name != name:
            raise _bad(f"the pending call {call_id[:64]!r} is not the call of its round")
        if call_digest(call_id, name, arguments, fingerprint) != digest:
            raise _bad(f"the pending call {call_id[:64]!r} does not match its digest")
        paused.pending[index] = PendingCall(call_id, name, arguments, digest)
    if set(results) | set(paused.pending) != set(range(len(calls))):
        raise _bad("its round has calls that are neither done nor pending")
    return paused


def check_round(
    paused: PausedRound,
    history: list[Json],
    rounds: int,
    fmt: Format,
    check: Callable[[str, Any], dict[str, Any]],
) -> None:
    """A paused round read from a state must be the calls of the last assistant message in
    its history (same order, ids, names and arguments), and each pending call's arguments
    must be what `check` (dispatch's validation, run now) makes of that message's.
    Otherwise the state was edited: `ConversationStateError`."""
    made = _calls_in_history(history, fmt)
    if len(made) != len(paused.calls):
        raise _bad("its round is not the calls of the last assistant message in its history")
    ids = [c.call_id for c in made]
    for index, (saved, sent) in enumerate(zip(paused.calls, made)):
        own_id = f"toolreg_{rounds}_{index}"  # the loop's, for a call without a usable id
        unusable = (
            not isinstance(sent.call_id, str) or not sent.call_id or ids.count(sent.call_id) > 1
        )
        same_id = saved.call_id == sent.call_id or (unusable and saved.call_id == own_id)
        if not same_id or saved.name != sent.name or not _same_arguments(saved, sent):
            raise _bad(f"call {index + 1} of its round is not the one in its history (the model's)")
    for index, pending in paused.pending.items():
        try:
            checked = check(pending.tool_name, made[index].arguments)
        except ToolCallError as err:
            raise _bad(
                f"the pending call {pending.call_id[:64]!r} has arguments its tool refuses "
                f"now ({err.message})"
            ) from None
        if canonical(checked) != canonical(pending.arguments):
            raise _bad(
                f"the pending call {pending.call_id[:64]!r} has other arguments than the "
                "model's call in its history"
            )


def _calls_in_history(history: list[Json], fmt: Format) -> list[ToolCall]:
    """The calls of the model's last answer: the entries after the last user message or
    tool answer (one assistant message, or the Responses API's output items)."""
    start = len(history)
    while start > 0 and not _ends_a_round(history[start - 1]):
        start -= 1
    tail = history[start:]
    if any(entry.get("role", "assistant") != "assistant" for entry in tail):
        raise _bad("the calls of its round are not in an assistant message")
    try:
        if fmt.dialect is not None and fmt.dialect.api == "responses":
            return fmt.parse_calls({"output": tail})
        return [c for entry in tail for c in fmt.parse_calls(entry)]
    except ConversationError:
        raise _bad("the calls in its history are malformed") from None


def _ends_a_round(entry: Json) -> bool:
    return entry.get("role") in (
        "user",
        "system",
        "developer",
        "tool",
        "function",
        "observation",
    ) or (entry.get("type") == "function_call_output")


def _same_arguments(saved: ToolCall, sent: ToolCall) -> bool:
    """The same arguments, compared decoded; the history holds `{}` for arguments that were
    no JSON object (see `loop._repair_arguments`)."""
    mine, theirs = _decoded(saved.arguments), _decoded(sent.arguments)
    if not isinstance(mine, dict) and theirs == {}:
        return True
    try:
        return canonical(mine) == canonical(theirs)
    except (TypeError, ValueError):
        return False


def _decoded(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return strict_decoder.decode(arguments)
        except (ValueError, RecursionError):
            return arguments
    return arguments


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
    outcome = data.get("outcome", "completed")
    if outcome not in OUTCOMES:
        raise _bad(f"a result's 'outcome' is not one of {', '.join(OUTCOMES)}")
    key = data.get("idempotency_key")
    if key is not None and received_key(key) is None:
        raise _bad("a result's 'idempotency_key' is not a key")
    found = data.get("found")
    if found is not None and (
        not isinstance(found, list)
        or len(found) > MAX_FOUND
        or not all(isinstance(n, str) for n in found)
    ):
        raise _bad(f"a result's 'found' is not a list of at most {MAX_FOUND} tool names")
    return ToolResult(
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


# -- options ------------------------------------------------------------------------------


SAVED_OPTIONS: dict[str, Callable[[Any], bool]] = saved_checks()
"""The options a state saves, each with the type check its value passes (the values are
checked again by the constructor): read from `ConversationOptions`."""

CONSTRUCTOR_OPTIONS = frozenset(
    {*(f.name for f in dataclasses.fields(ConversationOptions)), *COLLABORATORS}
)
# request keys the loop writes itself: a saved request option may not set them
_LOOP_KEYS = frozenset(
    {"messages", "input", "functions", "function_call", "previous_response_id", "stream"}
)
_ADDED_LATER = (
    "deferred_search",
    "tool_retries",
    "max_calls",
    "max_tool_calls",
    "on_call_limit",
    "max_concurrency",
)
_LIMITS = narrowing()  # saved limits narrow, each with whether None (no limit) is allowed


def saved_options(options: Json) -> tuple[str, Json, Json]:
    """The model, the constructor options and the request options of a state, each checked;
    `ConversationStateError` for anything else. A saved request option never names a
    constructor option, nor a request key the loop writes itself."""
    given = dict(options)
    model = given.pop("model", None)
    request = given.pop("request_options", None)
    if (
        not isinstance(model, str)
        or not isinstance(request, dict)
        or set(given) != set(SAVED_OPTIONS)
    ):
        raise _bad("its options are not the options export_state() writes")
    wrong = [k for k, check in SAVED_OPTIONS.items() if not check(given[k])]
    if wrong:
        raise _bad(f"its option(s) {', '.join(wrong)} have values of the wrong type")
    clash = sorted(set(request) & (CONSTRUCTOR_OPTIONS | _LOOP_KEYS))
    if clash:
        raise _bad(f"its request options set {', '.join(clash)}, which no request option may set")
    try:
        given["tool_search"] = ToolSearch.from_json(given["tool_search"])
    except UsageError as err:
        raise _bad(str(err)) from None
    return model, given, request


def resumed_options(
    saved: Json, request: Json, given: Mapping[str, Any], registry: Toolset
) -> tuple[Json, Json]:
    """The constructor and request options `from_state` builds with: the application's
    (`given`) override the state's, except that a saved tool filter and saved limits can
    only narrow the application's (a filter offers the tools both filters offer; a limit
    is the smaller of the two)."""
    options = {**saved}
    requested = {**request}
    for name, value in given.items():
        (options if name in CONSTRUCTOR_OPTIONS else requested)[name] = value
    for limit in _LIMITS:
        mine, theirs = given.get(limit), saved[limit]
        if limit in given and check_saved(limit, mine):
            bounded = [v for v in (mine, theirs) if v is not None]
            options[limit] = min(bounded) if bounded else None
    if isinstance(given.get("max_calls"), Mapping):
        options["max_calls"] = narrowed_calls(given["max_calls"], saved["max_calls"])
    if given.get("tools") is not None and saved["tools"] is not None:
        options["tools"] = _narrowed_filter(given["tools"], saved["tools"], registry)
    return options, requested


def _narrowed_filter(app: Any, saved: list[str], registry: Toolset) -> Any:
    wanted = [app] if isinstance(app, str) else app
    if not isinstance(wanted, (list, tuple)):
        return app  # the constructor says what is wrong with it
    held = registry.tools()
    known = {*(tool.name for tool in held), *(tag for tool in held for tag in tool.tags)}
    if not all(isinstance(w, str) and w in known for w in wanted):
        return app

    def offers(tool: Tool, entries: Any) -> bool:
        return tool.name in entries or bool(tool.tags & entries)

    app_set, saved_set = set(wanted), set(saved)
    return [t.name for t in held if offers(t, app_set) and offers(t, saved_set)]


# -- decisions ----------------------------------------------------------------------------


def verdicts(
    paused: PausedRound,
    decisions: Any,
    validate: Callable[[PendingCall, Any], dict[str, Any]],
) -> dict[str, Verdict]:
    """One `Verdict` per pending call from `decisions` ({call id or digest: True | False |
    "reason" | {"arguments": {...}}}); edited arguments pass `validate`. A `UsageError`
    says what is wrong before anything runs; a digest that is no pending call's (the call
    shown was changed since, or is another state's) is a `ConversationStateError`."""
    if not isinstance(decisions, Mapping):
        raise UsageError("resume() takes a dict: {call_id: True | False | reason | {...}}")
    waiting = {p.call_id: p for p in paused.pending.values()}
    by_digest = {p.digest: p.call_id for p in paused.pending.values() if p.digest}
    decided: dict[str, Any] = {}
    for key, decision in decisions.items():
        call_id = key if key in waiting else by_digest.get(key)
        if call_id is None and isinstance(key, str) and key.startswith("sha256:"):
            raise ConversationStateError(
                f"resume(): no pending call has the digest {key[:80]}: the call it was "
                "computed for was changed since, or it belongs to another state"
            )
        if call_id is None:
            continue
        if call_id in decided:
            raise UsageError(f"resume(): two decisions for {call_id!r} (its id and its digest)")
        decided[call_id] = decision
    unknown = [repr(k) for k in decisions if k not in waiting and k not in by_digest]
    missing = [repr(k) for k in waiting if k not in decided]
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
        decision = decided[call_id]
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
