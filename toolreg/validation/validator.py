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
so recursive schemas work. A schema using another assertion keyword
(`if`, `unevaluatedProperties`, `$dynamicRef`, `$anchor`, a remote `$ref`,
`$id` below the root...) is validated by jsonschema instead, imported only then. Unknown
keys are ignored, as the specification says. The schema is copied, so later changes to it
have no effect. An invalid schema (unknown type, bad regex, dangling `$ref`...) raises
`ValueError`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..jsonvalues import copy_json
from .coercion import coerce_value, equal, is_type, kind, unique
from .keywords import (
    NOT_ALLOWED,
    Errors,
    Node,
    Problem,
    accept,
    all_of,
    any_of,
    count,
    either,
    enum_node,
    join,
    not_one_of,
    number_keyword,
    numeric_node,
    one_of,
    reject,
    render,
    say,
    string_node,
    under,
)
from .refs import pointer_target
from .untrusted import BoundedPattern, PatternRefused, pattern_budget

__all__ = ["Node", "Problem", "Validator", "self_contained_node"]


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
    | {"$vocabulary", "if", "then", "else"}
    | {"unevaluatedItems", "unevaluatedProperties"}
)


_STRING_KEYS = frozenset({"minLength", "maxLength", "pattern"})
_NUMBER_KEYS = frozenset(
    {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf"}
)
_ARRAY_KEYS = frozenset(
    {"prefixItems", "items", "minItems", "maxItems", "uniqueItems", "contains"}
    | {"minContains", "maxContains"}
)
_OBJECT_KEYS = frozenset(
    {"properties", "required", "additionalProperties", "patternProperties", "propertyNames"}
    | {"minProperties", "maxProperties"}
)
# Object keywords `_plain_object` does not check.
_MORE_OBJECT_KEYS = frozenset(
    {"patternProperties", "propertyNames", "minProperties", "maxProperties"}
)
# Keys that never change what is valid (`format` is an annotation here, as in jsonschema).
_ANNOTATION_KEYS = frozenset(
    {"description", "title", "examples", "default", "deprecated", "format", "$comment"}
    | {"readOnly", "writeOnly", "contentMediaType", "contentEncoding"}
)
_COMBINATOR_KEYS = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "$ref", "dependentRequired", "dependentSchemas"}
)
_SCALARS = (str, int, float, bool, type(None))
_SHARED: dict[tuple[Any, ...], Node] = {}
_MAX_SHARED = 4096


def _leaf_key(s: dict[str, Any]) -> tuple[Any, ...] | None:
    """What makes a flat schema (no subschemas, no `$ref`) valid or not, as a hashable key;
    None for any other schema. Leaves are most of a tool's properties, and few distinct."""
    key: list[Any] = []
    for k, v in s.items():
        if k in _ANNOTATION_KEYS:
            continue
        if k[0] == "$":  # $ref, $id...: the node depends on the document around it
            return None
        kind = type(v)
        if kind in _SCALARS:
            key.append((k, kind, v))  # the type too: 1, 1.0 and True are equal keys otherwise
        elif kind is list and all(type(x) in _SCALARS for x in v):
            key.append((k, tuple((type(x), x) for x in v)))
        else:
            return None
    return tuple(key)


_TYPE_SPECS: dict[str, tuple[list[str], tuple[type, ...], frozenset[str]]] = {
    name: ([name], exact, frozenset([name])) for name, exact in _EXACT.items()
}
"""For a `type` that is one name: its names, the Python types that surely match, the set."""


def _wrong(v: object, names: list[str], values: list[Any] | None, is_const: bool) -> list[Problem]:
    """The problem with a value of the wrong type (or outside the enum/const, if given)."""
    if values is not None and not any(equal(v, x) for x in values):
        return say(not_one_of(values, v, is_const))
    return say(f"expected {either(names)}, got {kind(v)}")


class _Fallback(Exception):
    """The schema needs a keyword this module does not compile."""


MAX_ITEM_PROBLEMS = 100
"""An array stops being checked after this many bad items: the verdict (invalid) stands,
and a model cannot make validation cost time proportional to a huge list of bad items."""


