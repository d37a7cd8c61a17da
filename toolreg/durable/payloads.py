"""What a durable turn's steps record, as JSON, and how it is read back.

Each step's output is `{"v": 1, "inputs": "<sha256 of its inputs>", ...}` with, by kind:

- a model request: `"answer"` (the decoded answer: its message, history entries, text,
  finish reason, usage, id, model) and `"deltas"` (the text deltas a streamed answer gave,
  so that a replay gives the same `TextDelta` events);
- a tool call: `"tool"` (the fingerprint of the tool's definition, or None for a name no
  tool has) and `"result"` (the `ToolResult`: its text, outcome, error kind, idempotency
  key, time taken, and its value and arguments when they are JSON of at most
  `MAX_VALUE_CHARS`; never its exception);
- a use of the state store: `"found"` (a load: the state and its version, or None),
  `"claimed"` (a claim: True or False) or `"version"` (a save: the version written);
- `"raised"`, for a step that failed with one of toolreg's errors: its class and message
  (and the fields a caller reads), raised again when the step is replayed.

A turn's output is its `Reply` as JSON (`reply_json`); `reply_of` reads it back.
Everything read back is data from storage and is checked: a payload that is not one of
these is a `DurableReplayError`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from ..conversation.providers.base import Answer
from ..conversation.reply import STOP_REASONS, PendingCall, Reply, Usage
from ..errors import (
    ConversationError,
    ConversationStateError,
    StateConflictError,
    StateStoreError,
    ToolCallError,
    ToolregError,
    ToolTimeoutError,
    UnknownToolError,
    UsageError,
)
from ..result import OUTCOMES, ToolResult
from ..stores.base import StoredState
from .base import DurableReplayError, Json

__all__ = [
    "MAX_VALUE_CHARS",
    "VERSION",
    "answer_json",
    "answer_of",
    "digest",
    "error_json",
    "error_of",
    "is_toolreg_error",
    "reply_json",
    "result_json",
    "result_of",
    "stored_json",
    "stored_of",
]

VERSION = 1
MAX_VALUE_CHARS = 65_536
"""The longest JSON text of a tool's value (or arguments) a step records; a longer value,
or one that is not JSON, is replayed as None."""


def digest(inputs: Json) -> str:
    """The SHA-256 of a step's inputs as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _json_or_none(value: Any) -> Json:
    """`value` as JSON values (a copy) when it is JSON of at most `MAX_VALUE_CHARS`."""
    if value is None or isinstance(value, (bool, str)):
        return value if not isinstance(value, str) or len(value) <= MAX_VALUE_CHARS else None
    if isinstance(value, (int, float)):
        return value if not isinstance(value, float) or math.isfinite(value) else None
    if not isinstance(value, (dict, list)):
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return json.loads(text) if len(text) <= MAX_VALUE_CHARS else None


# -- model answers ------------------------------------------------------------------------


def answer_json(answer: Answer) -> Json:
    """A provider's `Answer` as JSON (every field of it is JSON already)."""
    return {
        "message": answer.message,
        "entries": list(answer.entries),
        "text": answer.text,
        "finish_reason": answer.finish_reason,
        "usage": None if answer.usage is None else dict(answer.usage),
        "id": answer.id,
        "model": answer.model,
        "renamed": answer.renamed,
    }


