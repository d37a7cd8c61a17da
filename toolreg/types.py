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
import enum
import json
import math
import re
import sys
import types
import typing
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .jsonvalues import NOT_JSONABLE

__all__ = [
    "ANNOTATED_ORIGINS",
    "ANY_TYPES",
    "BARE_CONTAINERS",
    "BUILTIN_TYPES",
    "DECIMAL_PATTERN",
    "LITERAL_ORIGINS",
    "MAPPING_ORIGINS",
    "NOT_REQUIRED_ORIGINS",
    "PATTERN_WORDS",
    "REQUIRED_ORIGINS",
    "SEQUENCE_ORIGINS",
    "SET_ORIGINS",
    "TYPES",
    "UNION_ORIGINS",
    "WRAPPER_ORIGINS",
    "ConversionError",
    "Converter",
    "TypeRecord",
    "TypingForms",
    "extension_form",
    "is_typeddict",
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
    said in words on the string branch; dispatch checks both exactly on the converted value,
    with `exact` (a bound as a value of the type, None if it is not a finite number) and
    `is_multiple(value, step)`.
    """

    python: type
    schema: Mapping[str, Any]
    converter: Callable[[type], Converter | None]
    to_json: Converter | None = None
    subclasses: bool = True
    number_text: str | None = None
    exact: Converter | None = None
    is_multiple: Callable[[Any, Any], bool] | None = None


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


def _duration(value: Any) -> Any:
    """An ISO 8601 duration as a `datetime.timedelta` (loaded: a timedelta is asked for)."""
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None or value.rstrip("T").endswith("P"):
        raise ConversionError((), "expected an ISO 8601 duration, e.g. PT1H30M")
    sign, weeks, days, hours, minutes, seconds = match.groups()
    try:
        delta = sys.modules["datetime"].timedelta(
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
    if cls.__module__ == "datetime":  # timedelta itself
        return _duration
    return lambda v: cls(seconds=_duration(v).total_seconds())


def _none(cls: type) -> None:
    return None


# -- Python -> JSON ---------------------------------------------------------------------------


def timedelta_iso(value: Any) -> str:
    """ISO 8601 duration of a `timedelta`, e.g. `P1DT3600S`; negative durations get a leading
    minus."""
    sign = "-" if value < type(value)(0) else ""
    value = abs(value)
    seconds = value.seconds + value.microseconds / 1_000_000
    secs = f"{seconds:f}".rstrip("0").rstrip(".") if value.microseconds else str(value.seconds)
    return f"{sign}P{value.days}DT{secs}S"


def _isoformat(value: Any) -> str:
    return str(value.isoformat())


# -- the table ------------------------------------------------------------------------------

DECIMAL_PATTERN = r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$"
"""The string branch of a `Decimal`'s schema: digits, an optional fraction and exponent."""

PATTERN_WORDS: Mapping[str, str] = {DECIMAL_PATTERN: "a decimal number"}
"""The patterns of the type table's numeric strings, in words for messages: a value that
does not match `DECIMAL_PATTERN` "is not a decimal number" (the model is not shown a regex)."""

BUILTIN_TYPES: tuple[TypeRecord, ...] = (
    TypeRecord(str, {"type": "string"}, _same(str, None)),
    TypeRecord(int, {"type": "integer"}, _int_converter),
    TypeRecord(float, {"type": "number"}, _same(float, _float)),
    TypeRecord(bool, {"type": "boolean"}, _none, subclasses=False),
    TypeRecord(type(None), {"type": "null"}, _none, subclasses=False),
)
"""The records of the built-in types: the part of `TYPES` that is there from the start."""


# The standard library's value types (datetime, date, time, timedelta, UUID, Decimal, Path)
# have their records made, and their modules imported, the first time a type or a value
# needs one: `import toolreg` does not load datetime, uuid, decimal and pathlib (nor
# platform, urllib.parse and ipaddress behind them). A type of those modules reaches toolreg
# only once its module is loaded, so `record_for` makes them when it meets one.
_LIBRARY_MODULES = frozenset({"datetime", "uuid", "decimal", "pathlib"})


def _library_types() -> tuple[TypeRecord, ...]:
    """The records of the standard library's value types (imports their modules: first use)."""
    import datetime as dt
    import decimal
    import uuid
    from decimal import Decimal
    from pathlib import PurePath

    def exact(bound: Any) -> Decimal | None:
        """A bound as an exact Decimal: an int, a float as it is written (`0.1` is 0.1, not
        the binary float's expansion) or a finite Decimal; None for anything else."""
        if isinstance(bound, bool):
            return None
        if isinstance(bound, int):
            return Decimal(bound)
        if isinstance(bound, float):
            return Decimal(repr(bound)) if math.isfinite(bound) else None
        if isinstance(bound, Decimal):
            return bound if bound.is_finite() else None
        return None

    def is_multiple(value: Decimal, step: Decimal) -> bool:
        """Whether `value` is a whole multiple of `step`, exactly, in time bounded by their
        digits (not by their exponents: 1E+999999999 is one digit). An integral quotient has
        at most the value's digits plus about 2.33 per digit of the step (powers of 2 and 5),
        so this precision holds it exactly: an inexact quotient is not integral."""
        digits = len(value.as_tuple().digits) + 3 * len(step.as_tuple().digits) + 5
        context = decimal.Context(
            prec=digits, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[]
        )
        quotient = context.divide(value, step)
        if context.flags[decimal.Inexact] or not quotient.is_finite():
            return False
        return bool(quotient == quotient.to_integral_value(context=context))

    return (
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
            dt.timedelta,
            {"type": "string", "format": "duration"},
            _duration_converter,
            timedelta_iso,
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
            lambda cls: _wrap(
                cls, "a decimal number" if cls is Decimal else f"a valid {cls.__name__}"
            ),
            str,  # exact: no float rounding of money
            number_text=PATTERN_WORDS[DECIMAL_PATTERN],
            exact=exact,
            is_multiple=is_multiple,
        ),
        TypeRecord(PurePath, {"type": "string", "format": "path"}, lambda cls: cls, str),
    )


