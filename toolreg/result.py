"""`ToolCall` (what the model asked) and `ToolResult` (what dispatch answers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ToolCallError

__all__ = ["ToolCall", "ToolResult"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call requested by a model: a tool name, its arguments, and the provider's id."""

    name: str
    arguments: str | bytes | dict[str, Any] | None = None
    call_id: str | None = None


@dataclass(slots=True)
class ToolResult:
    """The outcome of one dispatched call.

    `content` is the text for the model. `value` is the tool's raw return value (when it
    ran). On failure `ok` is False and `error` holds the `ToolCallError` (its `kind` is
    one of `unknown_tool`, `invalid_json`, `invalid_arguments`, `denied`, `timeout`,
    `execution_error`, and `repeated` for a call the conversation loop refused to repeat;
    `error.message` equals `content`). `exception` keeps the tool's
    original exception for logging: it never reaches `content`.

    Not frozen, so that building one stays cheap on the hot path; treat it as read-only.
    """

    tool_name: str
    call_id: str | None
    ok: bool
    content: str
    value: Any = None
    error: ToolCallError | None = None
    exception: BaseException | None = field(default=None, repr=False)
    return_direct: bool = False
    elapsed: float = 0.0
    arguments: dict[str, Any] | None = None

    @property
    def error_kind(self) -> str | None:
        return None if self.error is None else self.error.kind

    def __str__(self) -> str:
        """The text for the model: `content` (ChatGLM3's `dispatch_tool` returns this)."""
        return self.content
