"""Python types (+ `Param` metadata) -> JSON Schema (Draft 2020-12 subset providers accept).

`SchemaBuilder(owner).build(tp)` returns the schema of one type and collects named types
(TypedDicts, dataclasses, NamedTuples, pydantic models) in `builder.defs`, referenced with
`{"$ref": "#/$defs/Name"}` so nested and recursive types work. Anything without a faithful
JSON Schema raises `UnsupportedTypeError`; nothing unknown is ever turned into `{}`.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import types
import typing
import uuid
from collections import abc
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Protocol

import typing_extensions

from . import _classes
from ._constraints import MetadataMixin
from ._introspect import MISSING, WRAPPER_ORIGINS, split_annotated
from ._jsonable import NOT_JSONABLE, to_jsonable
from ._validator import Validator
from .errors import ToolDefinitionError, UnsupportedTypeError
from .params import EMPTY_PARAM, Param

__all__ = [
    "LITERAL_ORIGINS",
    "MAPPING_ORIGINS",
    "SCALAR_SCHEMAS",
    "SEQUENCE_ORIGINS",
    "SET_ORIGINS",
    "UNION_ORIGINS",
    "WRAPPER_ORIGINS",
    "FieldLike",
    "JsonSchema",
    "SchemaBuilder",
]

JsonSchema = dict[str, Any]

DECIMAL_PATTERN = r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$"

SCALAR_SCHEMAS: dict[Any, JsonSchema] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    dt.datetime: {"type": "string", "format": "date-time"},
    dt.date: {"type": "string", "format": "date"},
    dt.time: {"type": "string", "format": "time"},
    dt.timedelta: {"type": "string", "format": "duration"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    Decimal: {"anyOf": [{"type": "number"}, {"type": "string", "pattern": DECIMAL_PATTERN}]},
}

_SUBCLASSABLE = (int, float, str, dt.datetime, dt.date, dt.time, dt.timedelta, uuid.UUID, Decimal)
_ANY = (typing.Any, typing_extensions.Any, object)
UNION_ORIGINS: set[Any] = {typing.Union, types.UnionType}
LITERAL_ORIGINS = {typing.Literal, typing_extensions.Literal}
SEQUENCE_ORIGINS = {list, abc.Sequence, abc.MutableSequence, abc.Iterable, abc.Collection}
SET_ORIGINS = {set, frozenset, abc.Set, abc.MutableSet}
MAPPING_ORIGINS = {dict, abc.Mapping, abc.MutableMapping}
_BARE_CONTAINERS = frozenset({tuple, *SEQUENCE_ORIGINS, *SET_ORIGINS, *MAPPING_ORIGINS})

_JSON_TYPE_OF = {str: "string", int: "integer", bool: "boolean", float: "number"}


class SchemaBuilder(MetadataMixin):
    """Builds schemas for one tool; `owner` names the function in error messages."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.parameter: str | None = None
        self.defs: dict[str, JsonSchema] = {}
        self._def_names: dict[Any, str] = {}

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
        """Schema of a parameter or field type with its outer metadata applied."""
        schema = self.build(tp)
        return self.apply(schema, param) if param is not EMPTY_PARAM else schema

    def build(self, tp: Any) -> JsonSchema:
        """Schema of one type (`Annotated` metadata inside it is applied too)."""
        scalar = SCALAR_SCHEMAS.get(tp) if isinstance(tp, type) else None
        if scalar is not None:
            return dict(scalar)
        bare, param = split_annotated(tp)
        if bare is not tp:
            return self.field(bare, param)
        return self._build_special(tp)

    def _build_special(self, tp: Any) -> JsonSchema:
        if tp in _ANY:
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
        if isinstance(origin, type) and _classes.is_pydantic_model(origin):
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
        if tp in _BARE_CONTAINERS:  # bare `list`, `dict`, `set`...: items of any type
            return self._build_generic(tp, tp, ())
        if issubclass(cls, enum.Enum):
            values = [m.value for m in cls]
            return self._enum(tp, values, "give the members str or int values")
        if issubclass(cls, PurePath):
            return {"type": "string", "format": "path"}
        if _classes.kind_of(cls) is not None:
            return self._named(tp)
        for base in _SUBCLASSABLE:  # e.g. `class UserId(str)`: described as its base
            if issubclass(cls, base):
                return dict(SCALAR_SCHEMAS[base])
        if cls in (bytes, bytearray, memoryview):
            raise self.unsupported(tp, "bytes cannot travel in JSON", "take a str instead")
        raise self.unsupported(tp, "toolreg does not know how to describe this class", _FIX_TYPES)

    def _named(self, tp: Any) -> JsonSchema:
        """A class with fields -> an entry in $defs, returned as a $ref."""
        cls = typing.get_origin(tp) or tp
        if _classes.kind_of(cls) == "pydantic":
            return _classes.pydantic_ref(self, tp)
        name, is_new = self.reserve(tp, getattr(cls, "__name__", "Model"))
        if is_new:  # the placeholder lets recursive references resolve to `name`
            self.defs[name] = _classes.class_schema(self, tp)
        return {"$ref": f"#/$defs/{name}"}

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
