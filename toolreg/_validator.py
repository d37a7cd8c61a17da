"""A compiled validator for the JSON Schema (Draft 2020-12) subset toolreg produces.

`Validator(schema)` compiles the schema once into nested closures, one per schema node,
chosen by keyword; `validate(instance)` then lists every `Problem`, with its path and a
short message that is safe to show a model. It agrees with
`jsonschema.Draft202012Validator(schema).is_valid` (`format` being an annotation) on every
JSON value, with one exception: `uniqueItems` is exact, where jsonschema's sort-based
check misses some duplicates among nested arrays mixing booleans and numbers.

Instances are JSON values as `json.loads` returns them: only `dict` is an object, only
`list` an array, and any other Python value (a tuple, a set) matches no `type`, `enum` or
`const`. Local `$ref`s (`#`, `#/$defs/Name`, any JSON pointer) are bound after compiling,
so recursive schemas work. A schema using another assertion keyword (`if`,
`dependentRequired`, `unevaluatedProperties`, `$dynamicRef`, `$anchor`, a remote `$ref`,
`$id` below the root...) is validated by jsonschema instead, imported only then. Unknown
keys are ignored, as the specification says. The schema is copied, so later changes to it
have no effect. An invalid schema (unknown type, bad regex, dangling `$ref`...) raises
`ValueError`.
"""

from __future__ import annotations

import importlib
import json
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeAlias
from urllib.parse import unquote

from ._coerce import coerce_value, equal, is_type, kind, unique
from ._jsonable import copy_json

__all__ = ["Problem", "Validator"]

_PLAIN_KEY = re.compile(r"[^\s.\[\]'\"]+")


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason an instance is invalid: where (`path`) and why (`message`)."""

    path: tuple[str | int, ...]
    message: str

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


def render(value: object, limit: int = 60) -> str:
    """`value` as short text for a message: a string in single quotes, the rest as JSON."""
    if isinstance(value, str):
        body = json.dumps(value[:limit], ensure_ascii=False)[1:-1]
        body = body.replace('\\"', '"').replace("'", "\\'")
        return f"'{body}...'" if len(value) > limit else f"'{body}'"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = kind(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _count(n: object, noun: str) -> str:
    if n != 1:
        noun = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{render(n)} {noun}"


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _not_one_of(values: list[Any], value: object, is_const: bool) -> str:
    if is_const:
        return f"must be {render(values[0])}"
    shown = ", ".join(render(x) for x in values[:10]) + (", ..." if len(values) > 10 else "")
    return f"{render(value)} is not one of {shown}"


Errors: TypeAlias = "list[Problem] | None"
Node: TypeAlias = Callable[[Any], Errors]

_NOT_ALLOWED = Problem((), "no value is allowed here")
_EXACT: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}
_UNSUPPORTED = frozenset(
    {"$dynamicRef", "$dynamicAnchor", "$anchor", "$recursiveRef", "$recursiveAnchor"}
    | {"$vocabulary", "dependentRequired", "dependentSchemas", "if", "then", "else"}
    | {"unevaluatedItems", "unevaluatedProperties"}
)
_BOUNDS = (
    ("minimum", ">=", operator.lt),
    ("exclusiveMinimum", ">", operator.le),
    ("maximum", "<=", operator.gt),
    ("exclusiveMaximum", "<", operator.ge),
)


class _Fallback(Exception):
    """The schema needs a keyword this module does not compile."""


def _accept(value: object) -> Errors:
    return None


def _reject(value: object) -> Errors:
    return [_NOT_ALLOWED]


def _say(message: str) -> list[Problem]:
    return [Problem((), message)]


def _under(step: str | int, errors: list[Problem]) -> list[Problem]:
    return [Problem((step, *p.path), p.message) for p in errors]


def _join(errors: Errors, more: list[Problem]) -> list[Problem]:
    return more if errors is None else errors + more


def _number(s: Mapping[str, Any], key: str, default: Any = None) -> Any:
    value = s.get(key, default)
    if value is not None and kind(value) not in ("integer", "number"):
        raise ValueError(f"{key} must be a number, not {value!r}")
    return value


def _multiple_failed(value: int | float, step: int | float) -> bool:
    """jsonschema's `multipleOf` test, exact with fractions where floats overflow."""
    try:
        if isinstance(step, float):
            quotient = value / step
            return int(quotient) != quotient
        return bool(value % step)
    except (OverflowError, ValueError):
        try:
            return (Fraction(value) / Fraction(step)).denominator != 1
        except (OverflowError, ValueError):
            return True


