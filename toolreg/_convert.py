"""Validated JSON values -> the annotated Python types (Enum members, dataclasses, datetimes...).

`converter_for(tp, owner)` returns a function, or None when the JSON value already is the
right Python value (str, bool, Literal, list[str]...): the common case costs nothing. An
`int` has one, because JSON Schema accepts an integral float (`3.0`) as an integer.
A converter raises `ConversionError` with the path of the bad value.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import typing
import uuid
from collections import abc
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path, PurePath
from typing import Any

from . import _classes
from ._introspect import split_annotated
from ._validator import Validator
from .errors import exception_text
from .schema import (
    LITERAL_ORIGINS,
    MAPPING_ORIGINS,
    SEQUENCE_ORIGINS,
    SET_ORIGINS,
    UNION_ORIGINS,
    WRAPPER_ORIGINS,
    SchemaBuilder,
)

__all__ = ["ConversionError", "Converter", "converter_for"]

Converter = Callable[[Any], Any]


class ConversionError(Exception):
    """A value that validated but cannot become its Python type. `user_text`: the message
    quotes an exception from the application's own code (hidden under `mask_errors`)."""

    def __init__(
        self, path: tuple[str | int, ...], message: str, *, user_text: bool = False
    ) -> None:
        self.path, self.message, self.user_text = path, message, user_text
        super().__init__(message)


def _nested(path: str | int, conv: Converter, value: Any) -> Any:
    try:
        return conv(value)
    except ConversionError as exc:
        raise ConversionError((path, *exc.path), exc.message, user_text=exc.user_text) from None


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


_SCALARS: dict[Any, Converter | None] = {
    str: None,
    int: _int,
    bool: None,
    type(None): None,
    float: _float,
    dt.datetime: _iso("date-time", dt.datetime.fromisoformat, "2024-05-01T09:30:00+08:00"),
    dt.date: _iso("date", dt.date.fromisoformat, "2024-05-01"),
    dt.time: _iso("time", dt.time.fromisoformat, "09:30:00"),
    dt.timedelta: _duration,
    uuid.UUID: _wrap(uuid.UUID, "a UUID"),
    Decimal: _wrap(Decimal, "a decimal number"),
    Path: Path,
}


# Bare `tuple`, `set` and `frozenset` still need their Python type (JSON only has lists).
_BARE_PYTHON_TYPES = (tuple, set, frozenset, abc.Set, abc.MutableSet)


