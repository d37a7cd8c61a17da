"""Gemini function declarations: `{"name", "description", "parameters"}`.

`parameters` uses the OpenAPI 3.0 subset Gemini's `Schema` object accepts: upper-case
`type` names, `nullable` for optional values, no `$ref`/`$defs` (references are inlined, so a
recursive type cannot be exported), no `additionalProperties`, tuples as plain arrays,
`enum` only for strings and `format` only where Gemini knows it (`date-time` for strings,
`int32`/`int64`, `float`/`double`): other enums and formats, and the constraints the subset
has no keyword for (exclusive bounds, `multipleOf`, `uniqueItems`), are told in the description.
`ToolDefinition` and `Observation` are the shapes of google-genai's `FunctionDeclarationDict`
and of a `Part` holding a `functionResponse`, with the keys toolreg writes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # typing's TypedDict reads NotRequired from Python 3.11 on
    from typing_extensions import NotRequired, TypedDict

from ..content import File, Image, Media
from ..definition.names import NAME_RULES
from ..definition.strict import add_sentences
from ..errors import ToolDefinitionError
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, as_data, entries, layout, make_call, shown_parts

__all__ = [
    "FORMAT",
    "MEDIA_TYPES",
    "FunctionResponse",
    "InlineData",
    "Observation",
    "ToolDefinition",
    "definition",
    "observation",
    "parse_calls",
    "to_gemini_schema",
]


class ToolDefinition(TypedDict):
    """A function declaration (`parameters` only when the tool takes any)."""

    name: str
    description: str
    parameters: NotRequired[dict[str, Any]]


class Blob(TypedDict):
    mimeType: str
    data: str


class InlineData(TypedDict):
    """A media part of a rich result (`{"inlineData": {"mimeType", "data"}}`, base64)."""

    inlineData: Blob


class FunctionResponse(TypedDict):
    """`{"name", "response"}`: the response is `{"result": ...}` or `{"error": ...}`;
    `parts` the images and PDF files of a rich result (Gemini 3's multimodal function
    responses)."""

    name: str
    response: dict[str, str]
    parts: NotRequired[list[InlineData]]


MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "application/pdf"})
"""The media a function response carries in its `parts`; others are left out as text."""


class Observation(TypedDict):
    """A `Part` holding the `functionResponse` answering one call."""

    functionResponse: FunctionResponse


_KEEP = {
    "description",
    "format",
    "enum",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
}
_MAX_DEPTH = 32
_FORMATS = {
    "STRING": {"date-time", "enum"},
    "INTEGER": {"int32", "int64"},
    "NUMBER": {"float", "double"},
}


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    """One Gemini function declaration: `{"name", "description", "parameters"}`, the
    schema translated by `to_gemini_schema` into Gemini's OpenAPI subset (no
    `parameters` when the tool takes none).

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; Gemini has no strict mode, so it
            is ignored.

    `get_tools("gemini")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    out: ToolDefinition = {"name": tool.name, "description": tool.described_with_examples}
    if parameters.get("properties"):
        out["parameters"] = to_gemini_schema(parameters, tool=tool.name)
    return out


def to_gemini_schema(schema: dict[str, Any], *, tool: str = "") -> dict[str, Any]:
    """Translate a toolreg JSON Schema into Gemini's OpenAPI subset.

    Args:
        schema: the JSON Schema of a tool's parameters, as toolreg builds it.
        tool: the tool's name, for the message of an error.

    Raises:
        ToolDefinitionError: a recursive type (or a `$ref` to nothing), which Gemini's
            subset cannot express.
    """
    return _node(schema, schema.get("$defs", {}), (), tool)


def _node(schema: Any, defs: dict[str, Any], seen: tuple[str, ...], tool: str) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _inline(schema, ref, defs, seen, tool)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return _union(schema, options, defs, seen, tool)
    out: dict[str, Any] = {k: v for k, v in schema.items() if k in _KEEP}
    _set_type(out, schema)
    if "const" in schema:
        out["enum"] = [schema["const"]]
    _fix_enum(out)
    _fix_format(out)
    _tell_constraints(out, schema)
    if "properties" in schema:
        out["properties"] = {k: _node(v, defs, seen, tool) for k, v in schema["properties"].items()}
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    if isinstance(items, dict):
        out["items"] = _node(items, defs, seen, tool)
    elif prefix:
        out["items"] = _union({}, prefix, defs, seen, tool)
    return out


def _set_type(out: dict[str, Any], schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != len(kind):
            out["nullable"] = True
        kind = kinds[0] if len(kinds) == 1 else None
    if isinstance(kind, str) and kind != "null":
        out["type"] = kind.upper()


_TOLD = (
    ("exclusiveMinimum", "Must be greater than {}."),
    ("exclusiveMaximum", "Must be less than {}."),
    ("multipleOf", "Must be a multiple of {}."),
)


def _tell_constraints(out: dict[str, Any], schema: dict[str, Any]) -> None:
    """Constraints Gemini's subset has no keyword for, said in the description instead
    (dispatch still enforces them)."""
    notes = [text.format(schema[key]) for key, text in _TOLD if key in schema]
    if schema.get("uniqueItems") is True:
        notes.append("Items must be unique.")
    if notes:
        out["description"] = add_sentences(out.get("description"), *notes)


def _fix_enum(out: dict[str, Any]) -> None:
    values = out.get("enum")
    if values is None:
        return
    if all(isinstance(v, str) for v in values):
        out.setdefault("type", "STRING")
        return
    del out["enum"]
    listed = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
    _tell(out, f"one of: {listed}")


def _fix_format(out: dict[str, Any]) -> None:
    fmt = out.get("format")
    if fmt is None or fmt in _FORMATS.get(out.get("type", ""), ()):
        return
    del out["format"]
    _tell(out, f"format: {fmt}")


def _tell(out: dict[str, Any], note: str) -> None:
    """Add what the schema cannot say to the description, for the model to read."""
    out["description"] = f"{out.get('description', '')} ({note})".strip()


def _inline(
    schema: dict[str, Any], ref: str, defs: dict[str, Any], seen: tuple[str, ...], tool: str
) -> dict[str, Any]:
    name = ref.rsplit("/", 1)[-1]
    if name in seen or len(seen) > _MAX_DEPTH or name not in defs:
        raise ToolDefinitionError(
            f"the type {name} refers to itself (or is missing), which Gemini cannot express",
            function=tool or None,
            fix="flatten the recursive type, or export this tool for another provider",
        )
    out = _node(defs[name], defs, (*seen, name), tool)
    if "description" in schema:
        out["description"] = schema["description"]
    return out


def _union(
    schema: dict[str, Any],
    options: list[Any],
    defs: dict[str, Any],
    seen: tuple[str, ...],
    tool: str,
) -> dict[str, Any]:
    non_null = [o for o in options if o != {"type": "null"}]
    nullable = len(non_null) != len(options)
    if len(non_null) == 1:
        out = _node(non_null[0], defs, seen, tool)
    else:
        out = {"anyOf": [_node(o, defs, seen, tool) for o in non_null]}
    if nullable:
        out["nullable"] = True
    if "description" in schema:
        out["description"] = schema["description"]
    return out


def observation(result: ToolResult) -> Observation:
    """A Gemini `functionResponse` part answering one call, by the tool's name:
    `{"functionResponse": {"name", "response": {"result": ...}}}` (`"error"` instead of
    `"result"` when the call failed), the text being `result.content`.

    A rich result's images and PDF files (`MEDIA_TYPES`) go in the function response's
    `parts` as `inlineData`; its `result` is the rest, as text (a marker for what is left
    out: audio, other files and image types)."""
    key = "result" if result.ok else "error"
    parts = shown_parts(result)
    if not parts:
        return {"functionResponse": {"name": result.tool_name, "response": {key: result.content}}}
    laid = layout(parts, _inline_part)
    text = "\n".join(p for p in laid if isinstance(p, str))
    media: list[InlineData] = [p for p in laid if not isinstance(p, str)]
    return {"functionResponse": {"name": result.tool_name, "response": {key: text}, "parts": media}}


def _inline_part(part: Media) -> InlineData | None:
    pdf = isinstance(part, File) and not part.is_text and part.essence == "application/pdf"
    if pdf or (isinstance(part, Image) and part.essence in MEDIA_TYPES):
        return {"inlineData": {"mimeType": part.essence, "data": part.base64()}}
    return None


def parse_calls(response: Any) -> list[ToolCall]:
    """The `functionCall` parts of a Gemini response, content or list of parts."""
    data = as_data(response)
    if isinstance(data, dict) and "candidates" in data:
        first = entries(data, "candidates")[:1]
        data = first[0].get("content", {}) if first else {}
    calls = (
        part.get("functionCall") or part.get("function_call") for part in entries(data, "parts")
    )
    return [
        make_call(call.get("name"), call.get("args"), call.get("id"))
        for call in calls
        if isinstance(call, dict)
    ]


FORMAT = Format(
    name="gemini",
    name_rule=NAME_RULES["gemini"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
)
"""The `gemini` format: it writes Gemini function declarations (`get_tools("gemini")`), reads
`functionCall` parts from a response, and answers them with `functionResponse` parts.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("gemini")` takes."""
