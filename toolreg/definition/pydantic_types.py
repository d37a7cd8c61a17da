"""pydantic's own types (`AwareDatetime`, `PastDate`, `SecretStr`, `EmailStr`, `HttpUrl`...):
described and enforced by pydantic itself, when the application uses them.

A type toolreg has no record for but pydantic defines (not a model: those are `fields`)
gets pydantic's JSON Schema and is converted with pydantic's validator, so an aware
datetime parameter refuses a naive one exactly as pydantic would. Nothing here imports
pydantic: a type can only come from pydantic when the application imported it.
"""

from __future__ import annotations

import sys
from typing import Any

from ..types import ConversionError, Converter

__all__ = ["pydantic_converter", "pydantic_schema"]

_ADAPTERS: dict[Any, Any] = {}


def _adapter(tp: Any) -> Any | None:
    """pydantic's TypeAdapter for a type pydantic defines, or None."""
    pydantic = sys.modules.get("pydantic")
    module = getattr(tp, "__module__", None) or ""
    if pydantic is None or not module.startswith("pydantic"):
        return None
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return None
    try:
        adapter = _ADAPTERS.get(tp)
        if adapter is None:
            adapter = _ADAPTERS[tp] = pydantic.TypeAdapter(tp)
    except Exception:  # not a type pydantic can validate on its own
        return None
    return adapter


def pydantic_schema(tp: Any) -> dict[str, Any] | None:
    """pydantic's JSON Schema of `tp`, or None (not pydantic's, or not self-contained)."""
    adapter = _adapter(tp)
    if adapter is None:
        return None
    try:
        schema: dict[str, Any] = adapter.json_schema()
    except Exception:
        return None
    if "$ref" in schema or "$defs" in schema:
        return None
    return schema


def pydantic_converter(tp: Any) -> Converter | None:
    """pydantic's validator for `tp`, raising `ConversionError` with pydantic's message."""
    adapter = _adapter(tp)
    if adapter is None:
        return None
    validate = adapter.validate_python

    def convert(value: Any) -> Any:
        try:
            return validate(value)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            errors: list[dict[str, Any]] = getattr(exc, "errors", list)()
            first = errors[0] if errors else {"loc": (), "msg": str(exc)}
            raise ConversionError(tuple(first.get("loc", ())), str(first.get("msg"))) from None

    return convert
