"""The strict transform (OpenAI structured outputs) and its inverse information.

Strict schemas: every object has `additionalProperties: false` and lists every property in
`required`; a property that was optional becomes nullable, and the dispatcher maps a `null`
for it back to the default. Open objects (`dict[str, X]`, `**kwargs`) and `Any` cannot be
strict: the model could send keys or values the schema does not describe.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ToolDefinitionError

__all__ = ["add_sentences", "make_strict", "strict_problem"]

JsonSchema = dict[str, Any]
_NULL = {"type": "null"}
_ANNOTATIONS = {"description", "title", "default", "examples", "deprecated"}


class _NotStrict(Exception):
    def __init__(self, path: tuple[str, ...], why: str, fix: str) -> None:
        self.path, self.why, self.fix = path, why, fix
        super().__init__(why)


def make_strict(schema: JsonSchema, *, tool: str, signature: bool = True) -> JsonSchema:
    """A strict copy of a tool's parameters schema, or a `ToolDefinitionError` saying why not.

    `signature`: the schema was built from a function's signature (so an open arguments
    object means **kwargs); False for a schema given as it is (`register_schema`, a mounted
    tool), which has no Python signature to blame."""
    try:
        out: JsonSchema = _node(schema, (), signature)
        if "$defs" in schema:
            out["$defs"] = {
                k: _node(v, ("$defs", k), signature) for k, v in schema["$defs"].items()
            }
    except _NotStrict as exc:
        raise _error(exc, tool) from None
    return out


def strict_problem(schema: JsonSchema, *, signature: bool = True) -> str | None:
    """Why `schema` cannot be strict, or None (for `toolreg lint`)."""
    try:
        make_strict(schema, tool="", signature=signature)
    except ToolDefinitionError as exc:
        return exc.problem
    return None


def _error(exc: _NotStrict, tool: str) -> ToolDefinitionError:
    path = exc.path
    parameter = None
    if len(path) >= 2 and path[0] == "properties":
        parameter = path[1]
    where = ".".join(path) or "(root)"
    return ToolDefinitionError(
        f"cannot be strict: {exc.why} (at {where})",
        function=tool or None,
        parameter=parameter,
        fix=exc.fix,
    )


def _node(schema: Any, path: tuple[str, ...], signature: bool) -> Any:
    if not isinstance(schema, dict):
        return schema
    if not (schema.keys() - _ANNOTATIONS):
        raise _NotStrict(path, "Any accepts values no schema describes", _FIX_ANY)
    out: JsonSchema = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {k: _node(v, (*path, key, k), signature) for k, v in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [_node(v, (*path, key, str(i)), signature) for i, v in enumerate(value)]
        elif key in ("items", "not"):
            out[key] = _node(value, (*path, key), signature)
        elif key == "default":  # strict schemas may not carry `default`: say it in words
            out["description"] = _with_default(schema.get("description"), value)
        elif key != "$defs":
            out.setdefault(key, value)
    if _is_object(out):
        _close_object(out, schema, path, signature)
    if out.get("type") == "array" and "items" not in out and "prefixItems" not in out:
        raise _NotStrict(path, "an array of Any", "give the items a type, e.g. list[str]")
    return out


def _with_default(description: str | None, default: Any) -> str:
    note = f"Default: {json.dumps(default, ensure_ascii=False)} (send null for the default)."
    return add_sentences(description, note)


def add_sentences(description: str | None, *notes: str) -> str:
    """`description` with `notes` after it, ending its last sentence with a full stop."""
    text = (description or "").rstrip()
    if text and not text.endswith((".", "!", "?", "。")):
        text += "."
    return " ".join([text, *notes]).strip()


def _is_object(schema: JsonSchema) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _close_object(
    out: JsonSchema, original: JsonSchema, path: tuple[str, ...], signature: bool
) -> None:
    extra = original.get("additionalProperties", True)
    properties: dict[str, Any] = out.get("properties", {})
    if extra is not False:
        if not path and signature:  # the arguments object of a function: it takes **kwargs
            why = "the function takes **kwargs, which lets the model send undeclared keys"
            raise _NotStrict(path, why, _FIX_KWARGS)
        if not path:  # a schema given as it is: no Python signature to blame
            why = (
                "the arguments object is open (its schema does not set "
                "additionalProperties: false), which lets the model send undeclared keys"
            )
            raise _NotStrict(path, why, _FIX_SCHEMA)
        why = "an open object (a dict) lets the model send undeclared keys"
        raise _NotStrict(path, why, _FIX_OPEN)
    was_required = set(original.get("required", ()))
    out["properties"] = {
        name: (sub if name in was_required else nullable(sub)) for name, sub in properties.items()
    }
    out["required"] = list(properties)
    out["additionalProperties"] = False


def nullable(schema: JsonSchema) -> JsonSchema:
    """`schema` that also accepts null; annotations stay on the outside."""
    if _accepts_null(schema):
        return schema
    outer = {k: v for k, v in schema.items() if k in _ANNOTATIONS}
    inner = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    if set(inner) == {"anyOf"}:
        return {**outer, "anyOf": [*inner["anyOf"], _NULL]}
    return {**outer, "anyOf": [inner, _NULL]}


def _accepts_null(schema: JsonSchema) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(option == _NULL for option in schema.get("anyOf", ()))


_FIX_ANY = "give the parameter a concrete type, or export without strict"
_FIX_KWARGS = "declare each argument instead of **kwargs, or export without strict"
_FIX_SCHEMA = (
    "set additionalProperties: false in the tool's schema (a mounted tool: in its server), "
    "or export without strict"
)
_FIX_OPEN = "declare the keys with a TypedDict or dataclass, or export without strict"
