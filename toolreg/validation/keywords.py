"""The pieces of the compiled validator that every node shares: `Problem` and its messages,
the node type, the checks of the scalar keywords (enum/const, string and number
constraints) and the combinators (allOf, anyOf, oneOf). `_validator` compiles schemas out of
these."""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..types import PATTERN_WORDS
from .coercion import equal, is_type, kind
from .untrusted import BoundedPattern, PatternRefused

__all__ = [
    "BOUNDS",
    "NOT_ALLOWED",
    "Errors",
    "Node",
    "Problem",
    "accept",
    "all_of",
    "any_of",
    "count",
    "either",
    "enum_node",
    "join",
    "mismatch",
    "multiple_failed",
    "no_match",
    "not_one_of",
    "number_keyword",
    "numeric_node",
    "one_of",
    "reject",
    "render",
    "say",
    "string_node",
    "under",
]

_PLAIN_KEY = re.compile(r"[^\s.\[\]'\"]+")


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason an instance is invalid: where (`path`) and why (`message`).

    `key`: for a problem with a key of the object at `path` (missing, unexpected), that key:
    the value at `path` is fine otherwise (dispatch still converts the rest of it)."""

    path: tuple[str | int, ...]
    message: str
    key: str | int | None = field(default=None, compare=False)

    @property
    def blamed(self) -> tuple[str | int, ...]:
        """Where the offending value is (or would be): `path`, and the `key` if any."""
        return self.path if self.key is None else (*self.path, self.key)

    def location(self) -> str:
        """The path as text: `city`, `items[0].name`, `['a b']`, `(root)` for the root."""
        text = ""
        for step in self.path:
            if isinstance(step, int):
                text += f"[{step}]"
            elif _PLAIN_KEY.fullmatch(step):
                text += f".{step}" if text else step
            else:
                text += f"[{render(step)}]"
        return text or "(root)"


_PLAIN_TEXT = re.compile(r"[A-Za-z0-9_ .:-]{0,60}")


def render(value: object, limit: int = 60) -> str:
    """`value` as short text for a message: a string in single quotes, the rest as JSON."""
    if type(value) is str and limit >= 60 and _PLAIN_TEXT.fullmatch(value):
        return f"'{value}'"  # nothing to escape, nothing to cut: the usual property name
    if isinstance(value, str):
        body = json.dumps(value[:limit], ensure_ascii=False)[1:-1]
        body = body.replace('\\"', '"').replace("'", "\\'")
        return f"'{body}...'" if len(value) > limit else f"'{body}'"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = kind(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def count(n: object, noun: str) -> str:
    if n != 1:
        noun = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{render(n)} {noun}"


def either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def not_one_of(values: list[Any], value: object, is_const: bool) -> str:
    if is_const:
        return f"must be {render(values[0])}"
    shown = ", ".join(render(x) for x in values[:10]) + (", ..." if len(values) > 10 else "")
    return f"{render(value)} is not one of {shown}"


Errors: TypeAlias = "list[Problem] | None"


Node: TypeAlias = Callable[[Any], Errors]


NOT_ALLOWED = Problem((), "no value is allowed here")


BOUNDS = (
    ("minimum", ">=", operator.lt),
    ("exclusiveMinimum", ">", operator.le),
    ("maximum", "<=", operator.gt),
    ("exclusiveMaximum", "<", operator.ge),
)


def accept(value: object) -> Errors:
    return None


def reject(value: object) -> Errors:
    return [NOT_ALLOWED]


def say(message: str) -> list[Problem]:
    return [Problem((), message)]


def under(step: str | int, errors: list[Problem]) -> list[Problem]:
    return [Problem((step, *p.path), p.message, p.key) for p in errors]


def join(errors: Errors, more: list[Problem]) -> list[Problem]:
    """`errors` extended by `more`, in place: every node returns a fresh list, and copying
    would make a long array of bad items cost quadratic time."""
    if errors is None:
        return more
    errors.extend(more)
    return errors


def number_keyword(s: Mapping[str, Any], key: str, default: Any = None) -> Any:
    value = s.get(key, default)
    if value is not None and kind(value) not in ("integer", "number"):
        raise ValueError(f"{key} must be a number, not {value!r}")
    return value


def multiple_failed(value: int | float, step: int | float) -> bool:
    """jsonschema's `multipleOf` test, exact with fractions where floats overflow."""
    try:
        if isinstance(step, float):
            quotient = value / step
            return int(quotient) != quotient
        return bool(value % step)
    except (OverflowError, ValueError):
        try:
            from fractions import Fraction  # lazy: only for floats too large to divide

            return (Fraction(value) / Fraction(step)).denominator != 1
        except (OverflowError, ValueError):
            return True


