"""Classes with fields (TypedDict, dataclass, NamedTuple, pydantic model) -> field records."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import typing_extensions

from ._docstrings import parse_docstring
from ._introspect import MISSING, resolve_hints, split_annotated
from .params import Param

if TYPE_CHECKING:
    from .schema import JsonSchema, SchemaBuilder

__all__ = [
    "ClassKind",
    "FieldRecord",
    "class_fields",
    "class_schema",
    "is_pydantic_model",
    "kind_of",
]

ClassKind = Literal["typeddict", "dataclass", "namedtuple", "pydantic"]

_WRAPPERS = {
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
    getattr(typing, "Required", None),
    getattr(typing, "NotRequired", None),
    getattr(typing, "ReadOnly", None),
} - {None}


@dataclass(frozen=True, slots=True)
class FieldRecord:
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
    if typing_extensions.is_typeddict(cls):
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
    while typing.get_origin(tp) in _WRAPPERS:
        tp = typing.get_args(tp)[0]
    bare, param = split_annotated(tp)
    while typing.get_origin(bare) in _WRAPPERS:
        bare = typing.get_args(bare)[0]
    return bare, param


def class_fields(cls: type, owner: str) -> tuple[FieldRecord, ...]:
    """The fields a model must send to build `cls` (TypedDict, dataclass or NamedTuple)."""
    kind = kind_of(cls)
    hints = resolve_hints(cls, owner)
    if kind == "typeddict":
        required_keys = getattr(cls, "__required_keys__", frozenset(hints))
        return tuple(
            FieldRecord(n, *_peel(t), MISSING, n in required_keys) for n, t in hints.items()
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
    info = parse_docstring(inspect.cleandoc(doc))
    return info.summary, dict(info.params)


def class_schema(builder: SchemaBuilder, tp: Any) -> JsonSchema:
    """The object schema of a class with fields (its $defs entry)."""
    cls = typing.get_origin(tp) or tp
    if kind_of(cls) == "pydantic":
        return _pydantic_schema(builder, tp)
    summary, docs = class_description(cls)
    schema = builder.object_schema(class_fields(cls, builder.owner), docs)
    if summary:
        schema = {"description": summary, **schema}
    return schema


def _pydantic_schema(builder: SchemaBuilder, model: Any) -> JsonSchema:
    schema: dict[str, Any] = model.model_json_schema(ref_template="#/$defs/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        builder.defs.setdefault(name, sub)
    schema.pop("title", None)
    return schema
