"""The JSON Schema of what a function returns, when its return annotation is a JSON object.

Read by `register_tool(output_schema=True)` (the Responses API's `output_schema`) and by the
MCP server (`outputSchema`): a TypedDict, dataclass, NamedTuple, pydantic model or `dict`
is described; text, numbers, lists, optional objects, no annotation or a type toolreg
cannot describe are not (None).
"""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any

from ..errors import ToolregError
from .schema import SchemaBuilder
from .signature import split_annotated

__all__ = ["return_object_schema"]


def return_object_schema(function: Any, owner: str) -> dict[str, Any] | None:
    """The schema of `function`'s result when its return annotation is a JSON object."""
    annotation = _return_annotation(function)
    if annotation is None:
        return None
    builder = SchemaBuilder(owner)
    try:
        schema = builder.build(split_annotated(annotation)[0])
    except (ToolregError, RecursionError):
        return None
    defs = dict(builder.defs)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and len(schema) == 1:
        name = ref[len("#/$defs/") :]
        schema = dict(defs.pop(name, {}))  # the object itself, at the top
        if ref in json.dumps([schema, defs]):  # referenced inside (a recursive type): keep it
            defs[name] = dict(schema)
    if schema.get("type") != "object":
        return None
    if defs:
        schema["$defs"] = defs
    return schema


def _return_annotation(function: Any) -> Any:
    target = inspect.unwrap(function)
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target).__call__  # a callable object: its __call__ method
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception:  # an unresolvable or missing annotation: no output schema
        return None
    annotation = hints.get("return")
    return None if annotation is None or annotation is type(None) else annotation