class _Compiler:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.memo: dict[int, Node] = {}
        self.boxes: dict[str, list[Node]] = {}

    def resolve(self, ref: str) -> Any:
        if ref != "#" and not ref.startswith("#/"):
            raise _Fallback(ref)
        target = self.root
        for token in ref[2:].split("/") if ref != "#" else ():
            step = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(target, list) and step.isdigit() and int(step) < len(target):
                target = target[int(step)]
            elif isinstance(target, dict) and step in target:
                target = target[step]
            else:
                raise ValueError(f"$ref {ref!r} points to nothing")
        return target

    def build(self) -> Node:
        node = self.compile(self.root)
        bound: set[str] = set()
        while unbound := [ref for ref in self.boxes if ref not in bound]:
            for ref in unbound:
                self.boxes[ref][0] = self.compile(self.resolve(ref))
                bound.add(ref)
        return node

    def compile(self, schema: Any) -> Node:
        if schema is True or schema is False:
            return _accept if schema else _reject
        if not isinstance(schema, dict):
            raise ValueError(f"a schema must be an object or a boolean, not {schema!r}")
        node = self.memo.get(id(schema))
        if node is None:
            node = self.memo[id(schema)] = self._node(schema)
        return node

    def _node(self, s: dict[str, Any]) -> Node:
        if _UNSUPPORTED.intersection(s) or ("$id" in s and s is not self.root):
            raise _Fallback
        checks = [check for check in self._checks(s) if check is not _accept]
        rest = _accept if not checks else checks[0] if len(checks) == 1 else _all(checks)
        if "type" not in s:
            return rest
        names = [s["type"]] if isinstance(s["type"], str) else list(s["type"])
        if not names or not set(names) <= _EXACT.keys():
            raise ValueError(f"unknown type {s['type']!r}")
        exact, want = tuple(t for n in names for t in _EXACT[n]), frozenset(names)
        values = [s["const"]] if "const" in s else s.get("enum")

        def wrong(v: object) -> list[Problem]:
            if values is not None and not any(equal(v, x) for x in values):
                return _say(_not_one_of(values, v, "const" in s))
            return _say(f"expected {_either(names)}, got {kind(v)}")

        def typed(v: Any) -> Errors:
            return None if type(v) in exact or is_type(want, v) else wrong(v)

        def node(v: Any) -> Errors:
            return rest(v) if type(v) in exact or is_type(want, v) else wrong(v)

        return typed if rest is _accept else node

    def _checks(self, s: dict[str, Any]) -> Iterator[Node]:
        if "const" in s or "enum" in s:
            yield _enum(s)
        yield _string(s)
        yield _numeric(s)
        yield self._array(s)
        yield self._object(s)
        for sub in s.get("allOf", ()):
            yield self.compile(sub)
        for key in ("anyOf", "oneOf"):
            if key in s:
                alts = [self.compile(sub) for sub in s[key]]
                if not alts:
                    raise ValueError(f"{key} must not be empty")
                sigs = [self._types_of(sub) for sub in s[key]]
                yield (_one_of if key == "oneOf" else _any_of)(alts, sigs)
        if "not" in s:
            inner = self.compile(s["not"])
            yield lambda v: None if inner(v) is not None else _say("value is not allowed")
        if "$ref" in s:
            self.resolve(s["$ref"])
            box = self.boxes.setdefault(s["$ref"], [_accept])
            yield lambda v: box[0](v)

    def _types_of(self, s: Any) -> list[str] | None:
        """The JSON types a subschema accepts, when its `type`, `enum` or `const` say."""
        for _ in range(20):  # follow a few plain `$ref`s, as pydantic writes them
            if not (isinstance(s, dict) and "$ref" in s and "type" not in s):
                break
            s = self.resolve(s["$ref"])
        if not isinstance(s, dict):
            return None
        if "type" in s:
            return [s["type"]] if isinstance(s["type"], str) else list(s["type"])
        values = [s["const"]] if "const" in s else s.get("enum")
        if not values:
            return None
        return list(dict.fromkeys("number" if kind(v) == "integer" else kind(v) for v in values))

    def _array(self, s: dict[str, Any]) -> Node:
        prefix = [self.compile(sub) for sub in s.get("prefixItems", ())]
        if isinstance(s.get("items"), list):
            raise _Fallback  # the pre-2020 tuple form
        items, closed = self.compile(s.get("items", True)), s.get("items") is False
        lo, hi = _number(s, "minItems", 0), _number(s, "maxItems")
        uniq = s.get("uniqueItems") is True
        has = self.compile(s["contains"]) if "contains" in s else None
        least, most = _number(s, "minContains", 1), _number(s, "maxContains")
        if not (prefix or items is not _accept or lo or hi is not None or uniq or has):
            return _accept
        if closed:  # `items: false` just caps the length
            hi, items = len(prefix) if hi is None else min(hi, len(prefix)), _accept

        def check(v: Any) -> Errors:
            if not isinstance(v, list):
                return None
            errors: Errors = None
            if len(v) < lo:
                errors = _say(f"must have at least {_count(lo, 'item')}")
            if hi is not None and len(v) > hi:
                errors = _say(f"must have at most {_count(hi, 'item')}")
            for i, item in enumerate(v):
                if i >= len(prefix) and items is _accept:
                    break
                found = (prefix[i] if i < len(prefix) else items)(item)
                if found is not None:
                    errors = _join(errors, _under(i, found))
            if uniq and not unique(v):
                errors = _join(errors, _say("items must be unique"))
            if has is not None:
                n = sum(1 for item in v if has(item) is None)
                if n < least:
                    errors = _join(errors, _say(f"must contain {_count(least, 'matching item')}"))
                if most is not None and n > most:
                    text = f"must contain at most {_count(most, 'matching item')}"
                    errors = _join(errors, _say(text))
            return errors

        return check

    def _object(self, s: dict[str, Any]) -> Node:
        props = {k: self.compile(sub) for k, sub in s.get("properties", {}).items()}
        required = s.get("required", [])
        if not isinstance(required, list):
            raise ValueError(f"required must be a list, not {required!r}")
        missing = {k: Problem((), f"missing required property {render(k)}") for k in required}
        closed, other = (
            s.get("additionalProperties") is False,
            self.compile(s.get("additionalProperties", True)),
        )
        patterns = [
            (re.compile(p), self.compile(sub)) for p, sub in s.get("patternProperties", {}).items()
        ]
        names = self.compile(s["propertyNames"]) if "propertyNames" in s else None
        lo, hi = _number(s, "minProperties", 0), _number(s, "maxProperties")
        if not (
            props or missing or other is not _accept or patterns or names or lo or hi is not None
        ):
            return _accept
        if not patterns and names is None and not lo and hi is None:
            return _plain_object(props, missing, closed, other)
        get = props.get

        def check(v: Any) -> Errors:
            if not isinstance(v, dict):
                return None
            errors: Errors = None
            if len(v) < lo:
                errors = _say(f"must have at least {_count(lo, 'property')}")
            if hi is not None and len(v) > hi:
                errors = _say(f"must have at most {_count(hi, 'property')}")
            for key in missing:
                if key not in v:
                    errors = _join(errors, [missing[key]])
            for key, item in v.items():
                if names is not None and (bad := names(key)) is not None:
                    text = f"invalid property name {render(key)}: {bad[0].message}"
                    errors = _join(errors, _say(text))
                sub = get(key)
                found = None if sub is None else sub(item)
                for regex, node in patterns:
                    if isinstance(key, str) and regex.search(key):
                        sub = node
                        more = node(item)
                        found = found if more is None else _join(found, more)
                if sub is None:
                    if closed:
                        errors = _join(errors, _say(f"unexpected property {render(key)}"))
                        continue
                    found = other(item)
                if found is not None:
                    errors = _join(errors, _under(key, found))
            return errors

        return check


