"""`ToolSearch`, the conversation's tool search option, and the question it reads.

`Conversation(tool_search=5)` (or `ToolSearch(limit=5, always=["help"])`) offers each
model call only the `limit` tools that best match the question and the recent user
messages, plus the `always` ones and those called since the last user message. The history
is in its API's wire format: the conversation's provider reads it (`toolsets.HistoryReader`),
never this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import UsageError

__all__ = ["MAX_QUERY_CHARS", "ToolSearch", "query_text"]

MAX_QUERY_CHARS = 4000  # of the messages read for a selection


@dataclass(frozen=True, slots=True)
class ToolSearch:
    """Which tools each model call is offered: the `limit` best for the last `messages`
    user messages (the newest counts most), plus the `always` tools (names or tags)."""

    limit: int = 5
    always: tuple[str, ...] = ()
    messages: int = 3

    def __post_init__(self) -> None:
        for key in ("limit", "messages"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"ToolSearch({key}={value!r}): a whole number >= 1")
        always: Any = self.always  # what was given, before it is made a tuple
        if isinstance(always, str) or not isinstance(always, Iterable):
            raise UsageError(
                f"ToolSearch(always={always!r}): a list of tool names or tags, e.g. ['help']"
            )
        names = tuple(always)
        if not all(isinstance(n, str) and n for n in names):
            raise UsageError("ToolSearch(always=...) takes tool names or tags (strings)")
        object.__setattr__(self, "always", names)

    @classmethod
    def of(cls, value: Any) -> ToolSearch | None:
        """`tool_search=` as given: None, a number (the limit) or a `ToolSearch`."""
        if value is None or isinstance(value, ToolSearch):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(limit=value)
        raise UsageError(
            f"tool_search={value!r}: pass the number of tools to offer per model call "
            "(e.g. tool_search=5), or a ToolSearch(limit=..., always=[...])"
        )

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "always": list(self.always), "messages": self.messages}

    @classmethod
    def from_json(cls, data: Any) -> ToolSearch | None:
        """A saved option back (`UsageError` when it is not one `to_json` writes)."""
        if data is None:
            return None
        if not isinstance(data, Mapping) or set(data) != {"limit", "always", "messages"}:
            raise UsageError("the tool_search option is not one export_state() writes")
        always = data["always"]
        if not isinstance(always, list):
            raise UsageError("the tool_search option's 'always' is not a list")
        return cls(limit=data["limit"], always=tuple(always), messages=data["messages"])


def query_text(
    history: Sequence[Mapping[str, Any]],
    messages: int,
    user_text: Callable[[Mapping[str, Any]], str | None],
) -> str:
    """The text of the last `messages` messages the person wrote, newest first, at most
    `MAX_QUERY_CHARS` characters (so the question of the turn is always read). `user_text`
    reads an entry (the provider's: see `toolsets.HistoryReader`): its text if the person
    wrote it, else None."""
    parts: list[str] = []
    size = 0
    for entry in reversed(history):
        text = user_text(entry) if isinstance(entry, Mapping) else None
        if text is None:
            continue
        parts.append(text[: MAX_QUERY_CHARS - size])
        size += len(parts[-1])
        if len(parts) >= messages or size >= MAX_QUERY_CHARS:
            break
    return "\n".join(parts)
