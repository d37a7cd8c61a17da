"""Converters built at registration: validated JSON values -> the annotated Python types.

`converter_for(tp, owner)` returns a function, or None when the JSON value already is the
right Python value (str, bool, Literal, list[str]...): the common case costs nothing. An
`int` has one, because JSON Schema accepts an integral float (`3.0`) as an integer.
A converter raises `ConversionError` with the path of the bad value.
"""

from __future__ import annotations

import enum
import operator
import typing
from collections import abc
from collections.abc import Callable
from typing import Any

from ..errors import exception_text
from ..params import EMPTY_PARAM, Param
from ..types import (
    BUILTIN_TYPES,
    LITERAL_ORIGINS,
    MAPPING_ORIGINS,
    SEQUENCE_ORIGINS,
    SET_ORIGINS,
    UNION_ORIGINS,
    WRAPPER_ORIGINS,
    ConversionError,
    Converter,
    TypeRecord,
    record_for,
)
from ..validation import Validator
from . import fields as _fields
from .constraints import numeric_constraints
from .pydantic_types import conversion_problems, pydantic_converter
from .schema import SchemaBuilder, text_number
from .signature import split_annotated

__all__ = ["converter_for"]


def _nested(path: str | int, conv: Converter, value: Any) -> Any:
    try:
        return conv(value)
    except ConversionError as exc:
        raise exc.under(path) from None


_SCALARS: dict[Any, Converter | None] = {r.python: r.converter(r.python) for r in BUILTIN_TYPES}
"""The built-in scalar types' converters, for the one dictionary look-up most annotations
need (the others' come from `record_for`)."""


# Bare `tuple`, `set` and `frozenset` still need their Python type (JSON only has lists).
_BARE_PYTHON_TYPES = (tuple, set, frozenset, abc.Set, abc.MutableSet)


class _Builder:
    """Builds converters for one tool; classes are converted once even when recursive."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.classes: dict[Any, Converter | None] = {}

    def build(self, tp: Any, param: Param = EMPTY_PARAM) -> Converter | None:
        """The converter of `tp`; `param`: the metadata that came with it from outside (a
        parameter's or a field's), merged with any `Annotated` metadata of `tp` itself."""
        converter = self._build(tp)
        bare, inner = split_annotated(tp)
        if inner is not EMPTY_PARAM:
            param = inner.merged(param)
        if all(v is None for v in numeric_constraints(param)):
            return converter
        number = text_number(bare)
        return converter if number is None else _exactly_bounded(converter, param, number)

    def _build(self, tp: Any) -> Converter | None:
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
        kind = _fields.kind_of(cls)
        if kind is None:
            record = record_for(cls)  # a scalar, or a subclass of one: `class UserId(str)`
            return record.converter(cls) if record is not None else pydantic_converter(tp)
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
        fields = _fields.class_fields(cls, self.owner)
        convs = {f.name: c for f in fields if (c := self.build(f.annotation, f.param)) is not None}
        make: Callable[..., Any] = dict if kind == "typeddict" else cls

        def convert(value: dict[str, Any]) -> Any:
            data = dict(value)
            failed: list[ConversionError] = []
            for k, conv in convs.items():  # every field's problems, not the first one's
                if k in data:
                    try:
                        data[k] = conv(data[k])
                    except ConversionError as exc:
                        failed.extend(exc.under(k).problems())
            if failed:
                first, *rest = failed
                first.more = tuple(rest)
                raise first
            try:
                return make(**data)
            except (TypeError, ValueError) as exc:
                text = f"{type(exc).__name__}: {exception_text(exc, 200)}"
                raise ConversionError((), text, user_text=True) from exc

        return convert


_FAILS = (
    ("gt", ">", operator.le),
    ("ge", ">=", operator.lt),
    ("lt", "<", operator.ge),
    ("le", "<=", operator.gt),
)


def _exactly_bounded(converter: Converter | None, param: Param, number: TypeRecord) -> Converter:
    """`converter`, then `param`'s bounds and `multiple_of` checked exactly on the value it
    made (a `Decimal`, from a JSON number or a numeric string alike): the validator checks
    only the number branch's keywords, in floats, and a numeric string not at all. `number`:
    the type's record, whose `exact` and `is_multiple` do the arithmetic."""
    exact, is_multiple = number.exact, number.is_multiple
    if exact is None or is_multiple is None:
        raise TypeError(f"{number.python.__name__} is no number that travels as text")
    bounds = []
    for attr, op, fails in _FAILS:
        bound = exact(getattr(param, attr))
        if bound is not None:
            bounds.append((fails, bound, f"must be {op} {bound}"))
    step = exact(param.multiple_of)

    def convert(value: Any) -> Any:
        number = value if converter is None else converter(value)
        if number is None:
            return None
        problems = [text for fails, bound, text in bounds if fails(number, bound)]
        if step is not None and not is_multiple(number, step):
            problems.append(f"must be a multiple of {step}")
        if problems:
            more = tuple(ConversionError((), text) for text in problems[1:])
            raise ConversionError((), problems[0], more=more)
        return number

    return convert


def _enum(cls: type[enum.Enum]) -> Converter:
    members = cls._value2member_map_  # value -> member: what cls(value) looks up first

    def convert(value: Any) -> Any:
        try:
            return members[value]
        except (KeyError, TypeError):  # an alias, a _missing_ hook, an unhashable value
            pass
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
            raise conversion_problems(exc) from None

    return convert


_CONVERTERS: dict[Any, Converter | None] = {}
_MAX_CONVERTERS = 4096


def converter_for(tp: Any, owner: str, param: Param = EMPTY_PARAM) -> Converter | None:
    """The converter for one parameter type (None: pass the JSON value through); `param`:
    the parameter's metadata (its numeric bounds, on a `Decimal`, are checked here).

    Remembered per annotation: a converter depends on the type alone (and those bounds), and
    the same types recur across tools (`owner` only names the function in an error)."""
    bounds = numeric_constraints(param)
    key = tp if all(v is None for v in bounds) else (tp, bounds)
    try:
        return _CONVERTERS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable annotation: built each time
        return _Builder(owner).build(tp, param)
    converter = _Builder(owner).build(tp, param)
    if len(_CONVERTERS) >= _MAX_CONVERTERS:
        _CONVERTERS.clear()
    _CONVERTERS[key] = converter
    return converter
