"""One module per wire API, each with its `Provider` (see `base`):

- `openai_chat`: chat completions, in the `tools`, `functions` and `chatglm3` dialects;
- `openai_responses`: the Responses API (the `responses` dialect);
- `anthropic`: Anthropic's Messages API (the `anthropic` dialect), over the `anthropic` SDK.

`provider_for` picks one by the dialect's name; `dialect_for` names the one a client
speaks when the application named none.
"""

from __future__ import annotations

from typing import Any, Literal

from ...errors import UsageError, with_article
from ...formats import DIALECTS
from .anthropic import AnthropicMessages
from .base import Answer, Answers, Assembler, Message, Provider, Request
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses

__all__ = [
    "Answer",
    "Answers",
    "AnthropicMessages",
    "Assembler",
    "Message",
    "OpenAIChat",
    "OpenAIResponses",
    "Provider",
    "Request",
    "dialect_for",
    "dialect_names",
    "history_reader",
    "provider_for",
]


def dialect_names() -> list[str]:
    """Every dialect a conversation speaks, by the name `dialect=` takes."""
    return [*DIALECTS, ANTHROPIC]


ANTHROPIC = "anthropic"


def dialect_for(client: Any, dialect: str | None) -> str:
    """The dialect to speak over `client`: the one named (an Anthropic client speaks only
    its own), else the client's own (`anthropic` for the `anthropic` SDK's clients, else
    `tools`)."""
    module = type(client).__module__
    anthropic = module == ANTHROPIC or module.startswith(ANTHROPIC + ".")
    if dialect is None:
        return ANTHROPIC if anthropic else "tools"
    if anthropic and dialect != ANTHROPIC:
        raise UsageError(
            f"dialect={dialect!r}: {with_article(type(client).__name__)} client speaks Anthropic's "
            'Messages API; leave dialect out (or give dialect="anthropic")'
        )
    if dialect == ANTHROPIC and not anthropic and getattr(client, "messages", None) is None:
        raise UsageError(
            f'dialect="anthropic" needs an anthropic.Anthropic / AsyncAnthropic client, not '
            f"{type(client).__name__}"
        )
    return dialect


def provider_for(
    dialect: str, client: Any, assistant_content: Literal["empty", "null", "omit"] = "empty"
) -> Provider:
    """The provider of `dialect` (one of `dialect_names()`, checked by the caller)."""
    if dialect == ANTHROPIC:
        return AnthropicMessages()
    fmt = DIALECTS[dialect]
    if fmt.dialect is not None and fmt.dialect.api == "responses":
        return OpenAIResponses(fmt)
    return OpenAIChat(fmt, assistant_content)


def history_reader(dialect: str = "tools") -> Provider:
    """What reads a history in `dialect`'s wire format (`toolsets.HistoryReader`): the
    provider a conversation in that dialect uses, for a `StepContext` of one's own loop,
    e.g. `StepContext(history=messages, reader=history_reader("tools"))`.

    Args:
        dialect: one of `dialect_names()` ("tools" for chat completions messages,
            "responses" for Responses API items, "anthropic" for Messages API messages).

    Raises:
        UsageError: a dialect that is none of them.
    """
    if dialect not in dialect_names():
        raise UsageError(
            f"history_reader({dialect!r}): one of {', '.join(map(repr, dialect_names()))}"
        )
    return provider_for(dialect, None)
