"""Older JSON Schema drafts normalised to 2020-12, the draft toolreg validates and exports.

Real MCP servers and OpenAPI documents send draft 4, 6 and 7 schemas (zod-to-json-schema
writes draft 7; OpenAPI 3.0 and pydantic v1 wrote draft 4's keywords). `normalize_schema`
rewrites their keywords as 2020-12 says the same thing, so that such a tool is taken (and
validated as its author meant), and says what it changed, one sentence a change:

- `exclusiveMinimum: true` with `minimum: 5` (draft 4) -> `exclusiveMinimum: 5`; `false`, or
  `true` without the bound, has no effect and is dropped; `exclusiveMaximum` likewise;
- `definitions` -> `$defs`; `dependencies` -> `dependentRequired` (a list of names) and
  `dependentSchemas` (a schema); `items: [...]` -> `prefixItems`, and then `additionalItems`
  -> `items` (an `additionalItems` without an `items` array has no effect and is dropped);
- every local `$ref` follows its target: `#/definitions/A` -> `#/$defs/A`; a `$ref` by the
  root's own `$id` (`https://x/s.json#/definitions/A`) becomes local;
- `id` (draft 4): `$id` at the root, `$anchor` for a fragment (`"#name"`); a fragment `$id`
  (drafts 6, 7) -> `$anchor`;
- `$recursiveRef: "#"` (2019-09) -> `$ref: "#"`; `$recursiveAnchor` is dropped (with no
  embedded schema resource it changes nothing);
- in a schema whose `$schema` names draft 4, 6 or 7, the keywords beside a `$ref` that
  constrain a value are dropped, as that draft ignores them (`description` and the other
  annotations stay); `$schema` itself becomes 2020-12's.

What it cannot rewrite raises `DraftError`, naming the keyword and where it is: a
`$schema` of draft 3 or a draft-3 `required: true`, an embedded schema resource (an `$id` or
draft-4 `id` below the root, with its own base), a `$ref` into a part the draft ignores,
`definitions` and `$defs` (or `items` and `prefixItems`...) that both name one thing.

Which rules apply: a `$schema` naming draft 4, 6, 7 or 2019-09 says it; without one (or with
2020-12's) the schema is read as 2020-12, and only the forms that are invalid or meaningless
there and have one meaning in the older drafts are rewritten (boolean exclusive bounds, an
`items` array, `additionalItems`, `definitions`, `dependencies`, a fragment `$id`, a root
`id`); keywords beside a `$ref` then keep their 2020-12 meaning. Two more documented choices:
keywords newer than the schema's draft (`const` in a draft-4 schema) are kept and enforced, as
their author most likely meant; and `integer` accepts `1.0`, as from draft 6 on (draft 4 did
not).

A schema with nothing to rewrite is returned as it is (the same object), after one walk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["DraftError", "Normalized", "normalize_schema"]

LATEST: Final = "https://json-schema.org/draft/2020-12/schema"

_DRAFTS: Final = {
    "json-schema.org/draft-03/schema": "draft-03",
    "json-schema.org/draft-04/schema": "draft-04",
    "json-schema.org/draft-06/schema": "draft-06",
    "json-schema.org/draft-07/schema": "draft-07",
    "json-schema.org/draft/2019-09/schema": "2019-09",
    "json-schema.org/draft/2020-12/schema": "2020-12",
    "spec.openapis.org/oas/3.1/dialect/base": "2020-12",  # OpenAPI 3.1's dialect
}
_IGNORING_REF_SIBLINGS: Final = frozenset({"draft-04", "draft-06", "draft-07"})

# Where subschemas are, in every draft from 4 on (`items`, `additionalItems`, `definitions`
# and `dependencies` are taken apart below).
_SCHEMA_ONE: Final = frozenset(
    {"additionalProperties", "contains", "propertyNames", "not", "if", "then", "else"}
    | {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
_LEGACY: Final = frozenset(
    {"definitions", "dependencies", "additionalItems", "$recursiveRef", "$recursiveAnchor"}
)
# The keywords that constrain a value (or apply subschemas to it): beside a `$ref`, drafts
# 4 to 7 ignore them. Annotations (`description`, `default`, `format`...), `definitions` and
# unknown keys are left where they are.
_CONSTRAINTS: Final = frozenset(
    {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum"}
    | {"exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems"}
    | {"uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"}
    | {"required", "dependentRequired", "dependencies", "items", "additionalItems"}
    | {"$dynamicRef", "$recursiveRef"}
    | (_SCHEMA_ONE - {"contentSchema"})
    | (_SCHEMA_LISTS | _SCHEMA_MAPS) - {"$defs"}
)
_BOUNDS: Final = (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum"))
_ANCHOR = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")
_DROPPED: Final = object()
_LEGACY_OF: Final = {
    "$defs": "definitions",
    "dependentRequired": "dependencies",
    "dependentSchemas": "dependencies",
}


class DraftError(ValueError):
    """A keyword of an older draft `normalize_schema` cannot rewrite as 2020-12: `keyword`,
    `where` (a JSON pointer into the given schema) and `reason`."""

    def __init__(self, keyword: str, where: str, reason: str) -> None:
        super().__init__(f"{keyword!r} at {where}: {reason}")
        self.keyword = keyword
        self.where = where
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Normalized:
    """What `normalize_schema` made of a schema."""

    schema: Any
    """The schema in JSON Schema 2020-12: the given object itself when nothing changed."""
    changes: tuple[str, ...]
    """What was rewritten, one sentence each (`#/properties/age: exclusiveMinimum: true with
    minimum: 0 (draft 4) is exclusiveMinimum: 0`); empty when nothing was."""
    draft: str | None
    """The draft its `$schema` names (`"draft-07"`, `"2020-12"`...), None without one."""


def normalize_schema(schema: Any) -> Normalized:
    """`schema` (a JSON Schema of any draft from 4 on) as JSON Schema 2020-12; see the module.

    Raises `DraftError` for an older keyword it cannot rewrite. It does not check that the
    schema is valid (the metaschema check does, after): what is not an older draft's
    keyword stays as it is. The walk is not bounded: bound an untrusted schema's size first
    (`untrusted.check_size`).
    """
    if isinstance(schema, Mapping) and not isinstance(schema, dict):
        schema = dict(schema)
    if not isinstance(schema, dict):
        return Normalized(schema, (), None)
    draft = _draft_of(schema.get("$schema"))
    if draft == "draft-03":
        raise DraftError(
            "$schema",
            "#",
            "JSON Schema draft 3 is not supported (its required, type and extends mean other "
            "things); write the schema in draft 4 or later",
        )
    if draft in (None, "2020-12") and not _needs_work(schema, draft):
        return Normalized(schema, (), draft)
    try:
        return _Rewrite(schema, draft).run()
    except RecursionError:
        raise DraftError("(nesting)", "#", "the schema nests too deeply to rewrite") from None


def _draft_of(uri: object) -> str | None:
    if not isinstance(uri, str):
        return None
    key = uri.strip().removeprefix("https://").removeprefix("http://").rstrip("#").rstrip("/")
    return _DRAFTS.get(key)


def _needs_work(root: dict[str, Any], draft: str | None) -> bool:
    """Whether a schema read as 2020-12 has an older draft's form to rewrite."""
    if draft is None and isinstance(root.get("id"), str) and "$id" not in root:
        return True
    base = _base_of(root, draft)
    todo: list[Any] = [root]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        if not _LEGACY.isdisjoint(node):
            return True
        for key, value in node.items():
            if key in _SCHEMA_ONE:
                todo.append(value)
            elif key == "items":
                if type(value) is list:
                    return True
                todo.append(value)
            elif key in _SCHEMA_LISTS:
                if type(value) is list:
                    todo.extend(value)
            elif key in _SCHEMA_MAPS:
                if type(value) is dict:
                    todo.extend(value.values())
            elif key in ("exclusiveMinimum", "exclusiveMaximum", "required"):
                if type(value) is bool:
                    return True
            elif key == "$id":
                if isinstance(value, str) and value.partition("#")[2]:
                    return True
            elif key == "$ref" and base and _base_is(value, base):
                return True
    return False


