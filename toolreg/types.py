"""The type table: what toolreg knows about each supported Python type, in one place.

Each `TypeRecord` says, for one scalar type, its JSON Schema, how a validated JSON value
becomes the Python value (`from_json`), and how a Python value becomes JSON again
(`to_json`, used for tool results, defaults and examples). The schema builder, the
converters built at registration, the result renderer and the README's type table all read
these records; adding a type is one record here and its tests.

Generic forms (`list[X]`, `dict[str, X]`, `tuple[...]`, unions, `Literal`) are described by
the origin sets below: they are structure, not types with a value of their own, and the
schema builder and the converter builder walk them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
import re
import sys
import types
import typing
import uuid
from collections import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path, PurePath
from typing import Any

import typing_extensions

from .jsonvalues import NOT_JSONABLE

__all__ = [
    "ANY_TYPES",
    "BARE_CONTAINERS",
    "LITERAL_ORIGINS",
    "MAPPING_ORIGINS",
    "PATTERN_WORDS",
    "SEQUENCE_ORIGINS",
    "SET_ORIGINS",
    "TYPES",
    "UNION_ORIGINS",
    "WRAPPER_ORIGINS",
    "ConversionError",
    "Converter",
    "TypeRecord",
    "json_default",
    "record_for",
    "timedelta_iso",
    "to_json",
    "to_jsonable",
]

Converter = Callable[[Any], Any]
JsonSchema = dict[str, Any]


class ConversionError(Exception):
    """A value that validated but cannot become its Python type. `user_text`: the message
    quotes an exception from the application's own code (redacted or masked by `errors=`).

    `key`: the problem is that key of the object at `path` (missing, unexpected), as in the
    validator's problems; `more`: the value's other problems (every one is reported at once).
    """

    def __init__(
        self,
        path: tuple[str | int, ...],
        message: str,
        *,
        user_text: bool = False,
        key: str | int | None = None,
        more: tuple[ConversionError, ...] = (),
    ) -> None:
        self.path, self.message, self.user_text = path, message, user_text
        self.key, self.more = key, more
        super().__init__(message)

    def problems(self) -> list[ConversionError]:
        """This problem and the others of the same value."""
        return [self, *self.more]

    def under(self, step: str | int) -> ConversionError:
        """The same problems, one step deeper (`step` before every path)."""
        return ConversionError(
            (step, *self.path),
            self.message,
            user_text=self.user_text,
            key=self.key,
            more=tuple(m.under(step) for m in self.more),
        )

    @property
    def blamed(self) -> tuple[str | int, ...]:
        """Where the offending value is (or would be): `path`, and the `key` if any."""
        return self.path if self.key is None else (*self.path, self.key)


@dataclass(frozen=True, slots=True)
class TypeRecord:
    """One supported scalar type.

    `schema` is its JSON Schema; `converter(cls)` returns the function that turns a
    validated JSON value into `cls` (this type or, when `subclasses`, a subclass such as
    `class UserId(str)`), or None when the JSON value already is the Python value;
    `to_json` turns a value back into JSON (None: it already is JSON).

    `number_text`: for a number that travels as a JSON number or, exactly, as a numeric
    string (`Decimal`: `anyOf` number / string with `pattern`), what the string holds in
    words ("a decimal number"). Its bounds (`Param(gt=...)`) go on the number branch and are
    said in words on the string branch; dispatch checks both exactly on the converted value.
    """

    python: type
    schema: Mapping[str, Any]
    converter: Callable[[type], Converter | None]
    to_json: Converter | None = None
    subclasses: bool = True
    number_text: str | None = None


# -- JSON -> Python ---------------------------------------------------------------------------


def _iso(kind: str, parse: Callable[[str], Any], example: str) -> Converter:
    def convert(value: Any) -> Any:
        try:
            text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
            return parse(text)
        except (ValueError, AttributeError, OverflowError):
            raise ConversionError((), f"expected an ISO 8601 {kind}, e.g. {example}") from None

    return convert


_DURATION = re.compile(
    r"(-)?P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?"
)


def _duration(value: Any) -> dt.timedelta:
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None or value.rstrip("T").endswith("P"):
        raise ConversionError((), "expected an ISO 8601 duration, e.g. PT1H30M")
    sign, weeks, days, hours, minutes, seconds = match.groups()
    try:
        delta = dt.timedelta(
            weeks=float(weeks or 0),
            days=float(days or 0),
            hours=float(hours or 0),
            minutes=float(minutes or 0),
            seconds=float(seconds or 0),
        )
    except OverflowError:
        raise ConversionError((), "the duration is too long (at most 999999999 days)") from None
    return -delta if sign else delta


def _wrap(cls: Callable[[Any], Any], what: str) -> Converter:
    def convert(value: Any) -> Any:
        try:
            return cls(value if not isinstance(value, float) else str(value))
        except (ValueError, TypeError, ArithmeticError):  # InvalidOperation, OverflowError
            raise ConversionError((), f"expected {what}") from None

    return convert


def _float(value: Any) -> Any:
    if type(value) is not int:
        return value
    try:
        return float(value)
    except OverflowError:
        raise ConversionError((), "the number is too large for a float") from None


def _int(value: Any) -> Any:
    """JSON Schema counts 3.0 as an integer; the function still gets the int 3."""
    return int(value) if type(value) is float else value


def _int_converter(cls: type) -> Converter:
    if cls is int:
        return _int
    wrapped = _wrap(cls, f"a valid {cls.__name__}")
    return lambda v: wrapped(_int(v))  # 3.0 -> UserId(3), not UserId("3.0")


def _same(base: type, plain: Converter | None) -> Callable[[type], Converter | None]:
    """The converter of `base` itself is `plain`; a subclass is built from the base value."""
    return lambda cls: plain if cls is base else _wrap(cls, f"a valid {cls.__name__}")


def _iso_converter(kind: str, example: str) -> Callable[[type], Converter]:
    def make(cls: type) -> Converter:
        name = kind if cls.__module__ == "datetime" else cls.__name__
        return _iso(name, cls.fromisoformat, example)  # type: ignore[attr-defined]

    return make


def _duration_converter(cls: type) -> Converter:
    if cls is dt.timedelta:
        return _duration
    return lambda v: cls(seconds=_duration(v).total_seconds())


def _none(cls: type) -> None:
    return None


# -- Python -> JSON ---------------------------------------------------------------------------


def timedelta_iso(value: dt.timedelta) -> str:
    """ISO 8601 duration, e.g. `P1DT3600S`; negative durations get a leading minus."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    seconds = value.seconds + value.microseconds / 1_000_000
    secs = f"{seconds:f}".rstrip("0").rstrip(".") if value.microseconds else str(value.seconds)
    return f"{sign}P{value.days}DT{secs}S"


