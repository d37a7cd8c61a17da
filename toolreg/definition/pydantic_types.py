"""pydantic's own types (`AwareDatetime`, `PastDate`, `SecretStr`, `EmailStr`, `HttpUrl`...):
described and enforced by pydantic itself, when the application uses them.

A type toolreg has no record for but pydantic defines (not a model: those are `fields`)
gets pydantic's JSON Schema and is converted with pydantic's validator, so an aware
datetime parameter refuses a naive one exactly as pydantic would. Nothing here imports
pydantic: a type can only come from pydantic when the application imported it.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from ..types import ConversionError, Converter, record_for
from ..validation.coercion import kind as json_kind_of
from ..validation.keywords import count, render

__all__ = ["conversion_problems", "pydantic_converter", "pydantic_schema"]

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
            raise conversion_problems(exc) from None

    return convert


_MAX_ERRORS = 50  # of one value, at most
# pydantic's error types -> the JSON type the value should have had
_JSON_TYPES = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "tuple_type": "array",
    "set_type": "array",
    "frozen_set_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "dataclass_type": "object",
}


@functools.cache
def _scalars() -> dict[str, type]:
    """pydantic's error types -> the type whose toolreg record words the problem (made on a
    first pydantic error: pydantic has loaded these modules by then)."""
    import datetime as dt
    import decimal
    import uuid

    return {
        **dict.fromkeys(
            (
                "date_type",
                "date_parsing",
                "date_from_datetime_parsing",
                "date_from_datetime_inexact",
            ),
            dt.date,
        ),
        **dict.fromkeys(
            ("datetime_type", "datetime_parsing", "datetime_from_date_parsing"), dt.datetime
        ),
        **dict.fromkeys(("time_type", "time_parsing"), dt.time),
        **dict.fromkeys(("time_delta_type", "time_delta_parsing"), dt.timedelta),
        **dict.fromkeys(("uuid_type", "uuid_parsing"), uuid.UUID),
        **dict.fromkeys(("decimal_type", "decimal_parsing"), decimal.Decimal),
    }


_BOUNDS = {
    "greater_than": ("gt", ">"),
    "greater_than_equal": ("ge", ">="),
    "less_than": ("lt", "<"),
    "less_than_equal": ("le", "<="),
}
_LENGTHS = {
    "string_too_short": ("min_length", "at least", "character"),
    "string_too_long": ("max_length", "at most", "character"),
    "too_short": ("min_length", "at least", "item"),
    "too_long": ("max_length", "at most", "item"),
}
_USER_TEXT = frozenset({"value_error", "assertion_error"})  # the application's validators


def conversion_problems(exc: ValueError) -> ConversionError:
    """pydantic's `ValidationError` as one `ConversionError` holding every problem (at most
    `_MAX_ERRORS`), in toolreg's words where toolreg has them (`expected number, got
    string`, `expected an ISO 8601 date, e.g. 2024-05-01`, `missing required property`...);
    the application's own validators' messages as pydantic gives them."""
    try:
        errors: list[dict[str, Any]] = list(exc.errors(include_url=False))  # type: ignore[attr-defined]
    except Exception:  # not pydantic's: one problem, at the value
        errors = []
    found = [_problem(error) for error in errors[:_MAX_ERRORS]]
    unique = list({(p.path, p.message): p for p in found}.values())
    if not unique:
        return ConversionError((), "cannot be converted")
    first, *rest = unique
    first.more = tuple(rest)
    return first


def _problem(error: dict[str, Any]) -> ConversionError:
    loc = tuple(x for x in error.get("loc", ()) if isinstance(x, (str, int)))
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind in ("missing", "extra_forbidden") and loc:
        what = "missing required property" if kind == "missing" else "unexpected property"
        return ConversionError(loc[:-1], f"{what} {render(loc[-1])}", key=loc[-1])
    if kind in _JSON_TYPES:
        return ConversionError(loc, f"expected {_JSON_TYPES[kind]}, got {json_kind_of(value)}")
    if kind in _scalars():
        worded = _scalar_message(_scalars()[kind], value)
        if worded is not None:
            return ConversionError(loc, worded)
    if kind in _BOUNDS and _BOUNDS[kind][0] in ctx:
        key, op = _BOUNDS[kind]
        bound = ctx[key]  # a Decimal bound (condecimal(gt=0)) as written, not "Decimal"
        shown = render(bound) if isinstance(bound, (int, float, str)) else str(bound)
        return ConversionError(loc, f"must be {op} {shown}")
    if kind in _LENGTHS and _LENGTHS[kind][0] in ctx:
        key, side, noun = _LENGTHS[kind]
        return ConversionError(loc, f"must have {side} {count(ctx[key], noun)}")
    message = " ".join(str(error.get("msg", "")).split())[:300] or "cannot be converted"
    return ConversionError(loc, message, user_text=kind in _USER_TEXT)


def _scalar_message(tp: type, value: Any) -> str | None:
    """What toolreg says about `value` for the type `tp` (None: toolreg would take it)."""
    record = record_for(tp)
    convert = None if record is None else record.converter(tp)
    if convert is None:
        return None
    try:
        convert(value)
    except ConversionError as exc:
        return exc.message
    except Exception:
        return None
    return None