def answer_of(data: Json, where: _Where) -> Answer:
    """The `Answer` a model step recorded."""
    if not isinstance(data, dict):
        raise where.bad("its answer is not an object")
    message, entries, text = data.get("message"), data.get("entries"), data.get("text")
    if not isinstance(message, dict) or not isinstance(entries, list) or not isinstance(text, str):
        raise where.bad("its answer has no message, entries and text")
    usage = data.get("usage")
    return Answer(
        message=message,
        entries=tuple(entries),
        text=text,
        finish_reason=_str_or_none(data.get("finish_reason")),
        usage=usage if isinstance(usage, dict) else None,
        id=_str_or_none(data.get("id")),
        model=_str_or_none(data.get("model")),
        renamed=data.get("renamed") is True,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- tool results -------------------------------------------------------------------------


def result_json(result: ToolResult) -> Json:
    """A `ToolResult` as JSON (see the module: its exception is never recorded)."""
    out: dict[str, Any] = {
        "tool_name": result.tool_name,
        "call_id": result.call_id,
        "ok": result.ok,
        "content": result.content,
        "outcome": result.outcome,
        "idempotency_key": result.idempotency_key,
        "return_direct": result.return_direct,
        "elapsed": result.elapsed if math.isfinite(result.elapsed) else 0.0,
        "value": _json_or_none(result.value),
        "arguments": _json_or_none(result.arguments),
    }
    error = result.error
    if error is not None:
        out["error"] = {"kind": error.kind, "message": error.message}
        if isinstance(error, ToolTimeoutError):
            out["error"]["timeout"] = error.timeout
    return out


def _error_classes() -> dict[str, type[ToolCallError]]:
    """Every `ToolCallError` class by its `kind` (read from the classes themselves)."""
    found: dict[str, type[ToolCallError]] = {}
    pending: list[type[ToolCallError]] = [ToolCallError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.kind, cls)
        pending.extend(cls.__subclasses__())
    return found


def result_of(data: Json, where: _Where) -> ToolResult:
    """The `ToolResult` a tool step recorded."""
    if not isinstance(data, dict):
        raise where.bad("its result is not an object")
    name, content, ok = data.get("tool_name"), data.get("content"), data.get("ok")
    if not isinstance(name, str) or not isinstance(content, str) or not isinstance(ok, bool):
        raise where.bad("its result has no tool name, content and ok")
    outcome = data.get("outcome")
    if outcome not in OUTCOMES:
        raise where.bad(f"its result's outcome is not one of {', '.join(OUTCOMES)}")
    error: ToolCallError | None = None
    recorded = data.get("error")
    if isinstance(recorded, dict):
        kind, message = recorded.get("kind"), recorded.get("message")
        text = message if isinstance(message, str) else content
        cls = _ERRORS.get(kind if isinstance(kind, str) else "", ToolCallError)
        if cls is ToolTimeoutError:
            limit = recorded.get("timeout")
            seconds = float(limit) if isinstance(limit, (int, float)) else 0.0
            error = ToolTimeoutError(text, tool_name=name, timeout=seconds)
        elif cls is UnknownToolError:
            error = UnknownToolError(text, tool_name=name)
        else:
            error = cls(text, tool_name=name)
    elif not ok:
        raise where.bad("its result failed without an error")
    elapsed = data.get("elapsed")
    arguments = data.get("arguments")
    return ToolResult(
        tool_name=name,
        call_id=_str_or_none(data.get("call_id")),
        ok=ok,
        content=content,
        value=data.get("value"),
        error=error,
        return_direct=data.get("return_direct") is True,
        elapsed=float(elapsed) if isinstance(elapsed, (int, float)) else 0.0,
        arguments=arguments if isinstance(arguments, dict) else None,
        outcome=outcome,
        idempotency_key=_str_or_none(data.get("idempotency_key")),
    )


# -- the state store ----------------------------------------------------------------------


def stored_json(found: StoredState | None) -> Json:
    return None if found is None else {"state": found.state, "version": found.version}


def stored_of(data: Json, where: _Where) -> StoredState | None:
    if data is None:
        return None
    state = data.get("state") if isinstance(data, dict) else None
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(state, dict) or not isinstance(version, int) or isinstance(version, bool):
        raise where.bad("its stored state has no state object and version")
    return StoredState(state, version)


# -- errors -------------------------------------------------------------------------------


def error_json(error: ToolregError) -> Json:
    """One of toolreg's errors, for a step that raised it: its class's name, its message
    and the fields its callers read."""
    out: dict[str, Any] = {"type": type(error).__name__, "message": _message(error)}
    if isinstance(error, ConversationError):
        out["status_code"] = error.status_code
        out["endpoint"] = error.endpoint
    elif isinstance(error, StateConflictError):
        out.update(id=error.id, expected=error.expected, found=error.found)
    elif isinstance(error, StateStoreError):
        out.update(store=error.store, operation=error.operation, id=error.id)
    elif isinstance(error, DurableReplayError):
        out["step"] = error.step
    return out


def _message(error: BaseException) -> str:
    """The error's own message (not its `__str__`, which may add to it)."""
    return str(error.args[0]) if error.args else str(error)


def is_toolreg_error(name: str) -> bool:
    """Whether `name` is the name of one of toolreg's error classes."""
    return name in _TOOLREG_ERRORS


def error_of(data: Json, where: _Where) -> ToolregError:
    """The error a step recorded (its class, when it is one of these; else its nearest
    base that is: `ConversationStateError`, `UsageError` or `ToolregError`)."""
    if not isinstance(data, dict) or not isinstance(data.get("message"), str):
        raise where.bad("its error has no message")
    kind, message = data.get("type"), data["message"]
    if kind == "ConversationError":
        code = data.get("status_code")
        return ConversationError(
            message,
            status_code=code if isinstance(code, int) else None,
            endpoint=_str_or_none(data.get("endpoint")),
        )
    if kind == "StateConflictError":
        expected, found = data.get("expected"), data.get("found")
        return StateConflictError(
            message,
            id=str(data.get("id")),
            expected=expected if isinstance(expected, int) else None,
            found=found if isinstance(found, int) else None,
        )
    if kind == "StateStoreError":
        return StateStoreError(
            message,
            store=str(data.get("store")),
            operation=str(data.get("operation")),
            id=_str_or_none(data.get("id")),
        )
    if kind == "DurableReplayError":
        step = data.get("step")
        return DurableReplayError(message, turn_id=where.turn_id, step=str(step))
    if kind == "ConversationStateError":
        return ConversationStateError(message)
    if kind == "UsageError":
        return UsageError(message)
    return ToolregError(message)


# -- replies ------------------------------------------------------------------------------


def reply_json(reply: Reply) -> Json:
    """A turn's `Reply` as JSON (its `output` is read again from its text)."""
    usage = reply.usage
    return {
        "text": reply.text,
        "messages": reply.messages,
        "tool_results": [result_json(r) for r in reply.tool_results],
        "rounds": reply.rounds,
        "usage": [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens],
        "stop_reason": reply.stop_reason,
        "pending": [
            {
                "call_id": p.call_id,
                "tool_name": p.tool_name,
                "arguments": p.arguments,
                "digest": p.digest,
                "idempotency_key": p.idempotency_key,
            }
            for p in reply.pending
        ],
        "over_history_limit": reply.over_history_limit,
    }


def reply_of(data: Json, output: Any, where: _Where) -> Reply:
    """The `Reply` a turn recorded; `output` (an `OutputSpec`, or None) reads its output."""
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise where.bad("its reply has no text")
    messages, results = data.get("messages"), data.get("tool_results")
    usage, reason = data.get("usage"), data.get("stop_reason")
    if not isinstance(messages, list) or not isinstance(results, list):
        raise where.bad("its reply has no messages and tool results")
    if reason not in STOP_REASONS:
        raise where.bad("its reply's stop reason is not one of STOP_REASONS")
    if not (isinstance(usage, list) and len(usage) == 3 and all(type(n) is int for n in usage)):
        raise where.bad("its reply's usage is not three counts")
    pending = []
    for p in data.get("pending") or []:
        if not isinstance(p, dict) or not isinstance(p.get("arguments"), dict):
            raise where.bad("a pending call of its reply is not an object")
        pending.append(
            PendingCall(
                str(p.get("call_id")),
                str(p.get("tool_name")),
                p["arguments"],
                digest=str(p.get("digest") or ""),
                idempotency_key=_str_or_none(p.get("idempotency_key")),
            )
        )
    text = data["text"]
    value = None
    if output is not None and reason not in ("approval_required",):
        value, problems = output.parse(text)
        if problems:
            value = None
    rounds = data.get("rounds")
    return Reply(
        text=text,
        messages=messages,
        tool_results=[result_of(r, where) for r in results],
        rounds=rounds if type(rounds) is int else 0,
        usage=Usage(*usage),
        stop_reason=reason,
        output=value,
        pending=pending,
        over_history_limit=data.get("over_history_limit") is True,
    )


class _Where:
    """Where a payload was read from, for the error that says it is not usable."""

    __slots__ = ("step", "turn_id")

    def __init__(self, turn_id: str, step: str) -> None:
        self.turn_id = turn_id
        self.step = step

    def bad(self, problem: str) -> DurableReplayError:
        return DurableReplayError(
            f"durable turn {self.turn_id!r}: the recorded output of step {self.step!r} is not "
            f"one toolreg wrote: {problem}",
            turn_id=self.turn_id,
            step=self.step,
        )


def where(turn_id: str, step: str) -> _Where:
    """A `_Where` (the readers' last argument)."""
    return _Where(turn_id, step)


_ERRORS = _error_classes()


def _all_errors() -> frozenset[str]:
    found, pending = set(), [ToolregError]
    while pending:
        cls = pending.pop()
        found.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return frozenset(found)


_TOOLREG_ERRORS = _all_errors()


def check_payload(payload: Json, inputs: str, where: _Where) -> Mapping[str, Any]:
    """A step's recorded output, checked: toolreg's, and recorded for these inputs (their
    digest); else `DurableReplayError`."""
    if not isinstance(payload, dict) or payload.get("v") != VERSION:
        raise where.bad("it is not a step payload of version 1")
    if payload.get("inputs") != inputs:
        raise DurableReplayError(
            f"durable turn {where.turn_id!r}: step {where.step!r} was recorded for other "
            "inputs than the turn now gives it (the application's prompt, model, tools or "
            "options changed since); finish the turn with the code that started it, or "
            "cancel it",
            turn_id=where.turn_id,
            step=where.step,
        )
    return payload
