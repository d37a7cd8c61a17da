"""`Param` metadata on a schema: descriptions, examples, and constraints checked against the
type they constrain (a bound on a string, or bounds that leave no value, are errors).

`apply_param(schema, param, fail)` returns the schema with the metadata applied; `fail(problem,
fix)` makes the `ToolDefinitionError` to raise, naming the function and parameter being
described (the schema builder passes its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import ToolDefinitionError, with_article
from ..jsonvalues import NOT_JSONABLE, copy_json
from ..params import Param
from ..types import TypeRecord, to_jsonable

__all__ = ["Fail", "apply_param", "jsonable", "numeric_constraints"]

JsonSchema = dict[str, Any]
Fail = Callable[[str, str], ToolDefinitionError]
"""`fail(problem, fix)`: the error to raise, naming where the problem is."""


def apply_param(
    schema: JsonSchema, param: Param, fail: Fail, number: TypeRecord | None = None
) -> JsonSchema:
    """Apply `Param` metadata (description, constraints, examples...) to a schema.

    `number`: the schema is of a number that may travel as a numeric string (a `Decimal`:
    `anyOf` number / string), this is its type's record: its bounds go on the number branch
    as keywords and are said on the string branch in words (dispatch checks them on the
    converted value, `definition.conversion`)."""
    out = dict(schema)
    target = _constraint_target(out)
    if number is not None and any(v is not None for v in numeric_constraints(param)):
        _apply_text_number(out, param, fail, number)
    else:
        _apply_numeric(target, param, fail)
    _apply_lengths(target, param, fail)
    _apply_string(target, param, fail)
    if param.description is not None:
        out["description"] = param.description
    if param.title is not None:
        out["title"] = param.title
    if param.examples is not None:
        out["examples"] = [jsonable(e, "examples", fail) for e in param.examples]
    out.update(param.extra)
    return out


def _apply_numeric(target: JsonSchema, param: Param, fail: Fail) -> None:
    for attr, keyword in _NUMERIC.items():
        value = getattr(param, attr)
        if value is not None:
            _require_type(target, {"integer", "number"}, attr, fail)
            target[keyword] = _number(value, attr, fail)
    if param.multiple_of is not None:
        _require_type(target, {"integer", "number"}, "multiple_of", fail)
        if _number(param.multiple_of, "multiple_of", fail) <= 0:
            raise fail("multiple_of must be > 0", "pass a positive number")
        target["multipleOf"] = param.multiple_of
    for low, low_open in _bounds(target, "minimum", "exclusiveMinimum"):
        for high, high_open in _bounds(target, "maximum", "exclusiveMaximum"):
            if low > high or (low == high and (low_open or high_open)):
                raise fail(
                    f"the bounds leave no valid value (lower {low}, upper {high})",
                    "check ge/gt/le/lt: the lower bound must be below the upper bound",
                )


def numeric_constraints(param: Param) -> tuple[Any, Any, Any, Any, Any]:
    """`param`'s (gt, ge, lt, le, multiple_of), each None when not set."""
    return (param.gt, param.ge, param.lt, param.le, param.multiple_of)


def _json_number(value: Any) -> int | float:
    """An exact bound (a Decimal) as a JSON Schema keyword's number (the schema is JSON)."""
    if value == value.to_integral_value() and value.adjusted() < 300:
        return int(value)
    return float(value)


_SAID = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def _apply_text_number(out: JsonSchema, param: Param, fail: Fail, record: TypeRecord) -> None:
    """Bounds on a number that may travel as a numeric string: keywords on the number branch,
    words on the string branch. `multiple_of` only in words: JSON Schema's `multipleOf` is
    tested in binary floats, where 0.07 is not a multiple of 0.01."""
    branches = copy_json(out["anyOf"])
    number = next(b for b in branches if b.get("type") == "number")
    text = next(b for b in branches if b.get("type") == "string")
    out["anyOf"] = branches
    exact_of, words = record.exact, record.number_text
    if exact_of is None or words is None:
        raise TypeError(f"{record.python.__name__} is no number that travels as text")
    bounds: dict[str, Any] = {}
    for attr, keyword in _NUMERIC.items():
        value = getattr(param, attr)
        if value is None:
            continue
        exact = exact_of(value)
        if exact is None:
            raise fail(f"{attr}={value!r} must be a number", f"pass a number, e.g. {attr}=0")
        bounds[attr] = exact
        number[keyword] = _json_number(exact)
    said = [f"{_SAID[attr]} {bound}" for attr, bound in bounds.items()]
    if param.multiple_of is not None:
        step = exact_of(param.multiple_of)
        if step is None or step <= 0:
            raise fail("multiple_of must be > 0", "pass a positive number")
        said.append(f"a multiple of {step}")
        number["description"] = f"a multiple of {step}"
    text["description"] = f"{words} {' and '.join(said)}"
    for low_key in ("ge", "gt"):
        for high_key in ("le", "lt"):
            low, high = bounds.get(low_key), bounds.get(high_key)
            if low is None or high is None:
                continue
            if low > high or (low == high and (low_key == "gt" or high_key == "lt")):
                raise fail(
                    f"the bounds leave no valid value (lower {low}, upper {high})",
                    "check ge/gt/le/lt: the lower bound must be below the upper bound",
                )