def _plain_object(
    props: dict[str, Node], missing: dict[str, Problem], closed: bool, other: Node
) -> Node:
    """The usual object (properties, required, additionalProperties): one pass, and the
    required keys checked as a set, in C."""
    get, required = props.get, frozenset(missing)

    def check(v: Any) -> Errors:
        if not isinstance(v, dict):
            return None
        errors: Errors = None
        if not required <= v.keys():
            errors = [problem for key, problem in missing.items() if key not in v]
        for key, item in v.items():
            sub = get(key)
            if sub is None:
                if closed:
                    errors = _join(errors, _say(f"unexpected property {render(key)}"))
                    continue
                sub = other
            found = sub(item)
            if found is not None:
                errors = _join(errors, _under(key, found))
        return errors

    return check


def _all(checks: list[Node]) -> Node:
    def node(v: Any) -> Errors:
        errors: Errors = None
        for check in checks:
            found = check(v)
            if found is not None:
                errors = _join(errors, found)
        return errors

    return node


def _enum(s: dict[str, Any]) -> Node:
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
        return _say(_not_one_of(values, v, is_const))

    return check


def _string(s: dict[str, Any]) -> Node:
    lo, hi, pattern = _number(s, "minLength", 0), _number(s, "maxLength"), s.get("pattern")
    if not (lo or hi is not None or pattern is not None):
        return _accept
    regex = None if pattern is None else re.compile(pattern)

    def check(v: Any) -> Errors:
        if not isinstance(v, str):
            return None
        errors: Errors = None
        if len(v) < lo:
            errors = _say(f"must have at least {_count(lo, 'character')}")
        if hi is not None and len(v) > hi:
            errors = _say(f"must have at most {_count(hi, 'character')}")
        if regex is not None and regex.search(v) is None:
            errors = _join(errors, _say(f"must match pattern {render(pattern)}"))
        return errors

    return check


