"""Policies around a turn's calls: retry budgets.

Everything here is counted from the turn's own results (`TurnState.results`, saved with a
paused turn), never from a counter of its own: a turn exported for approvals and resumed in
another process keeps its budgets exactly.

- **Retry budgets.** A call whose result asks the model to try again costs its tool one
  retry: invalid arguments (`invalid_json`, `invalid_arguments`) and a `ToolRetry` the tool
  raised (`retry`). A tool may have `retries` such results in a turn (its own
  `register_tool(retries=...)`, else the conversation's `tool_retries`); one more and the
  turn stops, `stop_reason="retry_limit"`. `ToolFailed` (`failed`) costs nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..result import ToolResult

__all__ = ["NARROWING", "RETRY_KINDS", "SAVED", "CallPolicy"]

RETRY_KINDS = frozenset({"invalid_json", "invalid_arguments", "retry"})
"""The error kinds that cost a tool one retry."""


def _no_budget(name: str) -> int | None:
    return None


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """A conversation's retry budget (the option of the same name).

    `budget_of(name)`: a tool's own `retries=` (None: the conversation's `tool_retries`)."""

    tool_retries: int | None = 2
    budget_of: Callable[[str], int | None] = _no_budget

    def __post_init__(self) -> None:
        _check_count("tool_retries", self.tool_retries, none="no retry limit")

    def to_json(self) -> dict[str, Any]:
        """The options as `export_state` saves them (the `SAVED` keys)."""
        return {
            "tool_retries": self.tool_retries,
        }

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


def _count_or_none(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0)


SAVED: dict[str, Callable[[Any], bool]] = {
    "tool_retries": _count_or_none,
}
"""The options `export_state` saves for the policies, each with the type check its value
passes (a state from before an option existed gets its default: `CallPolicy()`)."""
NARROWING = ("tool_retries",)
"""Saved limits that `from_state` only narrows (None: no limit)."""


def _check_count(key: str, value: Any, none: str | None = None) -> None:
    if value is None and none is not None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        also = f", or None for {none}" if none else ""
        raise UsageError(f"{key}={value!r}: a whole number >= 0{also}")
