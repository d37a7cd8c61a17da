"""Policies around a turn's calls: retry budgets and call limits.

Everything here is counted from the turn's own results (`TurnState.results`, saved with a
paused turn), never from a counter of its own: a turn exported for approvals and resumed in
another process keeps its budgets exactly.

- **Retry budgets.** A call whose result asks the model to try again costs its tool one
  retry: invalid arguments (`invalid_json`, `invalid_arguments`) and a `ToolRetry` the tool
  raised (`retry`). A tool may have `retries` such results in a turn (its own
  `register_tool(retries=...)`, else the conversation's `tool_retries`); one more and the
  turn stops, `stop_reason="retry_limit"`. `ToolFailed` (`failed`) costs nothing.
- **Call limits.** `max_calls={"search": 5}` per tool, `max_tool_calls=30` in all, per turn.
  Every call the model makes counts, except one refused by a limit. A call past a limit
  does not run: it is answered with the limit (`error_kind="call_limit"`), and then either
  the turn goes on (`on_call_limit="tell"`) or it stops after that round, with the results
  so far, `stop_reason="call_limit"` (`"stop"`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import CallLimitError, UsageError
from ..result import ToolCall, ToolResult

__all__ = ["RETRY_KINDS", "CallPolicy", "OnCallLimit", "narrowed_calls"]

OnCallLimit = Literal["tell", "stop"]

RETRY_KINDS = frozenset({"invalid_json", "invalid_arguments", "retry"})
"""The error kinds that cost a tool one retry."""
_ON_LIMIT = ("tell", "stop")
_TELL = " Answer with what you have."


def _no_budget(name: str) -> int | None:
    return None


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """A conversation's retry budget and call limits (the options of the same names).

    `budget_of(name)`: a tool's own `retries=` (None: the conversation's `tool_retries`)."""

    tool_retries: int | None = 2
    max_calls: Mapping[str, int] = field(default_factory=dict)
    max_tool_calls: int | None = None
    on_call_limit: OnCallLimit = "tell"
    budget_of: Callable[[str], int | None] = _no_budget

    def __post_init__(self) -> None:
        _check_count("tool_retries", self.tool_retries, none="no retry limit")
        _check_count("max_tool_calls", self.max_tool_calls, none="no limit")
        if not isinstance(self.max_calls, Mapping):
            raise UsageError(
                f"max_calls={self.max_calls!r}: a dict of tool name -> calls per turn, "
                'e.g. {"search": 5}'
            )
        for name, limit in self.max_calls.items():
            _check_count(f"max_calls[{name!r}]", limit)
        if self.on_call_limit not in _ON_LIMIT:
            raise UsageError(
                f'on_call_limit={self.on_call_limit!r}: "tell" (the model is told, the turn '
                'goes on) or "stop" (the turn stops with the results so far)'
            )
        object.__setattr__(self, "max_calls", dict(self.max_calls))  # the caller's stays theirs

    def check_names(self, known: Iterable[str]) -> None:
        """A `max_calls` entry for a tool the conversation does not have is a mistake."""
        names = list(known)
        registered = set(names)
        unknown = [n for n in self.max_calls if n not in registered]
        if unknown:
            raise UsageError(
                f"max_calls: {', '.join(map(repr, unknown))} is not a registered tool; "
                f"registered: {', '.join(names) or 'none'}"
            )

    # -- call limits ------------------------------------------------------------------------

    def counted(self, results: Iterable[ToolResult]) -> list[str]:
        """The tool names of the calls that count against the limits."""
        return [r.tool_name for r in results if r.error_kind != CallLimitError.kind]

    def over_limit(self, call: ToolCall, made: list[str]) -> ToolResult | None:
        """The answer to `call` when the calls `made` in this turn (their tool names) have
        used a limit up; None when it may run, and then it is added to `made`."""
        total = self.max_tool_calls
        limit = self.max_calls.get(call.name)
        if total is not None and len(made) >= total:
            why = f"this turn's limit of {total} tool calls is reached (max_tool_calls={total})"
        elif limit is not None and made.count(call.name) >= limit:
            why = f"this turn's limit of {limit} calls to it is reached (max_calls)"
        else:
            made.append(call.name)
            return None
        error = CallLimitError(
            f"Tool '{call.name}' was not run: {why}.{_TELL}", tool_name=call.name
        )
        return ToolResult(
            call.name,
            call.call_id,
            False,
            error.message,
            error=error,
            outcome="not_started",
            idempotency_key=call.idempotency_key,
        )

    def call_limit_stop(self, results: Iterable[ToolResult]) -> str | None:
        """With `on_call_limit="stop"`: why the turn stops after a round with these results
        (None: it goes on)."""
        if self.on_call_limit == "stop":
            for result in results:
                if result.error_kind == CallLimitError.kind:
                    return "Stopped: " + result.content.removesuffix(_TELL)
        return None

    # -- retry budgets ----------------------------------------------------------------------

    def budget(self, name: str) -> int | None:
        own = self.budget_of(name)
        return self.tool_retries if own is None else own

    def retries_spent(self, results: Iterable[ToolResult]) -> str | None:
        """Why the turn stops when a tool asked for more retries than its budget, in the
        turn's `results` so far (None: every tool is within its budget)."""
        spent = Counter(r.tool_name for r in results if r.error_kind in RETRY_KINDS)
        for name, count in spent.items():
            budget = self.budget(name)
            if budget is not None and count > budget:
                return (
                    f"Stopped: {count} calls to tool '{name}' in this turn had to be retried, "
                    f"more than its limit of {budget} (retries={budget})."
                )
        return None


def narrowed_calls(given: Mapping[str, Any], saved: Mapping[str, int]) -> dict[str, Any]:
    """`from_state`'s `max_calls`: every limit of either, the smaller where both set one."""
    out: dict[str, Any] = dict(saved)
    for name, limit in given.items():
        mine_valid = type(limit) is int and limit >= 0
        out[name] = min(limit, saved[name]) if name in saved and mine_valid else limit
    return out


def _check_count(key: str, value: Any, none: str | None = None) -> None:
    if value is None and none is not None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        also = f", or None for {none}" if none else ""
        raise UsageError(f"{key}={value!r}: a whole number >= 0{also}")
