"""Strict mode's `null`s for optional properties of nested objects, dropped again.

Strict mode lists every property as required and makes the optional ones nullable; the
tool's own schema does not accept that `null`, and the class's default should apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .validator import Validator

__all__ = ["NullDropper"]

_MAX_WALK = 200


class NullDropper:
    """Drops `null`s the strict transform allowed for optional properties of nested objects.

    Only used on the slow path (after validation failed), so it compiles subschemas lazily.
    """

    __slots__ = ("_accepts_under", "_checks", "_defs", "_root")

    def __init__(
        self, root: dict[str, Any], accepts: Callable[[Any, object], bool] | None = None
    ) -> None:
        """`accepts(subschema, value)`: how to check a value against a part of `root` (a
        validator's `accepts`); by default each part is compiled on its own."""
        self._root = root
        self._defs = root.get("$defs", {})
        self._checks: dict[int, Callable[[object], bool]] = {}
        self._accepts_under = accepts

    def drop(self, args: dict[str, Any]) -> dict[str, Any]:
        """`args` without those nulls (the same object when there were none)."""
        properties = self._root.get("properties", {})
        changed = {}
        for key, value in args.items():
            sub = properties.get(key)
            if sub is not None and isinstance(value, (dict, list)):
                new = self._walk(sub, value, 0)
                if new is not value:
                    changed[key] = new
        return {**args, **changed} if changed else args

    def _accepts(self, schema: Any, value: object) -> bool:
        if self._accepts_under is not None:
            return self._accepts_under(schema, value)
        check = self._checks.get(id(schema))
        if check is None:
            try:
                check = Validator({**schema, "$defs": self._defs}).is_valid
            except Exception:
                check = _never
            self._checks[id(schema)] = check
        return check(value)

    def _resolve(self, schema: dict[str, Any]) -> Any:
        for _ in range(20):
            ref = schema.get("$ref")
            if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
                return schema
            target = self._defs.get(ref[len("#/$defs/") :])
            if not isinstance(target, dict):
                return schema
            schema = target
        return schema

    def _walk(self, schema: Any, value: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > _MAX_WALK:
            return value
        schema = self._resolve(schema)
        alternatives = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(alternatives, list):
            for alt in alternatives:
                new = self._walk(alt, value, depth + 1)
                if new is not value and isinstance(alt, dict) and self._accepts(alt, new):
                    return new
            return value
        if isinstance(value, dict):
            return self._object(schema, value, depth)
        if isinstance(value, list):
            return self._array(schema, value, depth)
        return value

    def _object(self, schema: dict[str, Any], value: dict[str, Any], depth: int) -> Any:
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        required = schema.get("required", ())
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                out[key] = item
            elif item is None and key not in required and not self._accepts(sub, None):
                changed = True  # strict mode's null: leave it out, the default applies
            else:
                new = self._walk(sub, item, depth + 1)
                changed = changed or new is not item
                out[key] = new
        return out if changed else value

    def _array(self, schema: dict[str, Any], value: list[Any], depth: int) -> Any:
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        new = [
            self._walk(prefix[i] if i < len(prefix) else items, item, depth + 1)
            for i, item in enumerate(value)
        ]
        return value if all(a is b for a, b in zip(new, value)) else new


def _never(value: object) -> bool:
    return False
