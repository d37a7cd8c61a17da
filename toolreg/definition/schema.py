"""Python types (+ `Param` metadata) -> JSON Schema (Draft 2020-12 subset providers accept).

`SchemaBuilder(owner).build(tp)` returns the schema of one type and collects named types
(TypedDicts, dataclasses, NamedTuples, pydantic models) in `builder.defs`, referenced with
`{"$ref": "#/$defs/Name"}` so nested and recursive types work. Anything without a faithful
JSON Schema raises `UnsupportedTypeError`; nothing unknown is ever turned into `{}`.
"""

from __future__ import annotations

import enum
import json
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..errors import ToolDefinitionError, UnsupportedTypeError
from ..jsonvalues import NOT_JSONABLE
from ..params import EMPTY_PARAM, Param
from ..types import (
    ANY_TYPES,
    BARE_CONTAINERS,
    BUILTIN_TYPES,
    LITERAL_ORIGINS,
    MAPPING_ORIGINS,
    SEQUENCE_ORIGINS,
    SET_ORIGINS,
    UNION_ORIGINS,
    WRAPPER_ORIGINS,
    TypeRecord,
    record_for,
    to_jsonable,
)
from ..validation import Validator, self_contained_node
from ..validation.keywords import Node
from . import fields as _fields
from .constraints import apply_param, jsonable
from .pydantic_types import pydantic_schema
from .signature import MISSING, split_annotated

__all__ = ["FieldLike", "JsonSchema", "SchemaBuilder", "text_number"]

JsonSchema = dict[str, Any]

_JSON_TYPE_OF = {str: "string", int: "integer", bool: "boolean", float: "number"}