def _isoformat(value: Any) -> str:
    return str(value.isoformat())


# -- the table ------------------------------------------------------------------------------

DECIMAL_PATTERN = r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$"

TYPES: tuple[TypeRecord, ...] = (
    TypeRecord(str, {"type": "string"}, _same(str, None)),
    TypeRecord(int, {"type": "integer"}, _int_converter),
    TypeRecord(float, {"type": "number"}, _same(float, _float)),
    TypeRecord(bool, {"type": "boolean"}, _none, subclasses=False),
    TypeRecord(type(None), {"type": "null"}, _none, subclasses=False),
    TypeRecord(
        dt.datetime,
        {"type": "string", "format": "date-time"},
        _iso_converter("date-time", "2024-05-01T09:30:00+08:00"),
        _isoformat,
    ),
    TypeRecord(
        dt.date,
        {"type": "string", "format": "date"},
        _iso_converter("date", "2024-05-01"),
        _isoformat,
    ),
    TypeRecord(
        dt.time,
        {"type": "string", "format": "time"},
        _iso_converter("time", "09:30:00"),
        _isoformat,
    ),
    TypeRecord(
        dt.timedelta, {"type": "string", "format": "duration"}, _duration_converter, timedelta_iso
    ),
    TypeRecord(
        uuid.UUID,
        {"type": "string", "format": "uuid"},
        _same(uuid.UUID, _wrap(uuid.UUID, "a UUID")),
        str,
    ),
    TypeRecord(
        Decimal,
        {"anyOf": [{"type": "number"}, {"type": "string", "pattern": DECIMAL_PATTERN}]},
        lambda cls: _wrap(cls, "a decimal number" if cls is Decimal else f"a valid {cls.__name__}"),
        str,  # exact: no float rounding of money
        number_text="a decimal number",
    ),
    TypeRecord(PurePath, {"type": "string", "format": "path"}, lambda cls: cls, str),
)
"""Every supported scalar type. Order matters for subclasses: `datetime` before `date`."""