class _Compiler:
    def __init__(
        self, root: Any, given: Mapping[int, Node] | None = None, untrusted: bool = False
    ) -> None:
        self.root = root
        # someone else's schema: its patterns are bounded (`untrusted.BoundedPattern`)
        self.untrusted = untrusted
        self.memo: dict[int, Node] = {}
        self.searches: dict[str, Callable[[str], Any]] = {}  # `patternProperties`, compiled
        self.boxes: dict[str, list[Node]] = {}
        # Checks compiled beforehand, by the `id` of their subschema: taken when `build` meets
        # that very dict in the document (the others are dropped: their ids mean nothing).
        self.given = dict(given) if given else {}

    def search_of(self, pattern: str) -> Callable[[str], Any]:
        """A `patternProperties` name's search, compiled once for the validation and the
        coercion of this schema: bounded when the schema is untrusted (`BoundedPattern`,
        which raises `UntrustedSchemaError`), else `re`'s."""
        search = self.searches.get(pattern)
        if search is None:
            matcher = BoundedPattern if self.untrusted else re.compile
            search = self.searches[pattern] = matcher(pattern).search
        return search

    def resolve(self, ref: str) -> Any:
        if ref != "#" and not ref.startswith("#/"):
            raise _Fallback(ref)
        try:
            return pointer_target(self.root, ref)
        except LookupError:
            raise ValueError(f"$ref {ref!r} points to nothing") from None

    def build(self) -> Node:
        node = self.compile(self.root)
        bound: set[str] = set()
        while unbound := [ref for ref in self.boxes if ref not in bound]:
            for ref in unbound:
                self.boxes[ref][0] = self.compile(self.resolve(ref))
                bound.add(ref)
        self.given.clear()
        return node

    def compile(self, schema: Any) -> Node:
        if schema is True or schema is False:
            return accept if schema else reject
        if not isinstance(schema, dict):
            raise ValueError(f"a schema must be an object or a boolean, not {schema!r}")
        node = self.memo.get(id(schema))
        if node is None:
            node = self.given.pop(id(schema), None) if self.given else None
            if node is None:
                node = self._shared(schema)
            self.memo[id(schema)] = node
        return node

    def _shared(self, schema: dict[str, Any]) -> Node:
        """A flat schema's node is shared by every validator (compiled from a private copy,
        so that no caller's later change reaches it); anything else is compiled here. The
        root (an object with properties, as a rule) is this validator's own."""
        key = None if schema is self.root or self.untrusted else _leaf_key(schema)
        if key is None:
            return self._node(schema)
        node = _SHARED.get(key)
        if node is None:
            node = self._node(copy_json(schema))
            if len(_SHARED) >= _MAX_SHARED:
                _SHARED.clear()
            _SHARED[key] = node
        return node

    def _node(self, s: dict[str, Any]) -> Node:
        if not _UNSUPPORTED.isdisjoint(s) or ("$id" in s and s is not self.root):
            raise _Fallback
        checks = self._checks(s)
        rest = accept if not checks else checks[0] if len(checks) == 1 else all_of(checks)
        if "type" not in s:
            return rest
        spec = _TYPE_SPECS.get(s["type"]) if isinstance(s["type"], str) else None
        if spec is None:
            names = [s["type"]] if isinstance(s["type"], str) else list(s["type"])
            if not names or not set(names) <= _EXACT.keys():
                raise ValueError(f"unknown type {s['type']!r}")
            spec = names, tuple(t for n in names for t in _EXACT[n]), frozenset(names)
        names, exact, want = spec
        values = [s["const"]] if "const" in s else s.get("enum")
        is_const = "const" in s
        if rest is accept:

            def typed(v: Any) -> Errors:
                if type(v) in exact or is_type(want, v):
                    return None
                return _wrong(v, names, values, is_const)

            return typed
        if names == ["string"] and s.keys() - _ANNOTATION_KEYS == {"type", "enum"}:
            strings = frozenset(x for x in s["enum"] if isinstance(x, str))
            if len(strings) == len(s["enum"]):  # a Literal or Enum of strings: one check

                def string_enum(v: Any) -> Errors:
                    if isinstance(v, str) and v in strings:
                        return None
                    return _wrong(v, names, values, is_const)

                return string_enum

        def node(v: Any) -> Errors:
            if type(v) in exact or is_type(want, v):
                return rest(v)
            return _wrong(v, names, values, is_const)

        return node

    def _checks(self, s: dict[str, Any]) -> list[Node]:
        """The checks of `s`'s keywords other than `type` (those that accept everything
        left out). A list built in place: compiling runs at every registration."""
        checks: list[Node] = []
        keys = s.keys()
        if "const" in s or "enum" in s:
            checks.append(enum_node(s))
        if not _STRING_KEYS.isdisjoint(keys):
            checks.append(string_node(s, BoundedPattern if self.untrusted else None))
        if not _NUMBER_KEYS.isdisjoint(keys):
            checks.append(numeric_node(s))
        if not _ARRAY_KEYS.isdisjoint(keys):
            checks.append(self._array(s))
        if not _OBJECT_KEYS.isdisjoint(keys):
            checks.append(self._object(s))
        if _COMBINATOR_KEYS.isdisjoint(keys):
            return [check for check in checks if check is not accept]
        for sub in s.get("allOf", ()):
            checks.append(self.compile(sub))
        for key in ("anyOf", "oneOf"):
            if key in s:
                alts = [self.compile(sub) for sub in s[key]]
                if not alts:
                    raise ValueError(f"{key} must not be empty")
                sigs = [self._types_of(sub) for sub in s[key]]
                checks.append((one_of if key == "oneOf" else any_of)(alts, sigs))
        if "not" in s:
            inner = self.compile(s["not"])
            checks.append(lambda v: None if inner(v) is not None else say("value is not allowed"))
        if "dependentRequired" in s:
            checks.append(_dependent_required(s["dependentRequired"]))
        if "dependentSchemas" in s:
            checks.append(self._dependent_schemas(s["dependentSchemas"]))
        if "$ref" in s:
            self.resolve(s["$ref"])
            box = self.boxes.setdefault(s["$ref"], [accept])
            checks.append(lambda v: box[0](v))
        return [check for check in checks if check is not accept]

    def _dependent_schemas(self, dependent: Any) -> Node:
        if not isinstance(dependent, dict):
            raise ValueError(f"dependentSchemas must be an object, not {dependent!r}")
        nodes = [(key, self.compile(sub)) for key, sub in dependent.items()]
        nodes = [(key, node) for key, node in nodes if node is not accept]
        if not nodes:
            return accept

        def check(v: Any) -> Errors:
            if not isinstance(v, dict):
                return None
            errors: Errors = None
            for key, node in nodes:
                if key in v and (found := node(v)) is not None:
                    errors = join(errors, found)
            return errors

        return check

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
        lo, hi = number_keyword(s, "minItems", 0), number_keyword(s, "maxItems")
        uniq = s.get("uniqueItems") is True
        has = self.compile(s["contains"]) if "contains" in s else None
        least, most = number_keyword(s, "minContains", 1), number_keyword(s, "maxContains")
        if not (prefix or items is not accept or lo or hi is not None or uniq or has):
            return accept
        if closed:  # `items: false` just caps the length
            hi, items = len(prefix) if hi is None else min(hi, len(prefix)), accept

        def check(v: Any) -> Errors:
            if not isinstance(v, list):
                return None
            errors: Errors = None
            if len(v) < lo:
                errors = say(f"must have at least {count(lo, 'item')}")
            if hi is not None and len(v) > hi:
                errors = say(f"must have at most {count(hi, 'item')}")
            bad = 0
            for i, item in enumerate(v):
                if i >= len(prefix) and items is accept:
                    break
                found = (prefix[i] if i < len(prefix) else items)(item)
                if found is not None:
                    errors = join(errors, under(i, found))
                    bad += 1
                    if bad == MAX_ITEM_PROBLEMS:  # enough to act on; bounded work for garbage
                        errors.append(Problem((), "(items after this one were not checked)"))
                        break
            if uniq and not unique(v):
                errors = join(errors, say("items must be unique"))
            if has is not None:
                n = sum(1 for item in v if has(item) is None)
                if n < least:
                    errors = join(errors, say(f"must contain {count(least, 'matching item')}"))
                if most is not None and n > most:
                    text = f"must contain at most {count(most, 'matching item')}"
                    errors = join(errors, say(text))
            return errors

        return check

    def _object(self, s: dict[str, Any]) -> Node:
        props = {k: self.compile(sub) for k, sub in s.get("properties", {}).items()}
        required = s.get("required", [])
        if not isinstance(required, list):
            raise ValueError(f"required must be a list, not {required!r}")
        required = list(dict.fromkeys(required))
        closed, other = (
            s.get("additionalProperties") is False,
            self.compile(s.get("additionalProperties", True)),
        )
        if _MORE_OBJECT_KEYS.isdisjoint(s):  # the usual object: nothing more to compile
            if not (props or required or other is not accept):
                return accept
            return _plain_object(props, required, closed, other)
        patterns = [
            (p, self.search_of(p), self.compile(sub))
            for p, sub in s.get("patternProperties", {}).items()
        ]
        names = self.compile(s["propertyNames"]) if "propertyNames" in s else None
        lo, hi = number_keyword(s, "minProperties", 0), number_keyword(s, "maxProperties")
        if not (
            props or required or other is not accept or patterns or names or lo or hi is not None
        ):
            return accept
        if not patterns and names is None and not lo and hi is None:
            return _plain_object(props, required, closed, other)
        get = props.get

        def check(v: Any) -> Errors:
            if not isinstance(v, dict):
                return None
            errors: Errors = None
            if len(v) < lo:
                errors = say(f"must have at least {count(lo, 'property')}")
            if hi is not None and len(v) > hi:
                errors = say(f"must have at most {count(hi, 'property')}")
            for key in required:
                if key not in v:
                    errors = join(errors, [_missing(key)])
            for key, item in v.items():
                if names is not None and (bad := names(key)) is not None:
                    text = f"invalid property name {render(key)}: {bad[0].message}"
                    errors = join(errors, say(text))
                sub = get(key)
                found = None if sub is None else sub(item)
                for pattern, search, node in patterns:
                    try:
                        matched = isinstance(key, str) and search(key)
                    except PatternRefused as refused:  # an untrusted pattern's limits
                        text = f"cannot be checked against pattern {render(pattern)}: {refused}"
                        errors = join(errors, say(f"property name {render(key)} {text}"))
                        continue
                    if matched:
                        sub = node
                        more = node(item)
                        found = found if more is None else join(found, more)
                if sub is None:
                    if closed:
                        errors = join(errors, [_unexpected(key)])
                        continue
                    found = other(item)
                if found is not None:
                    errors = join(errors, under(key, found))
            return errors

        return check


