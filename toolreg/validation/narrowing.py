"""Whether keywords laid over an argument's schema only narrow it (`reshaped(..., narrow=)`).

A reshaped tool's argument schema is the original's with some keywords added or replaced;
the reshaped tool must never admit a value the original refuses (dispatch would run the
reshaped call into the original's own refusal, in words the model never saw). In JSON
Schema 2020-12 every assertion holds on its own, so an added assertion keyword can only
narrow; a replaced one narrows only when it is at least as tight. `narrowing_problem`
allows these keywords, each with its rule, and refuses any other (structural keywords such
as `properties` or `items` can widen through `unevaluated*` and `additionalProperties`):

| keywords                                        | added | replacing the original's    |
|-------------------------------------------------|-------|-----------------------------|
| `enum`, `const`                                 | yes   | yes                         |
|   (either: every value it allows must be one the original accepts, checked by the    |
|   original's own validator: exact, whatever else the schema says)                    |
| `type`                                          | yes   | a subset (integer in number)|
| `minimum`, `exclusiveMinimum`, `minLength`,     | yes   | not lower                   |
|   `minItems`, `minProperties`                   |       |                             |
| `maximum`, `exclusiveMaximum`, `maxLength`,     | yes   | not higher                  |
|   `maxItems`, `maxProperties`                   |       |                             |
| `multipleOf`                                    | yes   | a multiple of the original's|
| `pattern`, `format`                             | yes   | the same one only           |
| `uniqueItems`                                   | yes   | true                        |
| `description`, `title`, `examples`, `default`,  | yes   | yes (annotations)           |
|   `deprecated`                                  |       |                             |
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded when a bound is compared, not by `import toolreg`
    from fractions import Fraction

__all__ = ["NARROWING_KEYWORDS", "narrowing_problem"]

_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_COUNTS = frozenset(
    ("minLength", "minItems", "minProperties", "maxLength", "maxItems", "maxProperties")
)
_SAME = ("pattern", "format")
_ANNOTATIONS = ("description", "title", "examples", "default", "deprecated")
NARROWING_KEYWORDS = frozenset(
    ("enum", "const", "type", "multipleOf", "uniqueItems", *_LOWER, *_UPPER, *_SAME, *_ANNOTATIONS)
)
"""The keywords `narrowing_problem` knows a rule for."""
_TYPES = frozenset(("null", "boolean", "object", "array", "number", "integer", "string"))


def narrowing_problem(
    original: Mapping[str, Any],
    narrow: Mapping[str, Any],
    refusal: Callable[[Any], str | None],
) -> str | None:
    """Why `{**original, **narrow}` admits a value `original` refuses (one sentence), or
    None when it only narrows. `refusal(value)` is the original's own answer for one value:
    None when it accepts it, else why not."""
    unknown = sorted(set(narrow) - NARROWING_KEYWORDS)
    if unknown:
        return (
            f"{', '.join(map(repr, unknown))} cannot be shown to narrow the argument; narrow "
            "it with enum, const, type, bounds, lengths, multipleOf, pattern or format"
        )
    merged = {**original, **narrow}
    if "enum" in narrow or "const" in narrow:
        return _finite(merged, refusal)
    for key, value in narrow.items():
        problem = _keyword(key, value, original)
        if problem is not None:
            return problem
    if "enum" in merged or "const" in merged:  # e.g. a type laid over an enum: still finite
        return _finite(merged, refusal)
    return None


def _finite(merged: Mapping[str, Any], refusal: Callable[[Any], str | None]) -> str | None:
    """A schema with `enum` or `const` admits those values at most: each must be one the
    original accepts."""
    values = [merged["const"]] if "const" in merged else merged["enum"]
    if not isinstance(values, list) or not values:
        return "enum must be a non-empty list of values"
    for value in values:
        why = refusal(value)
        if why is not None:
            return f"the value {_shown(value)} is one the tool refuses ({why})"
    return None


def _keyword(key: str, value: Any, original: Mapping[str, Any]) -> str | None:
    if key in _ANNOTATIONS or key not in original:
        return _shape(key, value)
    before = original[key]
    if key == "type":
        return _types(before, value)
    if key in _LOWER or key in _UPPER or key == "multipleOf":
        problem = _shape(key, value)
        if problem is not None or not _is_number(before):
            return problem
        if key == "multipleOf":
            ratio = _exact(value) / _exact(before)
            if ratio.denominator != 1:
                return f"multipleOf {value} is not a multiple of the tool's {before}"
            return None
        wider = _exact(value) < _exact(before) if key in _LOWER else _exact(value) > _exact(before)
        if wider:
            return f"{key} {value} is wider than the tool's {key} {before}"
        return None
    if key in _SAME:
        if value != before:
            return (
                f"{key} {_shown(value)} replaces the tool's {_shown(before)}, which cannot be "
                f"shown to narrow it; keep the tool's {key} and add enum, maxLength..."
            )
        return None
    if key == "uniqueItems":
        return None if value is True or before is not True else "uniqueItems drops the tool's"
    return None


def _shape(key: str, value: Any) -> str | None:
    """The keyword's value is of its kind (what is wrong, else None)."""
    if key in _LOWER or key in _UPPER or key == "multipleOf":
        if not _is_number(value):
            return f"{key} must be a number, not {_shown(value)}"
        if key in _COUNTS and (not float(value).is_integer() or value < 0):
            return f"{key} must be a whole number >= 0"
        if key == "multipleOf" and value <= 0:
            return "multipleOf must be greater than 0"
        return None
    if key == "type":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names or not all(n in _TYPES for n in names):
            return f"type {_shown(value)} is not a JSON Schema type (or a list of them)"
    if key in _SAME and not isinstance(value, str):
        return f"{key} must be a string"
    if key == "uniqueItems" and not isinstance(value, bool):
        return "uniqueItems must be true or false"
    return None


def _types(before: Any, after: Any) -> str | None:
    problem = _shape("type", after)
    if problem is not None:
        return problem
    old = {before} if isinstance(before, str) else set(before if isinstance(before, list) else ())
    new = {after} if isinstance(after, str) else set(after)
    if "number" in old:
        old.add("integer")
    wider = sorted(new - old)
    if wider:
        return f"type {_shown(after)} admits {', '.join(wider)}, which the tool's type refuses"
    return None


def _is_number(value: Any) -> bool:
    if isinstance(value, (int, float)):
        return not isinstance(value, bool)
    decimal = sys.modules.get("decimal")  # a Decimal means the module is loaded
    return decimal is not None and isinstance(value, decimal.Decimal)


def _exact(value: Any) -> Fraction:
    from fractions import Fraction

    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
