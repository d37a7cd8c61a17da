"""Whether a schema is valid JSON Schema 2020-12, fast: the metaschema's rules, by hand.

`conforms(schema)` says what `jsonschema.Draft202012Validator.check_schema(schema)` says
(the metaschema and its seven vocabularies, `format` checked as jsonschema checks it: `regex`
with Python's `re`, `uri` and `uri-reference` when jsonschema has a checker for them), in a
few microseconds a schema instead of a millisecond: registering a tool from a JSON Schema
(`register_schema`, a mount, an OpenAPI document) checks its schema every time.

It answers True only for a schema it has fully checked; anything it is not sure of (a value
that is not plain JSON: a tuple, a `Mapping` that is not a dict, NaN) is False, and the
caller asks jsonschema, which also words the problem. So a False is "ask jsonschema", never
a verdict of its own; a True is jsonschema's verdict (the property tests hold it to that).
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["conforms"]

_SIMPLE_TYPES: Final = frozenset(
    {"array", "boolean", "integer", "null", "number", "object", "string"}
)
_ANCHOR = re.compile(r"^[A-Za-z_][-A-Za-z0-9._]*$").search
_ID = re.compile(r"^[^#]*#?$").search

# What the metaschema says each keyword's value is (the keywords of the seven vocabularies
# and the four the 2020-12 metaschema keeps from earlier drafts); any other key is free.
_SCHEMA, _SCHEMAS, _SCHEMA_MAP, _PATTERN_MAP = "schema", "schemas", "schema map", "patterns"
_STRING, _BOOLEAN, _NUMBER, _COUNT, _ARRAY = "string", "boolean", "number", "count", "array"
_NAMES, _TYPE, _MULTIPLE, _REGEX = "names", "type", "multiple", "regex"
_URI, _URI_REFERENCE, _ID_URI, _ANCHOR_NAME = "uri", "uri-reference", "id", "anchor"
_VOCABULARY, _DEPENDENT, _DEPENDENCIES, _ANY = "vocabulary", "dependent", "dependencies", "any"

_KEYWORDS: Final[dict[str, str]] = {
    # core
    "$id": _ID_URI,
    "$schema": _URI,
    "$ref": _URI_REFERENCE,
    "$anchor": _ANCHOR_NAME,
    "$dynamicRef": _URI_REFERENCE,
    "$dynamicAnchor": _ANCHOR_NAME,
    "$vocabulary": _VOCABULARY,
    "$comment": _STRING,
    "$defs": _SCHEMA_MAP,
    # applicator
    "prefixItems": _SCHEMAS,
    "items": _SCHEMA,
    "contains": _SCHEMA,
    "additionalProperties": _SCHEMA,
    "properties": _SCHEMA_MAP,
    "patternProperties": _PATTERN_MAP,
    "dependentSchemas": _SCHEMA_MAP,
    "propertyNames": _SCHEMA,
    "if": _SCHEMA,
    "then": _SCHEMA,
    "else": _SCHEMA,
    "allOf": _SCHEMAS,
    "anyOf": _SCHEMAS,
    "oneOf": _SCHEMAS,
    "not": _SCHEMA,
    # unevaluated
    "unevaluatedItems": _SCHEMA,
    "unevaluatedProperties": _SCHEMA,
    # validation
    "type": _TYPE,
    "const": _ANY,
    "enum": _ARRAY,
    "multipleOf": _MULTIPLE,
    "maximum": _NUMBER,
    "exclusiveMaximum": _NUMBER,
    "minimum": _NUMBER,
    "exclusiveMinimum": _NUMBER,
    "maxLength": _COUNT,
    "minLength": _COUNT,
    "pattern": _REGEX,
    "maxItems": _COUNT,
    "minItems": _COUNT,
    "uniqueItems": _BOOLEAN,
    "maxContains": _COUNT,
    "minContains": _COUNT,
    "maxProperties": _COUNT,
    "minProperties": _COUNT,
    "required": _NAMES,
    "dependentRequired": _DEPENDENT,
    # meta-data
    "title": _STRING,
    "description": _STRING,
    "default": _ANY,
    "deprecated": _BOOLEAN,
    "readOnly": _BOOLEAN,
    "writeOnly": _BOOLEAN,
    "examples": _ARRAY,
    # format-annotation, content
    "format": _STRING,
    "contentEncoding": _STRING,
    "contentMediaType": _STRING,
    "contentSchema": _SCHEMA,
    # kept from earlier drafts by the 2020-12 metaschema itself
    "definitions": _SCHEMA_MAP,
    "dependencies": _DEPENDENCIES,
    "$recursiveAnchor": _ANCHOR_NAME,
    "$recursiveRef": _URI_REFERENCE,
}


class _Unsure(Exception):
    """A value the fast check does not judge: jsonschema decides."""


def conforms(schema: object) -> bool:
    """Whether `schema` is valid JSON Schema 2020-12, as jsonschema's `check_schema` says;
    False also when this check is not sure (then ask jsonschema)."""
    try:
        return _schema(schema)
    except (_Unsure, RecursionError):
        return False


def _schema(node: object) -> bool:
    if node is True or node is False:
        return True
    if type(node) is not dict:
        return _other(node)
    keywords = _KEYWORDS
    for key, value in node.items():
        kind = keywords.get(key)
        if kind is None or kind is _ANY:
            continue
        if not _CHECKS[kind](value):
            return False
    return True


def _schemas(value: object) -> bool:
    if type(value) is not list:
        return _other(value)
    return bool(value) and all(_schema(item) for item in value)


def _schema_map(value: object) -> bool:
    if type(value) is not dict:
        return _other(value)
    return all(_schema(item) for item in value.values())


def _pattern_map(value: object) -> bool:
    if type(value) is not dict:
        return _other(value)
    return all(_regex(key) for key in value) and all(_schema(item) for item in value.values())


def _string(value: object) -> bool:
    return type(value) is str or _other(value)


def _boolean(value: object) -> bool:
    return value is True or value is False or _other(value)


def _number(value: object) -> bool:
    kind = type(value)
    if kind is int:
        return True
    if kind is float and math.isfinite(value):  # type: ignore[arg-type]
        return True
    return _other(value)


def _count(value: object) -> bool:
    """A `nonNegativeInteger`: an integer (2.0 is one) at least 0."""
    if type(value) is int:
        return value >= 0
    if type(value) is float and math.isfinite(value):
        return value.is_integer() and value >= 0
    return _other(value)


def _multiple(value: object) -> bool:
    return _number(value) and value > 0  # type: ignore[operator]


def _array(value: object) -> bool:
    """`enum`, `examples`: an array of anything."""
    return type(value) is list or _other(value)


def _names(value: object) -> bool:
    """A `stringArray`: unique strings."""
    if type(value) is not list:
        return _other(value)
    return all(type(item) is str for item in value) and len(set(value)) == len(value)


def _type(value: object) -> bool:
    if type(value) is str:
        return value in _SIMPLE_TYPES
    if type(value) is not list:
        return _other(value)
    return (
        bool(value)
        and all(type(item) is str for item in value)
        and set(value) <= _SIMPLE_TYPES
        and len(set(value)) == len(value)
    )


def _regex(value: object) -> bool:
    if type(value) is not str:
        return _other(value)
    try:
        re.compile(value)
    except (re.error, RecursionError, OverflowError, ValueError):
        return False
    return True


def _uri(value: object) -> bool:
    if type(value) is not str:
        return _other(value)
    return _format(value, "uri")


def _uri_reference(value: object) -> bool:
    if type(value) is not str:
        return _other(value)
    return _format(value, "uri-reference")


def _id(value: object) -> bool:
    if type(value) is not str:
        return _other(value)
    return _format(value, "uri-reference") and _ID(value) is not None


def _anchor(value: object) -> bool:
    if type(value) is not str:
        return _other(value)
    return _ANCHOR(value) is not None


def _vocabulary(value: object) -> bool:
    if type(value) is not dict:
        return _other(value)
    return all(_uri(key) for key in value) and all(_boolean(v) for v in value.values())


def _dependent(value: object) -> bool:
    if type(value) is not dict:
        return _other(value)
    return all(_names(item) for item in value.values())


def _dependencies(value: object) -> bool:
    """The legacy `dependencies`: each value a schema or a `stringArray`."""
    if type(value) is not dict:
        return _other(value)
    return all(_names(item) if type(item) is list else _schema(item) for item in value.values())


def _other(value: object) -> bool:
    """False (invalid) for a value of another plain JSON type than the keyword's; `_Unsure`
    for a value that is not plain JSON (jsonschema's view of it may differ from ours)."""
    if value is None or type(value) in (bool, int, str, list, dict):
        return False
    if type(value) is float and math.isfinite(value):
        return False
    raise _Unsure


_FORMATS: dict[str, Any] = {}


def _format(value: str, name: str) -> bool:
    """jsonschema's own check of `format: name`, when it has one (it needs optional
    packages for `uri`); True when it has none, as jsonschema then says."""
    checker = _FORMATS.get(name, _FORMATS)
    if checker is _FORMATS:
        jsonschema = importlib.import_module("jsonschema")  # only here: toolreg stays light
        checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
        checker = _FORMATS[name] = checker if name in checker.checkers else None
    return checker is None or bool(checker.conforms(value, name))


_CHECKS: Final[dict[str, Callable[[object], bool]]] = {
    _SCHEMA: _schema,
    _SCHEMAS: _schemas,
    _SCHEMA_MAP: _schema_map,
    _PATTERN_MAP: _pattern_map,
    _STRING: _string,
    _BOOLEAN: _boolean,
    _NUMBER: _number,
    _COUNT: _count,
    _ARRAY: _array,
    _NAMES: _names,
    _TYPE: _type,
    _MULTIPLE: _multiple,
    _REGEX: _regex,
    _URI: _uri,
    _URI_REFERENCE: _uri_reference,
    _ID_URI: _id,
    _ANCHOR_NAME: _anchor,
    _VOCABULARY: _vocabulary,
    _DEPENDENT: _dependent,
    _DEPENDENCIES: _dependencies,
}