_BY_TYPE: dict[Any, TypeRecord] = {r.python: r for r in BUILTIN_TYPES}
_all_types: tuple[TypeRecord, ...] | None = None


def _every_type() -> tuple[TypeRecord, ...]:
    """`TYPES`, the standard library's records made on the first call."""
    global _all_types
    if _all_types is None:
        library = _library_types()
        for record in library:
            _BY_TYPE.setdefault(record.python, record)
        path = sys.modules["pathlib"]
        _BY_TYPE.setdefault(path.Path, _BY_TYPE[path.PurePath])
        _all_types = BUILTIN_TYPES + library
    return _all_types


if TYPE_CHECKING:
    TYPES: tuple[TypeRecord, ...]
    """Every supported scalar type. Order matters for subclasses: `datetime` before `date`."""


def __getattr__(name: str) -> Any:
    if name == "TYPES":  # PEP 562: made on first use (see _LIBRARY_MODULES)
        return _every_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _from_library(cls: type) -> bool:
    """Whether `cls` is, or derives from, a type of the modules `_library_types` covers."""
    return any(
        str(getattr(c, "__module__", "")).partition(".")[0] in _LIBRARY_MODULES
        for c in getattr(cls, "__mro__", ())
    )


def record_for(cls: Any) -> TypeRecord | None:
    """The record of `cls`: its own, or that of the first base it may stand for."""
    record = _BY_TYPE.get(cls)
    if record is not None or not isinstance(cls, type):
        return record
    records = _all_types
    if records is None:
        if not _from_library(cls):
            records = BUILTIN_TYPES
        else:
            records = _every_type()
            record = _BY_TYPE.get(cls)
            if record is not None:
                return record
    for record in records:
        if record.subclasses and issubclass(cls, record.python):
            return record
    return None


# -- generic forms ----------------------------------------------------------------------------


class TypingForms:
    """Forms of one kind from `typing` (`Literal`, `Any`, the TypedDict field wrappers...)
    and typing_extensions' spellings of the same, for `form in FORMS`.

    typing_extensions is not imported for this (`import toolreg` stays light): a form of it
    can be in an annotation only once the application has loaded it, so its spellings are
    looked up then, once."""

    __slots__ = ("_extensions", "_names", "_typing")

    def __init__(self, forms: Iterable[Any], extension_names: Iterable[str]) -> None:
        self._typing = frozenset(f for f in forms if f is not None)
        self._names = tuple(extension_names)
        self._extensions: frozenset[Any] | None = None

    def _spellings(self) -> frozenset[Any]:
        found = self._extensions
        if found is None:
            module = sys.modules.get("typing_extensions")
            if module is None:
                return frozenset()
            named = (getattr(module, name, None) for name in self._names)
            found = self._extensions = frozenset(f for f in named if f is not None)
        return found

    def __contains__(self, form: object) -> bool:
        try:
            return form in self._typing or form in self._spellings()
        except TypeError:  # unhashable: no typing form
            return False

    def __iter__(self) -> Iterator[Any]:
        return iter(self._typing | self._spellings())

    def __repr__(self) -> str:
        return f"TypingForms({sorted(map(repr, self))})"


ANY_TYPES = TypingForms((typing.Any, object), ("Any",))
UNION_ORIGINS: frozenset[Any] = frozenset({typing.Union, types.UnionType})
LITERAL_ORIGINS = TypingForms((typing.Literal,), ("Literal",))
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
WRAPPER_ORIGINS = TypingForms(
    (
        getattr(typing, "Required", None),
        getattr(typing, "NotRequired", None),
        getattr(typing, "ReadOnly", None),
    ),
    ("Required", "NotRequired", "ReadOnly"),
)
REQUIRED_ORIGINS = TypingForms((getattr(typing, "Required", None),), ("Required",))
NOT_REQUIRED_ORIGINS = TypingForms((getattr(typing, "NotRequired", None),), ("NotRequired",))
ANNOTATED_ORIGINS = TypingForms((typing.Annotated,), ("Annotated",))


def is_typeddict(cls: object) -> bool:
    """Whether `cls` is a TypedDict class, of typing's or of typing_extensions' (when the
    application loaded it: its TypedDict makes classes typing's function does not know)."""
    if typing.is_typeddict(cls):
        return True
    extensions = sys.modules.get("typing_extensions")
    return extensions is not None and bool(extensions.is_typeddict(cls))


def extension_form(name: str) -> Any:
    """typing_extensions' `name` (`Doc`...), or None while the application has not loaded it
    (no annotation can hold it then)."""
    return getattr(sys.modules.get("typing_extensions"), name, None)


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
