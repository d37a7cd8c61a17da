"""JSON values: their JSON Schema types, their equality, and safe coercion between them.

`kind`, `is_type`, `equal` and `unique` give JSON Schema's view of a value decoded by
`json.loads`, as jsonschema has it: a bool is not a number, `1 == 1.0`, `True != 1`, an
integral float is an integer; only `dict` is an object and only `list` an array.

`coerce_value(schema, value, resolve, check)` fixes what a model commonly gets slightly
wrong, walking the instance alongside the schema. It returns a new value (or the very
same object when nothing changed), never mutates its input and never raises. The rules,
applied to a string value where the (sub)schema's `type` does not allow a string:

- `integer`: optional ASCII blanks, an optional `-`, ASCII digits (at most 100 of them):
  `"42"`, `" 42 "`, `"-3"`, `"007"` -> int. Rejected: `"+3"`, `"4.5"`, `"4.0"`, `"1e3"`,
  `"0x10"`, `"1_000"`, non-ASCII digits.
- `number`: a JSON number with optional blanks (leading zeros allowed): `"2"` -> 2,
  `"3.5"`, `"-0.25"`, `"1e-3"` -> float. Rejected: `"nan"`, `"inf"`, `"Infinity"`, `".5"`,
  `"5."`, `"+1"`, and anything that overflows to infinity.
- `boolean`: `"true"` / `"false"`, any case, optional blanks. Nothing else.
- `array` / `object`: a string holding a JSON array / object (at most `MAX_JSON_CHARS`
  characters, no NaN/Infinity) -> the decoded value, then coerced further.
- `null`: never.

The walk follows `$ref`, `allOf`, `properties`, `patternProperties`,
`additionalProperties`, `prefixItems` and `items`; for `anyOf`/`oneOf` it tries the
alternatives in order and keeps the first coerced value that the alternative accepts.
A type list is tried in its order. Values under `enum`/`const` without `type` are left as
they are.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Hashable
from typing import Any, Final

from ..jsonvalues import strict_decoder

__all__ = ["MAX_JSON_CHARS", "coerce_value", "equal", "is_type", "kind", "unique"]

#: Longest JSON-encoded string decoded for an array or object parameter.
MAX_JSON_CHARS: Final = 1_000_000
_MAX_DEPTH: Final = 200
_INTEGER = re.compile(r"[ \t\r\n]*-?[0-9]{1,100}[ \t\r\n]*")
_NUMBER = re.compile(
    r"[ \t\r\n]*-?[0-9]{1,100}(?:\.[0-9]{1,100})?(?:[eE][+-]?[0-9]{1,4})?[ \t\r\n]*"
)
_NOTHING: Final = object()

Resolve = Callable[[str], Any]
Check = Callable[[Any, object], bool]
Search = Callable[[str, str], bool]
"""`search(pattern, name)`: whether a `patternProperties` pattern matches a property name."""


def _search_re(pattern: str, name: str) -> bool:
    return re.search(pattern, name) is not None


_KINDS: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_kind(value: object) -> str | None:
    """The JSON type name of `value` (any float is a number), None for a non-JSON value."""
    name = _KINDS.get(type(value))
    if name is None:
        name = next((n for t, n in _KINDS.items() if isinstance(value, t)), None)
    return name


def kind(value: object) -> str:
    """The JSON type name of `value`, else its Python type name (for messages)."""
    return json_kind(value) or type(value).__name__


def is_type(names: frozenset[str], value: object) -> bool:
    """Whether `value` is of one of the JSON Schema types `names`."""
    name = json_kind(value)
    if name == "integer":
        return "integer" in names or "number" in names
    if name == "number":
        return "number" in names or (
            "integer" in names and isinstance(value, float) and value.is_integer()
        )
    return name in names


def equal(a: object, b: object) -> bool:
    """JSON equality: `1 == 1.0`, `True != 1`, deep in lists and dicts."""
    if a is b:
        return True
    kinds = {json_kind(a), json_kind(b)}
    if kinds <= {"integer", "number"}:
        return a == b
    if len(kinds) != 1 or None in kinds:
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(k in b and equal(x, b[k]) for k, x in a.items())
    return a == b


def _key(value: object) -> Hashable:
    """A hashable stand-in for a JSON value: keys are equal exactly when values are `equal`."""
    if isinstance(value, list):
        return ("array", tuple(map(_key, value)))
    if isinstance(value, dict):
        return ("object", frozenset((k, _key(x)) for k, x in value.items()))
    name = json_kind(value)
    if name is None:
        raise TypeError(name)
    return ("number" if name == "integer" else name, value)


def unique(values: list[Any]) -> bool:
    """Whether no two items of `values` are `equal` (linear time for JSON values)."""
    try:
        return len({_key(x) for x in values}) == len(values)
    except TypeError:  # an unhashable non-JSON value: compare every pair
        return not any(equal(x, values[j]) for i, x in enumerate(values) for j in range(i))


def _from_string(kind: object, text: str) -> object:
    """The value of `text` read as JSON type `kind`, or `_NOTHING`."""
    if kind == "integer" and _INTEGER.fullmatch(text):
        return int(text)
    if kind == "number" and _NUMBER.fullmatch(text):
        stripped = text.strip(" \t\r\n")
        if stripped.lstrip("-").isdigit():
            return int(stripped)
        number = float(stripped)
        return number if math.isfinite(number) else _NOTHING
    if kind == "boolean":
        word = text.strip(" \t\r\n").lower()
        return {"true": True, "false": False}.get(word, _NOTHING)
    if kind in ("array", "object") and len(text) <= MAX_JSON_CHARS:
        opener = "[" if kind == "array" else "{"
        if text.lstrip(" \t\r\n").startswith(opener):
            try:
                decoded = strict_decoder.decode(text)
            except (ValueError, RecursionError):
                return _NOTHING
            if isinstance(decoded, list if kind == "array" else dict):
                return decoded
    return _NOTHING


def coerce_value(
    schema: object, value: object, resolve: Resolve, check: Check, search: Search = _search_re
) -> object:
    """`value` coerced as `schema` says; `value` itself when no rule applies. Never raises.

    `resolve(ref)` returns the schema a local `$ref` points to (or None); `check(schema, v)`
    tells whether `v` is valid against a subschema of the same document; `search(pattern,
    name)` whether a `patternProperties` pattern matches a property name (`re` by default;
    an untrusted schema's validator passes its bounded search, as it validates with).
    """
    try:
        return _Walk(resolve, check, search).coerce(schema, value, 0)
    except Exception:  # coercion is best effort: any surprise leaves the value alone
        return value


class _Walk:
    __slots__ = ("check", "resolve", "search")

    def __init__(self, resolve: Resolve, check: Check, search: Search) -> None:
        self.resolve = resolve
        self.check = check
        self.search = search

    def coerce(self, schema: object, value: object, depth: int) -> object:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return value
        depth += 1
        ref = schema.get("$ref")
        if isinstance(ref, str):
            value = self.coerce(self.resolve(ref), value, depth)
        for sub in _list(schema.get("allOf")):
            value = self.coerce(sub, value, depth)
        for key in ("anyOf", "oneOf"):
            value = self._alternatives(_list(schema.get(key)), value, depth)
        value = self._scalar(schema.get("type"), value)
        if isinstance(value, dict):
            return self._object(schema, value, depth)
        if isinstance(value, list):
            return self._array(schema, value, depth)
        return value

    def _alternatives(self, alternatives: list[Any], value: object, depth: int) -> object:
        if not alternatives or any(self.check(alt, value) for alt in alternatives):
            return value
        for alt in alternatives:
            candidate = self.coerce(alt, value, depth)
            if candidate is not value and self.check(alt, candidate):
                return candidate
        return value

    @staticmethod
    def _scalar(types: object, value: object) -> object:
        if not isinstance(value, str) or types is None:
            return value
        kinds = [types] if isinstance(types, str) else _list(types)
        if "string" in kinds:
            return value
        for kind in kinds:
            result = _from_string(kind, value)
            if result is not _NOTHING:
                return result
        return value

    def _object(self, schema: dict[str, Any], value: dict[Any, Any], depth: int) -> object:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        additional = schema.get("additionalProperties")
        changed: dict[Any, object] = {}
        for key, item in value.items():
            if key in properties:
                sub = properties[key]
            else:
                search = self.search
                sub = next((s for p, s in patterns.items() if search(p, key)), additional)
            new = self.coerce(sub, item, depth)
            if new is not item:
                changed[key] = new
        return {**value, **changed} if changed else value

    def _array(self, schema: dict[str, Any], value: list[Any], depth: int) -> object:
        prefix = _list(schema.get("prefixItems"))
        items = schema.get("items")
        new = [
            self.coerce(prefix[i] if i < len(prefix) else items, item, depth)
            for i, item in enumerate(value)
        ]
        if all(map(operator.is_, new, value)):
            return value
        return new


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