class _Builder:
    """Builds converters for one tool; classes are converted once even when recursive."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.classes: dict[Any, Converter | None] = {}

    def build(self, tp: Any) -> Converter | None:
        if tp in _SCALARS:
            return _SCALARS[tp]
        tp = split_annotated(tp)[0]
        origin = typing.get_origin(tp) or (tp if tp in _BARE_PYTHON_TYPES else None)
        if origin is not None:
            return self._generic(tp, origin, typing.get_args(tp))
        if hasattr(tp, "__supertype__"):
            return self.build(tp.__supertype__)
        if type(tp).__name__ == "TypeAliasType":
            return self.build(tp.__value__)
        if isinstance(tp, type):
            return self._class(tp)
        return None

    def _generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> Converter | None:
        if origin in LITERAL_ORIGINS:
            members = {v.value: v for v in args if isinstance(v, enum.Enum)}
            return (lambda v: members.get(v, v)) if members else None
        if origin in UNION_ORIGINS:
            return self._union(args)
        if origin in WRAPPER_ORIGINS:
            return self.build(args[0])
        if origin is tuple:
            return self._tuple(args)
        if origin in SET_ORIGINS:
            return self._collection(frozenset if origin is frozenset else set, args)
        if origin in SEQUENCE_ORIGINS:
            return self._list(args)
        if origin in MAPPING_ORIGINS:
            return self._dict(args)
        return self._class(tp) if isinstance(origin, type) else None

    def _list(self, args: tuple[Any, ...]) -> Converter | None:
        item = self.build(args[0]) if args else None
        if item is None:
            return None
        return lambda v: [_nested(i, item, x) for i, x in enumerate(v)]

    def _collection(self, kind: type, args: tuple[Any, ...]) -> Converter:
        item = self.build(args[0]) if args else None
        if item is None:
            return kind
        return lambda v: kind(_nested(i, item, x) for i, x in enumerate(v))

    def _tuple(self, args: tuple[Any, ...]) -> Converter:
        if len(args) == 2 and args[1] is Ellipsis:
            item = self.build(args[0])
            if item is None:
                return tuple
            return lambda v: tuple(_nested(i, item, x) for i, x in enumerate(v))
        items = [self.build(a) for a in args if a != ()]
        if all(c is None for c in items):
            return tuple
        pairs = list(enumerate(items))
        return lambda v: tuple(x if c is None else _nested(i, c, x) for (i, c), x in zip(pairs, v))

    def _dict(self, args: tuple[Any, ...]) -> Converter | None:
        value = self.build(args[1]) if len(args) == 2 else None
        if value is None:
            return None
        return lambda v: {k: _nested(k, value, x) for k, x in v.items()}

    def _union(self, args: tuple[Any, ...]) -> Converter | None:
        convs = [self.build(a) for a in args]
        if all(c is None for c in convs):
            return None
        non_null = [(a, c) for a, c in zip(args, convs, strict=True) if a is not type(None)]
        if len(non_null) == 1:
            only = non_null[0][1]
            return None if only is None else (lambda v: v if v is None else only(v))
        builder = SchemaBuilder(self.owner)
        schemas = [builder.build(arg) for arg in args]
        checks = [
            (Validator({**s, "$defs": builder.defs}), c)
            for s, c in zip(schemas, convs, strict=True)
        ]

        def convert(value: Any) -> Any:
            for check, conv in checks:
                if check.is_valid(value):
                    return value if conv is None else conv(value)
            return value

        return convert

    def _class(self, tp: Any) -> Converter | None:
        cls = typing.get_origin(tp) or tp
        if tp in self.classes:
            return self.classes[tp] or self._deferred(tp)
        if issubclass(cls, enum.Enum):
            return _enum(cls)
        if issubclass(cls, PurePath):
            return cls  # type: ignore[no-any-return]
        kind = _classes.kind_of(cls)
        if kind is None:
            return _scalar_subclass(cls)
        self.classes[tp] = None  # placeholder: a recursive reference defers to the dict
        conv = _pydantic(tp) if kind == "pydantic" else self._fields(cls, kind)
        self.classes[tp] = conv
        return conv

    def _deferred(self, tp: Any) -> Converter:
        classes = self.classes

        def convert(value: Any) -> Any:
            conv = classes[tp]
            return value if conv is None else conv(value)

        return convert

    def _fields(self, cls: type, kind: str) -> Converter:
        fields = _classes.class_fields(cls, self.owner)
        convs = {f.name: c for f in fields if (c := self.build(f.annotation)) is not None}
        make: Callable[..., Any] = dict if kind == "typeddict" else cls

        def convert(value: dict[str, Any]) -> Any:
            data = {k: _nested(k, convs[k], v) if k in convs else v for k, v in value.items()}
            try:
                return make(**data)
            except (TypeError, ValueError) as exc:
                text = f"{type(exc).__name__}: {exception_text(exc, 200)}"
                raise ConversionError((), text, user_text=True) from None

        return convert


def _scalar_subclass(cls: type) -> Converter | None:
    """`class UserId(str)` and friends: built from the validated base value."""
    if issubclass(cls, int):
        wrapped = _wrap(cls, f"a valid {cls.__name__}")
        return lambda v: wrapped(_int(v))  # 3.0 -> UserId(3), not UserId("3.0")
    if issubclass(cls, (float, str, Decimal, uuid.UUID)):
        return _wrap(cls, f"a valid {cls.__name__}")
    if issubclass(cls, (dt.date, dt.time)):
        return _iso(cls.__name__, cls.fromisoformat, "2024-05-01T09:30:00")
    return None


def _enum(cls: type[enum.Enum]) -> Converter:
    def convert(value: Any) -> Any:
        try:
            return cls(value)
        except ValueError:
            raise ConversionError((), f"{value!r} is not a valid {cls.__name__}") from None

    return convert


def _pydantic(cls: Any) -> Converter:
    def convert(value: Any) -> Any:
        try:
            return cls.model_validate(value)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            errors: list[dict[str, Any]] = getattr(exc, "errors", list)()
            first = errors[0] if errors else {"loc": (), "msg": str(exc)}
            raise ConversionError(tuple(first.get("loc", ())), str(first.get("msg"))) from None

    return convert


def converter_for(tp: Any, owner: str) -> Converter | None:
    """The converter for one parameter type (None: pass the JSON value through)."""
    return _Builder(owner).build(tp)