def _numeric(s: dict[str, Any]) -> Node:
    bounds = [
        (fails, _number(s, key), f"must be {op} {render(s[key])}")
        for key, op, fails in _BOUNDS
        if key in s
    ]
    step = _number(s, "multipleOf")
    if step is not None and not step > 0:
        raise ValueError(f"multipleOf must be > 0, not {step!r}")
    if not bounds and step is None:
        return _accept

    def check(v: Any) -> Errors:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        failed = [Problem((), text) for fails, bound, text in bounds if fails(v, bound)]
        if step is not None and _multiple_failed(v, step):
            failed.append(Problem((), f"must be a multiple of {render(step)}"))
        return failed or None

    return check


def _no_match(alts: list[Node], sigs: list[list[str] | None], v: object) -> list[Problem]:
    """One helpful problem when no alternative matched `v`."""
    fits = [i for i, sig in enumerate(sigs) if sig is None or is_type(frozenset(sig), v)]
    if len(fits) == 1:  # one alternative has the right type: its own problems say most
        return alts[fits[0]](v) or _say("does not match the allowed alternative")
    if not fits:
        names = list(dict.fromkeys(name for sig in sigs if sig for name in sig))
        return _say(f"does not match any allowed type (expected {_either(names)})")
    return _say("does not match any of the allowed alternatives")


def _any_of(alts: list[Node], sigs: list[list[str] | None]) -> Node:
    def check(v: Any) -> Errors:
        for alt in alts:
            if alt(v) is None:
                return None
        return _no_match(alts, sigs, v)

    return check