def _number(value: Any, what: str, fail: Fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise fail(f"{what}={value!r} must be a number", f"pass a number, e.g. {what}=0")
    return value


def _apply_lengths(target: JsonSchema, param: Param, fail: Fail) -> None:
    if param.min_length is None and param.max_length is None:
        return
    kind = _require_type(target, set(_LENGTH_KEYS), "min_length/max_length", fail)
    low, high = _LENGTH_KEYS[kind]
    for value, keyword in ((param.min_length, low), (param.max_length, high)):
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise fail(f"{keyword} must be a non-negative int", "pass e.g. min_length=1")
            target[keyword] = value
    if target.get(low, 0) > target.get(high, target.get(low, 0)):
        raise fail(
            f"min_length {target[low]} is greater than max_length {target[high]}",
            "make min_length <= max_length",
        )


def _apply_string(target: JsonSchema, param: Param, fail: Fail) -> None:
    if param.pattern is not None:
        _require_type(target, {"string"}, "pattern", fail)
        try:
            re.compile(param.pattern)
        except re.error as exc:
            raise fail(
                f"pattern {param.pattern!r} is not a valid regular expression ({exc})",
                "fix the regular expression",
            ) from exc
        target["pattern"] = param.pattern
    if param.format is not None:
        _require_type(target, {"string"}, "format", fail)
        target["format"] = param.format


def _require_type(target: JsonSchema, allowed: set[str], what: str, fail: Fail) -> str:
    kind = target.get("type")
    if isinstance(kind, str) and kind in allowed:
        return kind
    kinds = " or ".join(sorted(allowed))
    raise fail(
        f"{what} applies to {kinds} values, not to {_kind_text(target)}",
        f"remove {what}, or put it on {with_article(kinds)} type",
    )


def jsonable(value: Any, what: str, fail: Fail) -> Any:
    result = to_jsonable(value)
    if result is NOT_JSONABLE:
        raise fail(
            f"{what} value {value!r} cannot be written as JSON",
            "use str, int, float, bool, None, lists and dicts",
        )
    return result


_NUMERIC = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


_LENGTH_KEYS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _constraint_target(schema: JsonSchema) -> JsonSchema:
    """The node constraints apply to: the schema, or the single non-null branch of anyOf."""
    options = schema.get("anyOf")
    if "type" not in schema and isinstance(options, list):
        non_null = [o for o in options if o != {"type": "null"}]
        if len(non_null) == 1:
            index = options.index(non_null[0])
            options = list(options)
            options[index] = dict(non_null[0])
            schema["anyOf"] = options
            target: JsonSchema = options[index]
            return target
    return schema


def _bounds(target: JsonSchema, inclusive: str, exclusive: str) -> list[tuple[float, bool]]:
    """(bound, is exclusive) for each bound of one side set on `target`."""
    found = [(target[inclusive], False)] if inclusive in target else []
    return found + ([(target[exclusive], True)] if exclusive in target else [])


def _kind_text(schema: JsonSchema) -> str:
    """What a schema describes, for error messages."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return f"{kind} values"
    if "$ref" in schema:
        return f"a class ({str(schema['$ref']).rsplit('/', 1)[-1]})"
    if "anyOf" in schema:
        return "a union of several types"
    if "enum" in schema:
        return "a Literal or Enum of mixed types"
    return "Any" if not schema else "this type"
