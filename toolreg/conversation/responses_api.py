"""Moved to `providers.openai_responses`; these names stay importable from here."""

from .providers.openai_responses import ResponseStreamAssembler, normalize_response

__all__ = ["ResponseStreamAssembler", "normalize_response"]