def _base_is(ref: object, base: str) -> bool:
    return isinstance(ref, str) and ref.partition("#")[0] == base


def _base_of(root: dict[str, Any], draft: str | None) -> str:
    """The root's own URI (`$id`, or draft 4's `id`), without a fragment; "" for none."""
    value = root.get("$id")
    if value is None and draft in (None, "draft-04"):
        value = root.get("id")
    return value.partition("#")[0] if isinstance(value, str) else ""


def _pointer(path: tuple[str | int, ...]) -> str:
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _names(keys: list[str]) -> str:
    return ", ".join(keys)


class _Rewrite:
    """One rewrite of one schema document (the old document stays as it was)."""

    def __init__(self, root: dict[str, Any], draft: str | None) -> None:
        self.root = root
        self.draft = draft
        self.label = draft or "an older draft"
        self.legacy_ref = draft in _IGNORING_REF_SIBLINGS
        self.draft4 = draft == "draft-04"
        self.base = _base_of(root, draft)
        self.changes: list[str] = []
        self.refs: list[tuple[dict[str, Any], tuple[str | int, ...]]] = []

    def run(self) -> Normalized:
        schema = self.node(self.root, ())
        self._rewrite_refs()
        return Normalized(schema, tuple(self.changes), self.draft)

    def note(self, path: tuple[str | int, ...], text: str) -> None:
        self.changes.append(f"{_pointer(path)}: {text}")

    def ignored_beside_ref(self, node: dict[str, Any]) -> list[str]:
        if not self.legacy_ref or "$ref" not in node:
            return []
        return [k for k in node if k in _CONSTRAINTS]

    # -- one subschema ------------------------------------------------------------------
    def node(self, schema: Any, path: tuple[str | int, ...]) -> Any:
        if not isinstance(schema, dict):
            return schema  # a boolean schema, or what the metaschema check refuses
        out: dict[str, Any] = {}
        skip = set(self.ignored_beside_ref(schema))
        if skip:
            dropped = _names([k for k in schema if k in skip])
            self.note(path, f"{dropped} beside $ref: ignored by {self.label}, dropped")
        bounds = self._bounds(schema, path)
        for key, value in schema.items():
            if key in skip:
                continue
            if key in bounds:
                if bounds[key] is not _DROPPED:
                    out[key] = bounds[key]
            elif key in _SCHEMA_ONE:
                out[key] = self.node(value, (*path, key))
            elif key in _SCHEMA_LISTS and type(value) is list:
                subschemas = [self.node(v, (*path, key, i)) for i, v in enumerate(value)]
                self._put(out, key, subschemas, path)
            elif key in _SCHEMA_MAPS and type(value) is dict:
                entries = {k: self.node(v, (*path, key, k)) for k, v in value.items()}
                self._merge(out, key, entries, path)
            elif key == "definitions" and type(value) is dict:
                merged = {k: self.node(v, (*path, key, k)) for k, v in value.items()}
                self._merge(out, "$defs", merged, path, key)
                self.note(path, "definitions -> $defs")
            elif key == "dependencies" and type(value) is dict:
                self._dependencies(value, out, path)
            elif key == "items":
                self._items(schema, out, path)
            elif key == "additionalItems":
                if type(schema.get("items")) is not list:
                    self.note(path, "additionalItems without an items array has no effect: dropped")
            elif key in ("id", "$id"):
                self._id(schema, key, out, path)
            elif key == "$recursiveRef":
                self._recursive_ref(value, out, path)
            elif key == "$recursiveAnchor":
                self.note(path, f"$recursiveAnchor: {_shown(value)} changes nothing here: dropped")
            elif key == "$schema" and not path and self.draft not in (None, "2020-12"):
                out[key] = LATEST
                self.note(path, f"$schema: {self.draft} -> 2020-12")
            elif key == "required" and type(value) is bool:
                raise DraftError(
                    "required",
                    _pointer(path),
                    "a boolean required is draft 3's; list the required properties in the "
                    "object's required array",
                )
            elif key == "$ref":
                self._put(out, key, value, path)  # $recursiveRef may have made one
                self.refs.append((out, path))
            else:
                out[key] = value
        return out

    def _put(
        self, out: dict[str, Any], key: str, value: Any, path: tuple[str | int, ...] = ()
    ) -> None:
        if key in out:
            raise DraftError(key, _pointer(path), f"{key} is given twice, in two drafts' words")
        out[key] = value

    def _merge(
        self,
        out: dict[str, Any],
        key: str,
        entries: dict[str, Any],
        path: tuple[str | int, ...] = (),
        given: str | None = None,
    ) -> None:
        """`entries` into the map `out[key]` (`definitions` and `$defs` side by side)."""
        existing = out.get(key)
        if existing is None:
            out[key] = entries
            return
        legacy = given or _LEGACY_OF.get(key, key)
        if not isinstance(existing, dict):
            raise DraftError(legacy, _pointer(path), f"{key} is not an object")
        both = sorted(existing.keys() & entries.keys())
        if both:
            raise DraftError(
                legacy, _pointer(path), f"{_names(both)} is in both {legacy} and {key}; keep one"
            )
        existing.update(entries)

    def _bounds(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
        """Draft 4's boolean `exclusiveMinimum`/`exclusiveMaximum`: what each of them and
        its bound become (`_DROPPED`: nothing), by key."""
        out: dict[str, Any] = {}
        for exclusive, bound in _BOUNDS:
            flag = schema.get(exclusive)
            if type(flag) is not bool:
                continue
            limit = schema.get(bound)
            if flag and bound in schema and not _is_number(limit):
                continue  # an invalid bound: left for the metaschema check to name
            out[exclusive] = _DROPPED
            if not flag:
                self.note(path, f"{exclusive}: false has no effect: dropped")
            elif bound not in schema:
                self.note(path, f"{exclusive}: true without {bound} has no effect: dropped")
            else:
                out[bound], out[exclusive] = _DROPPED, limit
                self.note(
                    path,
                    f"{exclusive}: true with {bound}: {_shown(limit)} -> "
                    f"{exclusive}: {_shown(limit)}",
                )
        return out

    def _dependencies(
        self, value: dict[str, Any], out: dict[str, Any], path: tuple[str | int, ...]
    ) -> None:
        names: dict[str, Any] = {}
        schemas: dict[str, Any] = {}
        for key, dependency in value.items():
            if type(dependency) is list:
                names[key] = dependency
            elif isinstance(dependency, (dict, bool)):
                schemas[key] = self.node(dependency, (*path, "dependencies", key))
            else:
                raise DraftError(
                    "dependencies",
                    _pointer((*path, "dependencies", key)),
                    "a dependency that is neither a list of names nor a schema (draft 3's "
                    "single name?) has no 2020-12 form; write a list",
                )
        said = []
        if names:
            self._merge(out, "dependentRequired", names, path, "dependencies")
            said.append(f"dependentRequired ({_names(list(names))})")
        if schemas:
            self._merge(out, "dependentSchemas", schemas, path, "dependencies")
            said.append(f"dependentSchemas ({_names(list(schemas))})")
        self.note(path, "dependencies -> " + (" and ".join(said) or "nothing (it was empty)"))

    def _items(
        self, schema: dict[str, Any], out: dict[str, Any], path: tuple[str | int, ...]
    ) -> None:
        items = schema["items"]
        if type(items) is not list:
            out["items"] = self.node(items, (*path, "items"))
            return
        prefix = [self.node(v, (*path, "items", i)) for i, v in enumerate(items)]
        self._put(out, "prefixItems", prefix, path)
        text = "items: [...] -> prefixItems"
        if "additionalItems" in schema:
            rest = schema["additionalItems"]
            if not isinstance(rest, (dict, bool)):
                raise DraftError("additionalItems", _pointer(path), "it is not a schema")
            out["items"] = self.node(rest, (*path, "additionalItems"))
            text += ", additionalItems -> items"
        self.note(path, text)

    def _id(
        self, schema: dict[str, Any], key: str, out: dict[str, Any], path: tuple[str | int, ...]
    ) -> None:
        value = schema[key]
        if key == "id" and (
            "$id" in schema or not (self.draft4 or (self.draft is None and not path))
        ):
            out[key] = value  # not a keyword here: an annotation of the author's
            return
        if not isinstance(value, str):
            out[key] = value  # the metaschema check names it
            return
        base, _, fragment = value.partition("#")
        if not base and fragment:
            if not _ANCHOR.fullmatch(fragment):
                raise DraftError(key, _pointer(path), f"the anchor {fragment!r} is not a name")
            self._put(out, "$anchor", fragment, path)
            self.note(path, f"{key}: {_shown(value)} -> $anchor: {_shown(fragment)}")
            return
        if path and base:
            raise DraftError(
                key,
                _pointer(path),
                "an embedded schema resource (its own base URI below the root) is not "
                "supported in a schema with older keywords; move it into the root's $defs",
            )
        if fragment:
            raise DraftError(key, _pointer(path), "a base URI with a fragment is not valid")
        if key == "id":
            self._put(out, "$id", value, path)
            self.note(path, "id -> $id")
        else:
            out[key] = value

    def _recursive_ref(self, value: Any, out: dict[str, Any], path: tuple[str | int, ...]) -> None:
        if value != "#":
            raise DraftError(
                "$recursiveRef",
                _pointer(path),
                "only $recursiveRef: '#' has a 2020-12 form here ($ref: '#')",
            )
        self._put(out, "$ref", "#", path)
        self.note(path, "$recursiveRef: '#' -> $ref: '#'")

    # -- the $refs ----------------------------------------------------------------------
    def _rewrite_refs(self) -> None:
        rewritten: list[str] = []
        for out, path in self.refs:
            ref = out["$ref"]
            if not isinstance(ref, str):
                continue
            new = self._target(ref, path)
            if new != ref:
                out["$ref"] = new
                rewritten.append(f"{ref} -> {new}")
        if rewritten:
            shown = "; ".join(rewritten[:3]) + ("; ..." if len(rewritten) > 3 else "")
            self.changes.append(f"{len(rewritten)} $ref(s) follow their targets: {shown}")

    def _target(self, ref: str, path: tuple[str | int, ...]) -> str:
        """Where `ref` points in the rewritten document."""
        base, _, fragment = ref.partition("#")
        if base and base != self.base:
            return ref  # another document's: left to whoever resolves it
        if not fragment.startswith("/"):
            return "#" + fragment if base else ref  # the root, or an anchor
        tokens = self._translate(fragment[1:].split("/"), ref, path)
        return "#/" + "/".join(tokens)

    def _translate(self, raw: list[str], ref: str, path: tuple[str | int, ...]) -> list[str]:
        out: list[str] = []
        node: Any = self.root
        state = "schema"
        i = 0
        while i < len(raw):
            token = _decode(raw[i])
            if state == "other":
                return out + raw[i:]
            if state in ("map", "list"):
                if isinstance(node, dict) and token in node:
                    node = node[token]
                elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                    node = node[int(token)]
                else:
                    return out + raw[i:]  # points to nothing: check_refs says so
                out.append(raw[i])
                state, i = "schema", i + 1
                continue
            if not isinstance(node, dict) or token not in node:
                return out + raw[i:]
            if token in self.ignored_beside_ref(node):
                raise DraftError(
                    "$ref",
                    _pointer(path),
                    f"{ref!r} points into {token}, which {self.label} ignores beside $ref",
                )
            value = node[token]
            if token == "definitions" and type(value) is dict:
                out.append("$defs")
                state = "map"
            elif token == "dependencies" and type(value) is dict:
                if i + 1 == len(raw) or _decode(raw[i + 1]) not in value:
                    return out + raw[i:]
                dependency = value[_decode(raw[i + 1])]
                listed = type(dependency) is list
                out += ["dependentRequired" if listed else "dependentSchemas", raw[i + 1]]
                node, state, i = dependency, "other" if listed else "schema", i + 2
                continue
            elif token == "items" and type(value) is list:
                out.append("prefixItems")
                state = "list"
            elif token == "additionalItems":
                if type(node.get("items")) is not list:
                    raise DraftError(
                        "$ref", _pointer(path), f"{ref!r} points into additionalItems, dropped"
                    )
                out.append("items")
            elif token in _SCHEMA_ONE or token == "items":
                out.append(raw[i])
            elif token in _SCHEMA_LISTS:
                out.append(raw[i])
                state = "list"
            elif token in _SCHEMA_MAPS:
                out.append(raw[i])
                state = "map"
            else:
                out.append(raw[i])
                state = "other"
            node, i = value, i + 1
        return out


def _decode(token: str) -> str:
    if "%" in token:
        from urllib.parse import unquote  # lazy: rare

        token = unquote(token)
    return token.replace("~1", "/").replace("~0", "~")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
