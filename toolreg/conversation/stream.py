"""Moved to `providers.openai_chat`; these names stay importable from here."""

from .providers.openai_chat import Normalized, StreamAssembler, normalize_completion, plain

__all__ = ["Normalized", "StreamAssembler", "normalize_completion", "plain"]
