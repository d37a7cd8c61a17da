"""Classes with fields (TypedDict, dataclass, NamedTuple, pydantic model) -> field records."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import typing
import weakref
from typing import Any, Literal, NamedTuple

from ..params import Param
from ..types import (
    ANNOTATED_ORIGINS,
    NOT_REQUIRED_ORIGINS,
    REQUIRED_ORIGINS,
    WRAPPER_ORIGINS,
    is_typeddict,
)
from .docstrings import parse_docstring
from .signature import MISSING, resolve_hints, split_annotated

__all__ = [
    "ClassKind",
    "FieldRecord",
    "class_description",
    "class_fields",
    "is_pydantic_model",
    "kind_of",
]

ClassKind = Literal["typeddict", "dataclass", "namedtuple", "pydantic"]


class FieldRecord(NamedTuple):
    """One field of a class, shaped like a parameter record."""

    name: str
    annotation: Any
    param: Param
    default: Any
    required: bool


def is_pydantic_model(cls: type) -> bool:
    pydantic = sys.modules.get("pydantic")  # never imported by toolreg itself
    return pydantic is not None and isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)


def kind_of(cls: Any) -> ClassKind | None:
    if not isinstance(cls, type):
        return None
    if is_typeddict(cls):
        return "typeddict"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "namedtuple"
    if is_pydantic_model(cls):
        return "pydantic"
    return None


def _peel(tp: Any) -> tuple[Any, Param]:
    """Strip Required/NotRequired/ReadOnly and Annotated, in either order."""
    while typing.get_origin(tp) in WRAPPER_ORIGINS:
        tp = typing.get_args(tp)[0]
    bare, param = split_annotated(tp)
    while typing.get_origin(bare) in WRAPPER_ORIGINS:
        bare = typing.get_args(bare)[0]
    return bare, param


def _typeddict_required(tp: Any, default: bool) -> bool:
    """`Required[...]` / `NotRequired[...]` (inside or outside `Annotated`), else `default`.

    Read from the resolved hint rather than `__required_keys__`, which is wrong when the
    TypedDict's module uses `from __future__ import annotations` (the wrappers are strings
    when the class is created).
    """
    while True:
        origin = typing.get_origin(tp)
        if origin in REQUIRED_ORIGINS:
            return True
        if origin in NOT_REQUIRED_ORIGINS:
            return False
        if (
            origin in WRAPPER_ORIGINS or origin in ANNOTATED_ORIGINS
        ):  # ReadOnly[...], Annotated[...]
            tp = typing.get_args(tp)[0]
            continue
        return default


_FIELDS: weakref.WeakKeyDictionary[type, tuple[FieldRecord, ...]] = weakref.WeakKeyDictionary()


def class_fields(cls: type, owner: str, parameter: str | None = None) -> tuple[FieldRecord, ...]:
    """The fields a model must send to build `cls` (TypedDict, dataclass or NamedTuple).

    Remembered per class: many tools share a TypedDict or dataclass, and its hints need
    resolving only once (a failure is not remembered, so its error names each function).
    """
    try:
        return _FIELDS[cls]
    except (KeyError, TypeError):
        pass
    fields = _read_fields(cls, owner, parameter)
    with contextlib.suppress(TypeError):  # not weakly referenceable: not remembered
        _FIELDS[cls] = fields
    return fields


def _read_fields(cls: type, owner: str, parameter: str | None) -> tuple[FieldRecord, ...]:
    kind = kind_of(cls)
    hints = resolve_hints(cls, owner, parameter)
    if kind == "typeddict":
        total = getattr(cls, "__required_keys__", frozenset(hints))
        return tuple(
            FieldRecord(n, *_peel(t), MISSING, _typeddict_required(t, n in total))
            for n, t in hints.items()
        )
    if kind == "dataclass":
        return tuple(_dataclass_field(f, hints) for f in dataclasses.fields(cls) if f.init)
    if kind == "namedtuple":
        defaults = getattr(cls, "_field_defaults", {})
        return tuple(
            FieldRecord(n, *_peel(hints.get(n, Any)), defaults.get(n, MISSING), n not in defaults)
            for n in cls._fields  # type: ignore[attr-defined]
        )
    return ()


def _dataclass_field(f: dataclasses.Field[Any], hints: dict[str, Any]) -> FieldRecord:
    bare, param = _peel(hints.get(f.name, f.type))
    has_default = (
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    )
    default = f.default if f.default is not dataclasses.MISSING else MISSING
    return FieldRecord(f.name, bare, param, default, not has_default)


def class_description(cls: type) -> tuple[str, dict[str, str]]:
    """The class docstring's summary and field descriptions; "" for generated docstrings."""
    doc = cls.__dict__.get("__doc__")
    if not doc or doc.startswith(f"{cls.__name__}("):
        return "", {}
    info = parse_docstring(doc)  # cleaned there: cleaning twice loses indentation
    return info.summary, dict(info.params)
