"""Classes with fields (TypedDict, dataclass, NamedTuple, pydantic model) -> field records."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import typing
import weakref
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import typing_extensions

from ._docstrings import parse_docstring
from ._introspect import MISSING, WRAPPER_ORIGINS, resolve_hints, split_annotated
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
    "pydantic_ref",
]

ClassKind = Literal["typeddict", "dataclass", "namedtuple", "pydantic"]

_REQUIRED = {typing_extensions.Required, getattr(typing, "Required", None)} - {None}
_NOT_REQUIRED = {typing_extensions.NotRequired, getattr(typing, "NotRequired", None)} - {None}
_ANNOTATED = {typing.Annotated, typing_extensions.Annotated}


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
        if origin in _REQUIRED:
            return True
        if origin in _NOT_REQUIRED:
            return False
        if origin in WRAPPER_ORIGINS or origin in _ANNOTATED:  # ReadOnly[...], Annotated[...]
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


def class_schema(builder: SchemaBuilder, tp: Any) -> JsonSchema:
    """The object schema of a TypedDict, dataclass or NamedTuple (its $defs entry)."""
    cls = typing.get_origin(tp) or tp
    summary, docs = class_description(cls)
    fields = class_fields(cls, builder.owner, builder.parameter)
    schema = builder.object_schema(fields, docs)
    if summary:
        schema = {"description": summary, **schema}
    return schema


_REF = "#/$defs/"


def pydantic_ref(builder: SchemaBuilder, model: Any) -> JsonSchema:
    """A pydantic model's own JSON Schema, its `$defs` merged into `builder.defs`.

    Every definition is renamed into the builder's namespace (no clash with a TypedDict or
    dataclass of the same name; one entry for a model used twice), recursive models keep
    their self-reference, pydantic's generated titles are dropped, and models get
    `additionalProperties: false` unless they allow extra keys (like every other class).
    """
    try:
        raw: dict[str, Any] = model.model_json_schema(ref_template=_REF + "{model}")
    except Exception as exc:  # pydantic's own "cannot generate a schema for ..." errors
        raise builder.unsupported(
            model, f"pydantic cannot describe this model ({exc})", "fix the model's field types"
        ) from exc
    entries: dict[str, Any] = raw.pop("$defs", {})
    own = raw.get("$ref", "")
    top = own[len(_REF) :] if set(raw) == {"$ref"} and own.startswith(_REF) else None
    if top is None:
        top = "\0" + getattr(model, "__name__", "Model")  # a key pydantic never produces
        entries[top] = raw
    names: dict[str, str] = {}
    fresh: list[tuple[str, Any]] = []
    for key, sub in entries.items():
        token = ("pydantic", json.dumps(sub, sort_keys=True, default=repr))
        names[key], is_new = builder.reserve(token, key.lstrip("\0"))
        if is_new:
            fresh.append((names[key], sub))
    for name, sub in fresh:
        tidy = _tidy_pydantic(sub, names, None)
        tidy.pop("title", None)
        builder.defs[name] = tidy
    return {"$ref": _REF + names[top]}


_VALUE_KEYS = frozenset({"default", "examples", "const", "enum"})


def _tidy_pydantic(node: Any, names: dict[str, str], field: str | None) -> Any:
    if isinstance(node, list):
        return [_tidy_pydantic(item, names, None) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
            out[key] = _REF + names.get(value[len(_REF) :], value[len(_REF) :])
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: _tidy_pydantic(v, names, k) for k, v in value.items()}
        elif key in _VALUE_KEYS:
            out[key] = value
        else:
            out[key] = _tidy_pydantic(value, names, None)
    if field is not None and out.get("title") == field.title().replace("_", " ").strip():
        del out["title"]  # pydantic's generated title: "some_field" -> "Some Field"
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out