def _has_patterns(schema: Any) -> bool:
    """Whether `pattern` or `patternProperties` occurs anywhere in `schema` (as any key)."""
    todo = [schema]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            if "pattern" in value or "patternProperties" in value:
                return True
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return False


def _dependent_required(dependent: Any) -> Node:
    if not isinstance(dependent, dict) or not all(isinstance(n, list) for n in dependent.values()):
        raise ValueError(f"dependentRequired must map names to lists, not {dependent!r}")
    pairs = [(key, list(dict.fromkeys(names))) for key, names in dependent.items() if names]
    if not pairs:
        return accept

    def check(v: Any) -> Errors:
        if not isinstance(v, dict):
            return None
        errors: Errors = None
        for key, names in pairs:
            if key in v:
                for name in names:
                    if name not in v:
                        text = f"missing property {render(name)}, required with {render(key)}"
                        errors = join(errors, [Problem((), text, name)])
        return errors

    return check


def _unexpected(key: Any) -> Problem:
    return Problem((), f"unexpected property {render(key)}", key)


def _missing(key: Any) -> Problem:
    return Problem((), f"missing required property {render(key)}", key)


def _plain_object(props: dict[str, Node], required: list[Any], closed: bool, other: Node) -> Node:
    """The usual object (properties, required, additionalProperties): one pass, and the
    required keys checked as a set, in C."""
    get, keys = props.get, frozenset(required)

    def check(v: Any) -> Errors:
        if not isinstance(v, dict):
            return None
        errors: Errors = None
        if not keys <= v.keys():
            errors = [_missing(key) for key in required if key not in v]
        for key, item in v.items():
            sub = get(key)
            if sub is None:
                if closed:
                    errors = join(errors, [_unexpected(key)])
                    continue
                sub = other
            found = sub(item)
            if found is not None:
                errors = join(errors, under(key, found))
        return errors

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
        except BaseException as exc:  # e.g. a $ref jsonschema cannot resolve, or loops on
            _reraise_unless_a_failure(exc)
            return say("value could not be checked against the schema")
        return list(found) or None

    def is_valid_under(self, schema: Any, value: object) -> bool:
        try:
            return bool(self.validator.evolve(schema=schema).is_valid(value))
        except BaseException as exc:
            _reraise_unless_a_failure(exc)
            return False


