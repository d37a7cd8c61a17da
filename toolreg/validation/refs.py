"""The local `$ref`s of a schema document: where each points, and whether a chain of them
would check one value against itself forever.

A `$ref` that leads back to a schema it sits in is fine when the way back goes into the
value (`properties`, `items`...: a tree type); a way back that stays on the same value
(`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`) never
ends, in any validator. `check_refs` finds both that and a `$ref` that points to nothing,
and says where, as JSON pointers (`#/$defs/Node`), the notation `$ref`s are written in.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RefError", "check_refs", "pointer_target"]

# Subschemas applied to the value itself, and those applied to values inside it.
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_LIST = ("allOf", "anyOf", "oneOf")
_INSIDE_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_INSIDE_MAP = ("properties", "patternProperties")


class RefError(ValueError):
    """A `$ref` that cannot work: `where` is the chain of pointers, `fix` what to do."""

    def __init__(self, message: str, where: tuple[str, ...], fix: str) -> None:
        super().__init__(message)
        self.where = where
        self.fix = fix


def pointer_target(root: Any, ref: str) -> Any:
    """What the local `$ref` `ref` (`#` or `#/...`) points to in `root`; `LookupError` if
    nothing is there."""
    target = root
    for token in ref[2:].split("/") if ref != "#" else ():
        if "%" in token:  # percent-encoded JSON Pointer (rare): decode it
            from urllib.parse import unquote  # lazy: ~2 ms of import for a rare case

            token = unquote(token)
        step = token.replace("~1", "/").replace("~0", "~")
        if isinstance(target, list) and step.isdigit() and int(step) < len(target):
            target = target[int(step)]
        elif isinstance(target, dict) and step in target:
            target = target[step]
        else:
            raise LookupError(ref)
    return target


def _step(pointer: str, *keys: str | int) -> str:
    for key in keys:
        pointer += "/" + str(key).replace("~", "~0").replace("/", "~1")
    return pointer


def check_refs(root: Any) -> None:
    """Raise `RefError` if a local `$ref` reachable from `root` points to nothing, or a
    chain of them checks a value against a schema it is already being checked against.
    Other `$ref`s (remote, anchors) are left to whoever resolves them."""
    if not _has_refs(root):  # most tools: no $ref, so nothing to point to nothing or loop
        return
    where: dict[int, str] = {}  # id of a schema -> its pointer, the first way it was reached
    same: dict[int, list[tuple[Any, str]]] = {}  # id -> (subschema, pointer) on the same value
    todo: list[tuple[Any, str]] = [(root, "#")]
    while todo:
        schema, pointer = todo.pop()
        if not isinstance(schema, dict) or id(schema) in where:
            continue
        where[id(schema)] = pointer
        edges: list[tuple[Any, str]] = []
        ref = schema.get("$ref")
        if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
            try:
                edges.append((pointer_target(root, ref), ref))
            except LookupError:
                raise RefError(
                    f"the $ref {ref!r} at {_step(pointer, '$ref')} points to nothing",
                    (_step(pointer, "$ref"),),
                    f"add the definition {ref!r} points to, or correct the $ref",
                ) from None
        for key in _SAME_VALUE_ONE:
            if key in schema:
                edges.append((schema[key], _step(pointer, key)))
        for key in _SAME_VALUE_LIST:
            if isinstance(schema.get(key), list):
                edges.extend((sub, _step(pointer, key, i)) for i, sub in enumerate(schema[key]))
        if isinstance(schema.get("dependentSchemas"), dict):
            edges.extend(
                (sub, _step(pointer, "dependentSchemas", k))
                for k, sub in schema["dependentSchemas"].items()
            )
        same[id(schema)] = edges
        todo.extend(edges)
        for key in _INSIDE_ONE:
            if key in schema:
                todo.append((schema[key], _step(pointer, key)))
        for key in ("prefixItems", "items"):
            if isinstance(schema.get(key), list):
                todo.extend((sub, _step(pointer, key, i)) for i, sub in enumerate(schema[key]))
        for key in _INSIDE_MAP:
            if isinstance(schema.get(key), dict):
                todo.extend((sub, _step(pointer, key, k)) for k, sub in schema[key].items())
    cycle = _cycle(same, where)
    if cycle is not None:
        shown = " -> ".join(cycle)
        raise RefError(
            f"$ref cycle {shown}: a value would be checked against the same schema forever",
            tuple(cycle),
            "a $ref back to a schema it is inside of must go through properties, items or "
            "another keyword that checks a value inside; remove or redirect the $ref in it",
        )


def _has_refs(root: Any) -> bool:
    """Whether `$ref` is a key anywhere in `root` (as a keyword or not: conservative)."""
    todo = [root]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            if "$ref" in value:
                return True
            todo.extend(v for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            todo.extend(v for v in value if isinstance(v, (dict, list)))
    return False


def _cycle(same: dict[int, list[tuple[Any, str]]], where: dict[int, str]) -> list[str] | None:
    """The pointers of a cycle in the same-value graph, its first schema repeated last."""
    done: set[int] = set()
    for start in same:
        if start in done:
            continue
        path: list[int] = [start]
        on_path = {start}
        stack = [iter(same[start])]
        while stack:
            sub = next(stack[-1], None)
            if sub is None:
                stack.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
                continue
            node = id(sub[0])
            if node in on_path:
                loop = [*path[path.index(node) :], node]
                return [where[n] for n in loop]
            if node in done or node not in same:
                continue
            path.append(node)
            on_path.add(node)
            stack.append(iter(same[node]))
    return None