def enum_node(s: dict[str, Any]) -> Node:
    is_const = "const" in s
    values = [s["const"]] if is_const else s["enum"]
    if not isinstance(values, list):
        raise ValueError(f"enum must be a list, not {values!r}")
    strings = frozenset(x for x in values if isinstance(x, str))
    numbers = frozenset(x for x in values if kind(x) in ("integer", "number"))
    others = [x for x in values if kind(x) not in ("integer", "number", "string")]

    def check(v: Any) -> Errors:
        if isinstance(v, str):
            if v in strings:
                return None
        elif kind(v) in ("integer", "number"):
            if v in numbers:
                return None
        elif any(equal(v, x) for x in others):
            return None
        return say(not_one_of(values, v, is_const))

    return check


def string_node(
    s: dict[str, Any], untrusted: Callable[[str], BoundedPattern] | None = None
) -> Node:
    """`untrusted`: for a schema from someone else, what compiles its `pattern` into a
    bounded one (see `untrusted.BoundedPattern`); `re` otherwise."""
    lo, hi, pattern = (
        number_keyword(s, "minLength", 0),
        number_keyword(s, "maxLength"),
        s.get("pattern"),
    )
    if not (lo or hi is not None or pattern is not None):
        return accept
    if pattern is not None and untrusted is not None:
        return _bounded_string_node(lo, hi, pattern, untrusted(pattern))
    regex = None if pattern is None else re.compile(pattern)

    def check(v: Any) -> Errors:
        if not isinstance(v, str):
            return None
        errors: Errors = None
        if len(v) < lo:
            errors = say(f"must have at least {count(lo, 'character')}")
        if hi is not None and len(v) > hi:
            errors = say(f"must have at most {count(hi, 'character')}")
        if regex is not None and regex.search(v) is None:
            errors = join(errors, say(mismatch(pattern, v)))
        return errors

    return check


def mismatch(pattern: Any, value: str) -> str:
    """Why `value` fails `pattern`: in words for the type table's own patterns (a Decimal's:
    "'abc' is not a decimal number"), the pattern itself for any other."""
    words = PATTERN_WORDS.get(pattern)
    if words is not None:
        return f"{render(value)} is not {words}"
    return f"must match pattern {render(pattern)}"


def _bounded_string_node(lo: int, hi: int | None, pattern: str, bounded: BoundedPattern) -> Node:
    def check(v: Any) -> Errors:
        if not isinstance(v, str):
            return None
        errors: Errors = None
        if len(v) < lo:
            errors = say(f"must have at least {count(lo, 'character')}")
        if hi is not None and len(v) > hi:
            return say(f"must have at most {count(hi, 'character')}")  # not matched, then
        try:
            if not bounded.search(v):
                errors = join(errors, say(mismatch(pattern, v)))
        except PatternRefused as refused:  # past the limits: not matched, and invalid
            text = f"cannot be checked against pattern {render(pattern)}: {refused}"
            errors = join(errors, say(text))
        return errors

    return check


def numeric_node(s: dict[str, Any]) -> Node:
    bounds = [
        (fails, number_keyword(s, key), f"must be {op} {render(s[key])}")
        for key, op, fails in BOUNDS
        if key in s
    ]
    step = number_keyword(s, "multipleOf")
    if step is not None and not step > 0:
        raise ValueError(f"multipleOf must be > 0, not {step!r}")
    if not bounds and step is None:
        return accept

    def check(v: Any) -> Errors:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        failed = [Problem((), text) for fails, bound, text in bounds if fails(v, bound)]
        if step is not None and multiple_failed(v, step):
            failed.append(Problem((), f"must be a multiple of {render(step)}"))
        return failed or None

    return check


def all_of(checks: list[Node]) -> Node:
    def node(v: Any) -> Errors:
        errors: Errors = None
        for check in checks:
            found = check(v)
            if found is not None:
                errors = join(errors, found)
        return errors

    return node


def no_match(alts: list[Node], sigs: list[list[str] | None], v: object) -> list[Problem]:
    """One helpful problem when no alternative matched `v`."""
    fits = [i for i, sig in enumerate(sigs) if sig is None or is_type(frozenset(sig), v)]
    if len(fits) == 1:  # one alternative has the right type: its own problems say most
        return alts[fits[0]](v) or say("does not match the allowed alternative")
    if not fits:
        names = list(dict.fromkeys(name for sig in sigs if sig for name in sig))
        return say(f"does not match any allowed type (expected {either(names)})")
    return say("does not match any of the allowed alternatives")


def any_of(alts: list[Node], sigs: list[list[str] | None]) -> Node:
    def check(v: Any) -> Errors:
        for alt in alts:
            if alt(v) is None:
                return None
        return no_match(alts, sigs, v)

    return check


def one_of(alts: list[Node], sigs: list[list[str] | None]) -> Node:
    def check(v: Any) -> Errors:
        matched = sum(1 for alt in alts if alt(v) is None)
        if matched == 1:
            return None
        if matched > 1:
            return say("matches more than one alternative")
        return no_match(alts, sigs, v)

    return check