def _reraise_unless_a_failure(exc: BaseException) -> None:
    """jsonschema failing on a value (an exception, or a panic of its Rust-backed reference
    maps when a `$ref` loop recurses too deep: a BaseException) is a failed check; an
    interrupt, an exit or a cancellation is not, and goes on."""
    if isinstance(exc, Exception) or type(exc).__name__ == "PanicException":
        return
    raise exc


def _translate(error: Any) -> list[str]:
    """Our messages for a jsonschema error, at the error's own path."""
    keyword, value, schema = error.validator, error.validator_value, error.schema
    if keyword is None:  # the `false` schema
        return [NOT_ALLOWED.message]
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


def self_contained_node(schema: dict[str, Any]) -> Node | None:
    """The compiled check of `schema` on its own, for `Validator(nodes=...)`; None when it
    has a `$ref` (its meaning depends on the document around it), needs jsonschema, or does
    not compile (the validator of the whole schema then reports why)."""
    if "$id" in schema:  # a new base for $refs: not the same meaning in a document
        return None
    compiler = _Compiler(schema)
    try:
        node = compiler.build()
    except (_Fallback, ValueError, TypeError, AttributeError, KeyError, re.error):
        return None
    return None if compiler.boxes else node


class Validator:
    """A JSON Schema compiled once, then used to check and coerce many instances."""

    __slots__ = ("_compiler", "_fallback", "_node", "_schema", "check", "untrusted")

    def __init__(
        self,
        schema: Mapping[str, Any] | bool,
        *,
        copy: bool = True,
        nodes: Mapping[int, Node] | None = None,
        untrusted: bool = False,
    ) -> None:
        """Compile `schema`. With `copy=False` the caller promises never to change it (the
        validator then works on it in place, and `accepts` reuses its compiled nodes).

        `nodes` (with `copy=False` only) maps subschemas of `schema`, by `id`, to checks
        already compiled for them by `self_contained_node`: a function's parameters are
        built from schema fragments remembered per annotation, each with its check, so that
        only the object around them is compiled at registration.

        `untrusted=True`: the schema is someone else's (a mounted server's): its patterns
        run bounded (`untrusted.BoundedPattern`; a pattern that cannot is a `ValueError`),
        each check within one `pattern_budget`.
        """
        if copy and nodes:
            raise ValueError("nodes= refers to the schema's own subschemas: pass copy=False")
        self.untrusted = untrusted
        self._schema: Any = copy_json(schema) if copy else schema
        self._compiler = _Compiler(self._schema, nodes, untrusted)
        self._fallback: _Jsonschema | None = None
        try:
            self._node = self._compiler.build()
        except _Fallback:
            if untrusted and _has_patterns(self._schema):  # whatever needs jsonschema
                raise ValueError(
                    "it uses keywords toolreg checks with jsonschema, whose patterns are not "
                    "bounded in time: refused for a schema with patterns from elsewhere"
                ) from None
            self._fallback = _Jsonschema(self._schema)
            self._node = self._fallback.errors
        except (TypeError, AttributeError, KeyError, re.error) as error:
            raise ValueError(f"invalid JSON Schema: {error}") from error
        if untrusted:
            self._node = _within_budget(self._node)
        self.check = self._node
        """The compiled check itself: None when valid, else the problems. For instances
        whose nesting is already bounded (dispatch's arguments); `validate` otherwise."""

    def validate(self, instance: object) -> list[Problem]:
        """Every problem with `instance`; `[]` when it is valid."""
        try:
            return self._node(instance) or []
        except RecursionError:
            return say("value is nested too deeply")

    def is_valid(self, instance: object) -> bool:
        """Whether `instance` is valid."""
        try:
            return self._node(instance) is None
        except RecursionError:
            return False

    def accepts(self, schema: Any, value: object) -> bool:
        """Whether `value` is valid against `schema`, a part of this validator's schema
        (its `$ref`s resolve in the whole document). False for a schema it cannot check."""
        return self._check(schema, value)

    def coerce(self, instance: object) -> object:
        """`instance` with a model's usual slips fixed, as the schema allows (see `_coerce`).

        A new value, or `instance` itself when nothing changed; never raises.
        """
        if self.is_valid(instance):
            return instance
        if not self.untrusted:
            return coerce_value(self._schema, instance, self._resolve, self._check)
        with pattern_budget():  # the same allowance as the check's, in the same call
            return coerce_value(self._schema, instance, self._resolve, self._check, self._search)

    def _search(self, pattern: str, name: str) -> bool:
        """An untrusted `patternProperties` pattern matched as validation matches it (the
        compiler's very search: bounded, within the call's budget); a pattern or name it
        will not run matches nothing (the check says why)."""
        try:
            return bool(self._compiler.search_of(pattern)(name))
        except (ValueError, PatternRefused):  # UntrustedSchemaError: refused at mount already
            return False

    def _resolve(self, ref: str) -> Any:
        try:
            return self._compiler.resolve(ref)
        except (_Fallback, ValueError):
            return None

    def _check(self, schema: Any, value: object) -> bool:
        try:
            if self._fallback is not None:
                return self._fallback.is_valid_under(schema, value)
            if self.untrusted and isinstance(value, (str, dict, list)):  # what patterns see
                with pattern_budget():
                    return self._compiler.compile(schema)(value) is None
            return self._compiler.compile(schema)(value) is None
        except (_Fallback, ValueError, RecursionError):
            return False


def _within_budget(node: Node) -> Node:
    """`node`, checking within one `pattern_budget` (the caller's, if one is open)."""

    def check(v: Any) -> Errors:
        with pattern_budget():
            return node(v)

    return check
