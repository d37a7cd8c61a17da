"""Deprecated: moved to `toolreg.conversation.providers.openai_responses`. Removed in 0.3."""

import warnings

from .providers.openai_responses import ResponseStreamAssembler, normalize_response

__all__ = ["ResponseStreamAssembler", "normalize_response"]

warnings.warn(
    "toolreg.conversation.responses_api moved to "
    "toolreg.conversation.providers.openai_responses (removed in 0.3)",
    DeprecationWarning,
    2,
)
