"""Deprecated: `trim_history` is `toolreg.conversation.trim_history`; the history readers
moved behind the provider (`toolreg.conversation.providers.history`). Removed in 0.3."""

import warnings

from .providers.history import trim_history, trim_to_limits

__all__ = ["trim_history", "trim_to_limits"]

warnings.warn(
    "toolreg.conversation.history moved to toolreg.conversation.providers.history; "
    "trim_history is toolreg.trim_history (removed in 0.3)",
    DeprecationWarning,
    2,
)
