"""The tool-calling loop as a sans-I/O generator, shared by the sync and async drivers.

The generator yields `("model", request_kwargs)` and receives the normalized response
(see `stream`), or yields `("tools", [ToolCall, ...])` and receives the `ToolResult`s in
the same order. It returns the `Reply`. The drivers in `conversation` only do the I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import (
    ConversationError,
    RepeatedCallError,
    ToolCallError,
    ToolDeniedError,
    UsageError,
)
from ..formats import Dialect, Format
from ..result import ToolCall, ToolResult
from .history import CALL_KEYS, trim_history
from .output import OutputSpec
from .reply import (
    Hooks,
    ModelCallEvent,
    ModelResponseEvent,
    Reply,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
)

__all__ = ["LoopSettings", "Step", "run_loop"]

Step = tuple[Literal["model", "tools"], Any]
Message = dict[str, Any]
_STOP_REASONS = {"length": "length", "content_filter": "content_filter"}
_REPEAT_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class LoopSettings:
    model: str
    fmt: Format  # one with a dialect: see `dialect`
    tools: Callable[[], list[dict[str, Any]]]  # the definitions to offer, freshly exported
    tool_choice: str = "auto"
    max_rounds: int = 8
    final_call: Literal["tool_choice_none", "drop_tools"] = "tool_choice_none"
    assistant_content: Literal["empty", "null", "omit"] = "empty"
    request_options: dict[str, Any] = field(default_factory=dict)
    output: OutputSpec | None = None
    output_retries: int = 2
    max_history_messages: int | None = None
    max_history_chars: int | None = None
    hooks: Hooks = field(default_factory=Hooks)

    @property
    def dialect(self) -> Dialect:
        dialect = self.fmt.dialect
        if dialect is None:  # the drivers only take formats from DIALECTS
            raise UsageError(f"the {self.fmt.name} format has no conversation dialect")
        return dialect


@dataclass(slots=True)
class _State:
    history: list[Message]
    results: list[ToolResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    calls_made: int = 0
    tool_rounds: int = 0
    final: bool = False
    limit_reached: bool = False
    after_observations: bool = False
    retries_left: int = 0
    recent: list[dict[tuple[str, str], str]] = field(default_factory=list)
    stop_requested: bool = False


def run_loop(s: LoopSettings, messages: list[Message]) -> Generator[Step, Any, Reply]:
    state = _State(history=list(messages), retries_left=s.output_retries)
    while True:
        if state.tool_rounds >= s.max_rounds and not state.final:
            state.final = state.limit_reached = True
        response = yield ("model", _request(s, state))
        state.calls_made += 1
        state.usage = state.usage.add(response.get("usage"))
        message, finish = response["message"], response.get("finish_reason")
        s.hooks.emit("after_model_call", ModelResponseEvent(state.calls_made, message, finish))
        calls = [] if state.final else s.fmt.parse_calls(message)
        if calls:
            state.history.append(_echo(s, message))
            answered = _precheck(s, state, calls)
            to_run = [c for i, c in enumerate(calls) if i not in answered]
            ran: list[ToolResult] = (yield ("tools", to_run)) if to_run else []
            results = _merge(calls, answered, ran)
            for result in results:
                s.hooks.emit("after_tool_call", ToolResultEvent(state.calls_made, result))
            reply = _after_tools(s, state, calls, results)
            if reply is not None:
                return reply
            continue
        text = message.get("content") or ""
        if not text and state.after_observations and not state.final:
            state.final = True  # a server that cannot speak while tools are offered
            continue
        state.history.append(_echo(s, message, drop_calls=True))
        reply = _answer(s, state, text, finish)
        if reply is not None:
            return reply


def _request(s: LoopSettings, state: _State) -> dict[str, Any]:
    sent = list(state.history)  # a copy: the request (and its hook event) must not grow later
    if s.max_history_messages is not None or s.max_history_chars is not None:
        sent = trim_history(sent, s.max_history_messages, s.max_history_chars)
    request: dict[str, Any] = {**s.request_options, "model": s.model, "messages": sent}
    tools = s.tools()
    if tools and not (state.final and s.final_call == "drop_tools"):
        request[s.dialect.tools_key] = tools
        request[s.dialect.choice_key] = s.dialect.choice(_tool_choice(s, state))
    if s.output is not None:
        request["response_format"] = s.output.response_format()
    s.hooks.emit("before_model_call", ModelCallEvent(state.calls_made + 1, request))
    return request


def _tool_choice(s: LoopSettings, state: _State) -> str:
    """The choice to send: "none" when final; a forced one (name, "required") on call 1 only."""
    if state.final:
        return "none"
    if state.calls_made > 0 and s.tool_choice not in ("auto", "none"):
        return "auto"
    return s.tool_choice


def _echo(s: LoopSettings, message: Message, drop_calls: bool = False) -> Message:
    """The assistant message as received; empty content normalised for picky servers."""
    out = dict(message)
    if drop_calls:  # every kind of call, not only the dialect's: none may stay unanswered
        for key in CALL_KEYS:
            out.pop(key, None)
    has_calls = any(out.get(k) for k in s.dialect.call_keys)
    if has_calls and not out.get("content"):
        if s.assistant_content == "empty":
            out["content"] = ""
        elif s.assistant_content == "null":
            out["content"] = None
        else:
            out.pop("content", None)
    elif out.get("content") is None:
        out["content"] = ""
    return out


def _call_key(call: ToolCall) -> tuple[str, str]:
    args = call.arguments
    try:
        decoded = json.loads(args) if isinstance(args, (str, bytes)) else args
        text = json.dumps(decoded, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = str(args)
    return call.name, text


def _precheck(s: LoopSettings, state: _State, calls: list[ToolCall]) -> dict[int, ToolResult]:
    """Answers for calls that must not run: vetoed by a hook, or repeated for 3 rounds."""
    answered: dict[int, ToolResult] = {}
    for i, call in enumerate(calls):
        verdict = s.hooks.emit("before_tool_call", ToolCallEvent(state.calls_made, call))
        if verdict is False or isinstance(verdict, str):
            why = verdict or f"Tool '{call.name}' was not run: the application blocked it."
            answered[i] = _synthetic(call, ToolDeniedError(why, tool_name=call.name))
            continue
        key = _call_key(call)
        previous = state.recent[-(_REPEAT_ROUNDS - 1) :]
        if len(previous) == _REPEAT_ROUNDS - 1 and all(key in r for r in previous):
            answered[i] = _synthetic(call, _repeated(call, previous[-1][key]))
            state.stop_requested = True
    return answered


def _repeated(call: ToolCall, earlier: str) -> RepeatedCallError:
    return RepeatedCallError(
        f"Tool '{call.name}' was not run again: the same call with the same arguments was "
        f"already made in each of the last {_REPEAT_ROUNDS - 1} rounds. Its result was: "
        f"{earlier}\nDo not repeat it; answer with what you have.",
        tool_name=call.name,
    )


def _synthetic(call: ToolCall, error: ToolCallError) -> ToolResult:
    return ToolResult(
        tool_name=call.name, call_id=call.call_id, ok=False, content=error.message, error=error
    )


def _merge(
    calls: list[ToolCall], answered: dict[int, ToolResult], ran: list[ToolResult]
) -> list[ToolResult]:
    pending = iter(ran)
    return [answered[i] if i in answered else next(pending) for i in range(len(calls))]


def _after_tools(
    s: LoopSettings, state: _State, calls: list[ToolCall], results: list[ToolResult]
) -> Reply | None:
    state.history.extend(s.fmt.observation(r) for r in results)
    state.results.extend(results)
    state.tool_rounds += 1
    state.after_observations = True
    keys = {_call_key(c): r.content for c, r in zip(calls, results)}
    state.recent = [*state.recent[-(_REPEAT_ROUNDS - 1) :], keys]
    if results and all(r.ok and r.return_direct for r in results):
        text = "\n\n".join(r.content for r in results)
        return _reply(state, text, "return_direct")
    if state.stop_requested:
        state.final = state.limit_reached = True
    return None


def _answer(s: LoopSettings, state: _State, text: str, finish: str | None) -> Reply | None:
    reason = "max_rounds" if state.limit_reached else _STOP_REASONS.get(finish or "", "answer")
    if s.output is None:
        return _reply(state, text, reason)
    value, problems = s.output.parse(text)
    if not problems:
        return _reply(state, text, reason, value)
    if state.retries_left <= 0:
        raise ConversationError(
            f"the answer did not match the output type after {s.output_retries} retries: "
            + "; ".join(problems)
        )
    state.retries_left -= 1
    state.final = False
    state.history.append(
        {
            "role": "user",
            "content": "Your answer does not match the required JSON schema: "
            + "; ".join(problems)
            + ". Answer again with only the corrected JSON.",
        }
    )
    return None


def _reply(state: _State, text: str, reason: str, output: Any = None) -> Reply:
    return Reply(
        text=text,
        messages=state.history,
        tool_results=state.results,
        rounds=state.calls_made,
        usage=state.usage,
        stop_reason=reason,
        output=output,
    )
