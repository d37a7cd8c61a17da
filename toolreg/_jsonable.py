"""Python values -> JSON-compatible values (defaults and examples in schemas, tool results)."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import enum
import json
import math
import sys
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Final

__all__ = [
    "MAX_INT_DIGITS",
    "NOT_JSONABLE",
    "NumberRefused",
    "copy_json",
    "json_default",
    "strict_decoder",
    "timedelta_iso",
    "to_jsonable",
]

MAX_INT_DIGITS: Final = 4300  # CPython's own default limit for int(str)


class NumberRefused(ValueError):
    """A number JSON text may spell but a tool must not get; the message suits a model."""


def _parse_constant(name: str) -> Any:
    raise NumberRefused(f"{name} is not a valid number")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NumberRefused(f"{text[:20]} is not a valid number (out of range)")
    return value


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:  # parsing those costs quadratic time
        raise NumberRefused(f"a number has more than {MAX_INT_DIGITS} digits")
    return int(text)


strict_decoder = json.JSONDecoder(
    parse_constant=_parse_constant, parse_float=_parse_float, parse_int=_parse_int
)
"""A JSON decoder for untrusted text: no NaN/Infinity, no overflowing floats, no huge ints."""


class _NotJsonable:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_JSONABLE"


NOT_JSONABLE: Any = _NotJsonable()


_LEAVES = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (schemas): every mapping becomes a dict and every
    tuple a list; immutable leaves are shared. Several times faster than `copy.deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [copy_json(v) for v in value]
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    return copy.deepcopy(value)


def timedelta_iso(value: dt.timedelta) -> str:
    """ISO 8601 duration, e.g. `P1DT3600S`; negative durations get a leading minus."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    seconds = value.seconds + value.microseconds / 1_000_000
    secs = f"{seconds:f}".rstrip("0").rstrip(".") if value.microseconds else str(value.seconds)
    return f"{sign}P{value.days}DT{secs}S"


def json_default(obj: Any) -> Any:
    """`json.dumps(default=...)` hook: one step from a rich value to a JSON value."""
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (dt.datetime, dt.date, dt.time)):
        return obj.isoformat()
    if isinstance(obj, dt.timedelta):
        return timedelta_iso(obj)
    if isinstance(obj, (uuid.UUID, PurePath)):
        return str(obj)
    if isinstance(obj, Decimal):
        return str(obj)  # exact: no float rounding of money
    if isinstance(obj, (set, frozenset)):
        items = list(obj)
        try:
            return sorted(items)
        except TypeError:
            return items
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):
        return obj._asdict()
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(obj, pydantic.BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-compatible copy of `value` (a default or an example in a schema), or `NOT_JSONABLE`.

    Values are written as a model would send them: a dataclass as its `__init__` fields, an
    Enum as its value, a set as a sorted list, a datetime in ISO 8601.
    """
    if _depth > 64:
        return NOT_JSONABLE
    if value is None or isinstance(value, (bool, int, str)):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else NOT_JSONABLE
    if isinstance(value, (list, tuple)) and not hasattr(value, "_asdict"):
        return _all([to_jsonable(v, _depth + 1) for v in value])
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return NOT_JSONABLE
        items = {k: to_jsonable(v, _depth + 1) for k, v in value.items()}
        return NOT_JSONABLE if NOT_JSONABLE in items.values() else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # As the model would send it to build the value: the fields __init__ takes.
        fields = dataclasses.fields(value)
        return to_jsonable({f.name: getattr(value, f.name) for f in fields if f.init}, _depth + 1)
    try:
        step = json_default(value)
    except TypeError:
        return NOT_JSONABLE
    return to_jsonable(step, _depth + 1)


def _all(items: list[Any]) -> Any:
    return NOT_JSONABLE if any(i is NOT_JSONABLE for i in items) else items