PATTERN_WORDS: Mapping[str, str] = {
    branch["pattern"]: r.number_text
    for r in TYPES
    if r.number_text
    for branch in r.schema["anyOf"]
    if "pattern" in branch
}
"""The patterns of the type table's numeric strings, in words for messages: a value that
does not match `DECIMAL_PATTERN` "is not a decimal number" (the model is not shown a regex)."""

_BY_TYPE: dict[Any, TypeRecord] = {r.python: r for r in TYPES}
_BY_TYPE[Path] = _BY_TYPE[PurePath]


def record_for(cls: Any) -> TypeRecord | None:
    """The record of `cls`: its own, or that of the first base it may stand for."""
    record = _BY_TYPE.get(cls)
    if record is not None or not isinstance(cls, type):
        return record
    for record in TYPES:
        if record.subclasses and issubclass(cls, record.python):
            return record
    return None


# -- generic forms ----------------------------------------------------------------------------

ANY_TYPES = (typing.Any, typing_extensions.Any, object)
UNION_ORIGINS: frozenset[Any] = frozenset({typing.Union, types.UnionType})
LITERAL_ORIGINS: frozenset[Any] = frozenset({typing.Literal, typing_extensions.Literal})
SEQUENCE_ORIGINS: frozenset[Any] = frozenset(
    {list, abc.Sequence, abc.MutableSequence, abc.Iterable, abc.Collection}
)
SET_ORIGINS: frozenset[Any] = frozenset({set, frozenset, abc.Set, abc.MutableSet})
MAPPING_ORIGINS: frozenset[Any] = frozenset({dict, abc.Mapping, abc.MutableMapping})
BARE_CONTAINERS: frozenset[Any] = frozenset(
    {tuple, *SEQUENCE_ORIGINS, *SET_ORIGINS, *MAPPING_ORIGINS}
)
# `Required[...]`, `NotRequired[...]` and `ReadOnly[...]` (TypedDict fields): peeled off to
# reach the field's type, from typing or typing_extensions.
WRAPPER_ORIGINS: frozenset[Any] = frozenset(
    {
        typing_extensions.Required,
        typing_extensions.NotRequired,
        typing_extensions.ReadOnly,
        getattr(typing, "Required", None),
        getattr(typing, "NotRequired", None),
        getattr(typing, "ReadOnly", None),
    }
    - {None}
)


# -- values -> JSON ---------------------------------------------------------------------------


def json_default(obj: Any) -> Any:
    """`json.dumps(default=...)` hook: one step from a rich value to a JSON value."""
    if isinstance(obj, enum.Enum):
        return obj.value
    record = record_for(type(obj))
    if record is not None and record.to_json is not None:
        return record.to_json(obj)
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
    if pydantic is not None and type(obj).__module__.startswith("pydantic"):
        # pydantic's own types as pydantic writes them: a SecretStr as "**********", a URL
        # as text
        return pydantic.TypeAdapter(type(obj)).dump_python(obj, mode="json")
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_encoder = json.JSONEncoder(ensure_ascii=False, default=json_default, allow_nan=False)
_make_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
# `JSONEncoder.encode` builds the C encoder anew on every call; build it once. No circular
# check (markers=None): a circular result hits the recursion limit, reported like any
# other value JSON cannot hold.
_c_encode: Any = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(
        None, json_default, json.encoder.encode_basestring, None, ": ", ", ", False, False, False
    )
)


def to_json(value: Any) -> str:
    """`value` as JSON text, `ensure_ascii=False`; TypeError/ValueError if it cannot be."""
    if _c_encode is None:  # pragma: no cover - Python builds without the C accelerator
        return _encoder.encode(value)
    return "".join(_c_encode(value, 0))


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