class SchemaBuilder:
    """Builds schemas for one tool; `owner` names the function in error messages."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.parameter: str | None = None
        self.defs: dict[str, JsonSchema] = {}
        self._def_names: dict[Any, str] = {}
        self._refs = 0  # $refs handed out: a schema that has one belongs to this builder
        # The schemas `field` handed out, each with its compiled check (see `Validator`'s
        # `nodes`); kept here, so that no `id` is reused while the list lives.
        self.checks: list[tuple[JsonSchema, Node]] = []

    # -- errors ---------------------------------------------------------------------------
    def unsupported(self, tp: Any, why: str, fix: str) -> UnsupportedTypeError:
        return UnsupportedTypeError(
            f"{why} ({_type_repr(tp)})",
            annotation=tp,
            function=self.owner,
            parameter=self.parameter,
            fix=fix,
        )

    def definition_error(self, problem: str, fix: str) -> ToolDefinitionError:
        return ToolDefinitionError(problem, function=self.owner, parameter=self.parameter, fix=fix)

    # -- entry points ---------------------------------------------------------------------
    def field(self, tp: Any, param: Param) -> JsonSchema:
        """Schema of a parameter or field type with its outer metadata applied.

        Remembered per (annotation, metadata) when it refers to no class in `$defs`: the same
        annotations recur across tools (`str`, a `Literal`, an Enum, `list[str]`), and their
        schema never changes. The caller gets its own top-level dict (it adds a description
        or a default); what is nested inside is shared and never changed. The fragment's
        compiled check is remembered with it and listed in `checks`, for the tool's validator.
        """
        try:
            key: tuple[Any, Param] | None = (tp, param)
            cached = _FRAGMENTS.get(key)  # type: ignore[arg-type]
        except TypeError:  # unhashable metadata (a list of examples, say): built each time
            key = cached = None
        if cached is None:
            refs = self._refs
            schema = self.build(tp)
            if param is not EMPTY_PARAM:
                schema = apply_param(schema, param, self.definition_error, text_number(tp))
            if key is None or refs != self._refs:  # a $ref inside: this tool's own
                return schema
            if len(_FRAGMENTS) >= _MAX_FRAGMENTS:
                _FRAGMENTS.clear()
            cached = _FRAGMENTS[key] = (schema, self_contained_node(schema))
        fragment, check = cached
        schema = dict(fragment)
        if check is not None:
            self.checks.append((schema, check))
        return schema

    def jsonable(self, value: Any, what: str) -> Any:
        """`value` as JSON for the schema (an example, a default), or a definition error."""
        return jsonable(value, what, self.definition_error)

    def build(self, tp: Any) -> JsonSchema:
        """Schema of one type (`Annotated` metadata inside it is applied too)."""
        scalar = _SCALARS.get(tp) if isinstance(tp, type) else None
        if scalar is not None:
            return dict(scalar)
        bare, param = split_annotated(tp)
        if bare is not tp:
            return self.field(bare, param)
        return self._build_special(tp)

    def _build_special(self, tp: Any) -> JsonSchema:
        if tp in ANY_TYPES:
            return {}
        if tp is None:
            return {"type": "null"}
        origin = typing.get_origin(tp)
        if origin is not None:
            return self._build_generic(tp, origin, typing.get_args(tp))
        if hasattr(tp, "__supertype__"):  # NewType
            return self.build(tp.__supertype__)
        if type(tp).__name__ == "TypeAliasType":  # `type X = ...` and typing_extensions
            return self.build(tp.__value__)
        if isinstance(tp, type):
            return self._build_class(tp)
        if isinstance(tp, (str, typing.ForwardRef)):
            raise self.unsupported(
                tp, "unresolved forward reference", "define the referenced type at module level"
            )
        if isinstance(tp, typing.TypeVar):
            raise self.unsupported(tp, "a TypeVar has no schema", "use a concrete type")
        raise self.unsupported(tp, "not a type toolreg can describe", _FIX_TYPES)

    def _build_generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> JsonSchema:
        if origin in LITERAL_ORIGINS:
            return self._enum(tp, _literal_values(args), "use str, int, float, bool or None values")
        if origin in UNION_ORIGINS:
            return self._union(args)
        if origin in WRAPPER_ORIGINS:
            return self.build(args[0])
        if origin in SEQUENCE_ORIGINS:
            return {"type": "array", "items": self.build(args[0])} if args else {"type": "array"}
        if origin is tuple:
            return self._tuple(tp, args)
        if origin in SET_ORIGINS:
            items = {"items": self.build(args[0])} if args else {}
            return {"type": "array", **items, "uniqueItems": True}
        if origin in MAPPING_ORIGINS:
            return self._mapping(tp, args)
        if isinstance(origin, type) and _fields.is_pydantic_model(origin):
            return self._build_class(tp)
        raise self.unsupported(tp, "this generic type has no JSON Schema equivalent", _FIX_TYPES)

    def _enum(self, tp: Any, values: list[Any], fix: str) -> JsonSchema:
        """`{"type": ..., "enum": [...]}` for Literal and Enum values that JSON can carry."""
        if not values:
            raise self.unsupported(tp, "an Enum without members accepts no value", "add members")
        for value in values:
            if value is not None and not isinstance(value, (str, int, float)):
                raise self.unsupported(tp, f"the value {value!r} cannot be sent as JSON", fix)
        return _enum_with_type(values)

    def _union(self, args: tuple[Any, ...]) -> JsonSchema:
        options: list[JsonSchema] = []
        for arg in args:
            schema = self.build(arg)
            if not schema:  # `Any | None` is just Any
                return {}
            branches = schema["anyOf"] if set(schema) == {"anyOf"} else [schema]
            options.extend(b for b in branches if b not in options)
        return options[0] if len(options) == 1 else {"anyOf": options}

    def _tuple(self, tp: Any, args: tuple[Any, ...]) -> JsonSchema:
        if args == ((),) or (not args and getattr(tp, "__args__", None) == ()):
            return {"type": "array", "maxItems": 0}  # `tuple[()]`: the empty tuple
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": self.build(args[0])}
        items = [self.build(a) for a in args]
        n = len(items)
        return {"type": "array", "prefixItems": items, "items": False, "minItems": n, "maxItems": n}

    def _mapping(self, tp: Any, args: tuple[Any, ...]) -> JsonSchema:
        if not args:
            return {"type": "object"}
        key, value = args
        if self.build(split_annotated(key)[0]) != {"type": "string"}:  # str, NewType of str...
            raise self.unsupported(
                tp, "JSON object keys are always plain strings", "use dict[str, ...] as the type"
            )
        return {"type": "object", "additionalProperties": self.build(value)}

    def _build_class(self, tp: Any) -> JsonSchema:
        cls = typing.get_origin(tp) or tp
        if tp in BARE_CONTAINERS:  # bare `list`, `dict`, `set`...: items of any type
            return self._build_generic(tp, tp, ())
        if issubclass(cls, enum.Enum):
            values = [m.value for m in cls]
            return self._enum(tp, values, "give the members str or int values")
        if _fields.kind_of(cls) is not None:
            return self._named(tp)
        record = record_for(cls)  # e.g. `class UserId(str)`: described as its base
        if record is not None:
            return dict(record.schema)
        if cls in (bytes, bytearray, memoryview):
            raise self.unsupported(tp, "bytes cannot travel in JSON", "take a str instead")
        special = pydantic_schema(tp)  # AwareDatetime, SecretStr, EmailStr...
        if special is not None:
            return special
        raise self.unsupported(tp, "toolreg does not know how to describe this class", _FIX_TYPES)

    def _named(self, tp: Any) -> JsonSchema:
        """A class with fields -> an entry in $defs, returned as a $ref."""
        cls = typing.get_origin(tp) or tp
        self._refs += 1
        if _fields.kind_of(cls) == "pydantic":
            return self._pydantic_ref(tp)
        name, is_new = self.reserve(tp, getattr(cls, "__name__", "Model"))
        if is_new:  # the placeholder lets recursive references resolve to `name`
            self.defs[name] = self._class_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def _class_schema(self, cls: type) -> JsonSchema:
        """The object schema of a TypedDict, dataclass or NamedTuple (its $defs entry)."""
        summary, docs = _fields.class_description(cls)
        fields = _fields.class_fields(cls, self.owner, self.parameter)
        schema = self.object_schema(fields, docs)
        if summary:
            schema = {"description": summary, **schema}
        return schema

    def _pydantic_ref(self, model: Any) -> JsonSchema:
        """A pydantic model's own JSON Schema, its `$defs` merged into `self.defs`.

        Every definition is renamed into the builder's namespace (no clash with a TypedDict
        or dataclass of the same name; one entry for a model used twice), recursive models
        keep their self-reference, pydantic's generated titles are dropped, and models get
        `additionalProperties: false` unless they allow extra keys (like every other class).
        """
        try:
            raw: dict[str, Any] = model.model_json_schema(ref_template=_REF + "{model}")
        except Exception as exc:  # pydantic's own "cannot generate a schema for ..." errors
            raise self.unsupported(
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
            names[key], is_new = self.reserve(token, key.lstrip("\0"))
            if is_new:
                fresh.append((names[key], sub))
        for name, sub in fresh:
            tidy = _tidy_pydantic(sub, names, None)
            tidy.pop("title", None)
            self.defs[name] = tidy
        return {"$ref": _REF + names[top]}

    def reserve(self, key: Any, base: str) -> tuple[str, bool]:
        """The $defs name for `key` (a type or a token), and whether it was just reserved."""
        name = self._def_names.get(key)
        if name is not None:
            return name, False
        name = base = re.sub(r"[^A-Za-z0-9_.-]", "_", base) or "Model"
        n = 2
        while name in self.defs:
            name, n = f"{base}{n}", n + 1
        self._def_names[key] = name
        self.defs[name] = {}
        return name, True

    def object_schema(
        self,
        fields: Iterable[FieldLike],
        docs: Mapping[str, str],
        additional: bool | JsonSchema = False,
    ) -> JsonSchema:
        """An object schema from parameter or field records; `docs` fills missing descriptions."""
        outer = self.parameter
        properties: dict[str, JsonSchema] = {}
        required: list[str] = []
        for f in fields:
            self.parameter = f"{outer}.{f.name}" if outer else f.name
            schema = self.field(f.annotation, f.param)
            if "description" not in schema and docs.get(f.name):
                schema["description"] = docs[f.name]
            if f.default is not MISSING:
                self._set_default(schema, f.default)
            properties[f.name] = schema
            if f.required:
                required.append(f.name)
        self.parameter = outer
        result: JsonSchema = {"type": "object", "properties": properties}
        if required:
            result["required"] = required
        result["additionalProperties"] = additional
        return result

    def _set_default(self, schema: JsonSchema, default: Any) -> None:
        value = to_jsonable(default)
        if value is NOT_JSONABLE:
            return  # documented: a default JSON cannot express is simply not advertised
        if not _obviously_valid(schema, value):
            problems = Validator({**schema, "$defs": self.defs}).validate(value)
            if problems:
                raise self.definition_error(
                    f"the default {default!r} does not match the annotation "
                    f"({problems[0].message})",
                    "change the default, or widen the type (e.g. `int | None = None`)",
                )
        schema["default"] = value


def text_number(tp: Any) -> TypeRecord | None:
    """The record of a number that may travel as a numeric string (`Decimal`, `Decimal |
    None`: its `number_text` is set); None for any other type."""
    if typing.get_origin(tp) in UNION_ORIGINS:
        others = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(others) != 1:
            return None
        tp = others[0]
    record = record_for(tp) if isinstance(tp, type) else None
    return record if record is not None and record.number_text is not None else None


_FIX_TYPES = (
    "use str, int, float, bool, Literal, an Enum, list/dict/tuple of those, a TypedDict, "
    "a dataclass, a NamedTuple or a pydantic model; or register an explicit JSON schema"
)


class FieldLike(Protocol):
    """A parameter or a class field: what `object_schema` reads."""

    @property
    def name(self) -> str: ...
    @property
    def annotation(self) -> Any: ...
    @property
    def param(self) -> Param: ...
    @property
    def default(self) -> Any: ...
    @property
    def required(self) -> bool: ...


_REF = "#/$defs/"
_FRAGMENTS: dict[tuple[Any, Param], tuple[JsonSchema, Node | None]] = {}
_MAX_FRAGMENTS = 4096
_SCALARS: dict[Any, JsonSchema] = {r.python: dict(r.schema) for r in BUILTIN_TYPES}
"""The exact scalar types, for the one dictionary look-up most annotations need."""

_PY_OF_JSON: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "number": (int, float),
}


_ANNOTATION_KEYS = frozenset({"description", "title", "examples", "default"})


def _obviously_valid(schema: JsonSchema, value: Any) -> bool:
    """Cheap pre-check for a default: True only when it surely matches `schema` (a bare
    type, an enum, or a union of those); False means "ask the validator"."""
    keys = schema.keys() - _ANNOTATION_KEYS
    if keys == {"anyOf"}:
        return any(_obviously_valid(option, value) for option in schema["anyOf"])
    if not keys <= {"type", "enum"}:
        return False
    if "enum" in keys and not any(type(v) is type(value) and v == value for v in schema["enum"]):
        return False
    kind = schema.get("type")
    if kind is None:
        return "enum" in keys
    if kind == "null":
        return value is None
    expected = _PY_OF_JSON.get(kind) if isinstance(kind, str) else None
    return (
        expected is not None
        and isinstance(value, expected)
        and not (isinstance(value, bool) and kind != "boolean")
    )


def _literal_values(values: tuple[Any, ...]) -> list[Any]:
    """The values of a `Literal` (nested Literals flattened, Enum members as their value)."""
    flat: list[Any] = []
    for v in values:
        flat.extend(_literal_values(typing.get_args(v)) if _is_literal(v) else [v])
    return [v.value if isinstance(v, enum.Enum) else v for v in flat]


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) in LITERAL_ORIGINS


def _enum_with_type(values: list[Any]) -> JsonSchema:
    kinds = {_JSON_TYPE_OF.get(type(v)) for v in values}
    schema: JsonSchema = {"enum": values}
    if len(kinds) == 1 and None not in kinds:
        return {"type": kinds.pop(), **schema}
    return schema


def _type_repr(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


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