def _one_of(alts: list[Node], sigs: list[list[str] | None]) -> Node:
    def check(v: Any) -> Errors:
        matched = sum(1 for alt in alts if alt(v) is None)
        if matched == 1:
            return None
        if matched > 1:
            return _say("matches more than one alternative")
        return _no_match(alts, sigs, v)

    return check


class _Jsonschema:
    """Validation by jsonschema, for the schemas this module does not compile."""

    def __init__(self, schema: Any) -> None:
        jsonschema = importlib.import_module("jsonschema")  # only here: toolreg stays light
        self.validator = jsonschema.Draft202012Validator(schema)

    def errors(self, instance: object) -> Errors:
        try:
            found = {
                Problem(tuple(error.absolute_path), text): None
                for error in self.validator.iter_errors(instance)
                for text in _translate(error)
            }
        except Exception:  # e.g. a $ref jsonschema cannot resolve
            return _say("value could not be checked against the schema")
        return list(found) or None

    def is_valid_under(self, schema: Any, value: object) -> bool:
        return bool(self.validator.evolve(schema=schema).is_valid(value))


def _translate(error: Any) -> list[str]:
    """Our messages for a jsonschema error, at the error's own path."""
    keyword, value, schema = error.validator, error.validator_value, error.schema
    if keyword is None:  # the `false` schema
        return [_NOT_ALLOWED.message]
    if keyword == "not":
        return ["value is not allowed"]
    if keyword in ("anyOf", "oneOf"):
        if "valid under each" in error.message:
            return ["matches more than one alternative"]
        return ["does not match any of the allowed alternatives"]
    local = {keyword: value}
    if keyword in ("contains", "minContains", "maxContains"):
        local = {k: schema[k] for k in ("contains", "minContains", "maxContains") if k in schema}
    if value is False:  # additionalProperties / items: what the siblings already cover
        for key in ("properties", "patternProperties", "prefixItems"):
            if key in schema:
                local[key] = (
                    [True] * len(schema[key])
                    if key == "prefixItems"
                    else dict.fromkeys(schema[key], True)
                )
    try:
        found = _Compiler(local).build()(error.instance) or []
    except Exception:  # a keyword we do not compile: keep jsonschema's own words
        found = []
    if texts := [p.message for p in found if not p.path]:
        return texts
    text = str(error.message)
    return [text if len(text) <= 100 else text[:97] + "..."]


class Validator:
    """A JSON Schema compiled once, then used to check and coerce many instances."""

    __slots__ = ("_compiler", "_fallback", "_node", "_schema")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self._schema: Any = copy_json(schema)  # a private copy: dicts and lists only
        self._compiler = _Compiler(self._schema)
        self._fallback: _Jsonschema | None = None
        try:
            self._node = self._compiler.build()
        except _Fallback:
            self._fallback = _Jsonschema(self._schema)
            self._node = self._fallback.errors
        except (TypeError, AttributeError, KeyError, re.error) as error:
            raise ValueError(f"invalid JSON Schema: {error}") from error

    def validate(self, instance: object) -> list[Problem]:
        """Every problem with `instance`; `[]` when it is valid."""
        try:
            return self._node(instance) or []
        except RecursionError:
            return _say("value is nested too deeply")

    def is_valid(self, instance: object) -> bool:
        """Whether `instance` is valid."""
        try:
            return self._node(instance) is None
        except RecursionError:
            return False

    def coerce(self, instance: object) -> object:
        """`instance` with a model's usual slips fixed, as the schema allows (see `_coerce`).

        A new value, or `instance` itself when nothing changed; never raises.
        """
        if self.is_valid(instance):
            return instance
        return coerce_value(self._schema, instance, self._resolve, self._check)

    def _resolve(self, ref: str) -> Any:
        try:
            return self._compiler.resolve(ref)
        except (_Fallback, ValueError):
            return None

    def _check(self, schema: Any, value: object) -> bool:
        try:
            if self._fallback is not None:
                return self._fallback.is_valid_under(schema, value)
            return self._compiler.compile(schema)(value) is None
        except (_Fallback, ValueError, RecursionError):
            return False
