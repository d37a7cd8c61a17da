"""Deprecated: moved to `toolreg.conversation.providers.openai_chat`. Removed in 0.3."""

import warnings

from .providers.openai_chat import Normalized, StreamAssembler, normalize_completion, plain

__all__ = ["Normalized", "StreamAssembler", "normalize_completion", "plain"]

warnings.warn(
    "toolreg.conversation.stream moved to toolreg.conversation.providers.openai_chat "
    "(removed in 0.3)",
    DeprecationWarning,
    2,
)
