"""Structured output: a Python type -> `response_format`, and the model's answer -> a value.

The schema goes out strict (OpenAI structured outputs: `"strict": true`, every property
required, optional ones nullable) whenever it can be, unless the conversation says
`output_strict=False`; a schema that cannot be strict (an open `dict`, `Any`) goes out as it
is. A `null` the strict schema allowed for an optional property is dropped again before the
answer is checked against the type's own schema, so that its default applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..definition.conversion import converter_for
from ..definition.schema import SchemaBuilder
from ..definition.strict import make_strict
from ..dispatch.decode import decode_arguments
from ..errors import InvalidArgumentsError, ToolDefinitionError, UsageError
from ..jsonvalues import copy_json
from ..types import ConversionError, Converter
from ..validation import Validator
from ..validation.nulls import NullDropper

__all__ = ["OutputSpec"]

_MAX_BYTES = 1 << 20
_MAX_DEPTH = 64
_MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What a final answer must look like, and how to turn it into a Python value.

    `schema` is the type's own schema (what the answer is checked against); `sent` the one
    in the request: its strict copy when `strict`, else `schema` itself."""

    name: str
    schema: dict[str, Any]
    wrapped: bool  # a non-object type travels as {"result": ...}
    validator: Validator
    converter: Converter | None
    sent: dict[str, Any]
    strict: bool

    @classmethod
    def for_type(cls, tp: Any, *, strict: bool = True) -> OutputSpec:
        """The spec for a Python type or a JSON Schema dict; strict on the wire when
        `strict` and the schema can be."""
        if isinstance(tp, dict):
            name, schema, wrapped = _given_schema(tp)
            return cls.build(name, schema, wrapped, None, strict=strict)
        builder = SchemaBuilder("output_type")
        root = builder.build(tp)
        # Inline a root `$ref`: providers want `"type": "object"` at the top of the schema.
        schema = dict(_resolve(root, builder.defs))
        defs = _without_root(root, schema, builder.defs)
        wrapped = schema.get("type") != "object"
        if wrapped:
            schema = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
                "additionalProperties": False,
            }
        if defs:
            schema = {**schema, "$defs": defs}
        raw_name = getattr(tp, "__name__", "output")
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", raw_name)[:64] or "output"
        return cls.build(name, schema, wrapped, converter_for(tp, "output_type"), strict=strict)

    @classmethod
    def build(
        cls,
        name: str,
        schema: dict[str, Any],
        wrapped: bool,
        converter: Converter | None,
        *,
        strict: bool,
    ) -> OutputSpec:
        sent = _strict_copy(schema) if strict else None
        return cls(
            name,
            schema,
            wrapped,
            Validator(schema),
            converter,
            sent=schema if sent is None else sent,
            strict=sent is not None,
        )

    def parse(self, text: str) -> tuple[Any, list[str]]:
        """(value, []) for a valid answer; (None, problems) otherwise."""
        try:  # the same limits as tool arguments: size, depth, finite numbers
            data = decode_arguments(_unfence(text.strip()), _MAX_BYTES, _MAX_DEPTH)
        except InvalidArgumentsError as exc:
            message = exc.message.replace("Arguments are", "The answer is", 1)
            return None, [message.replace("Arguments", "The answer", 1)]
        if self.strict and not self.validator.is_valid(data):
            data = _drop_strict_nulls(self.schema, data)
        problems = self.validator.validate(data)[:_MAX_PROBLEMS]
        if problems:
            return None, [f"{p.location()}: {p.message}" if p.path else p.message for p in problems]
        value = data["result"] if self.wrapped else data
        if self.converter is None:
            return value, []
        try:
            return self.converter(value), []
        except ConversionError as exc:
            return None, [f"{'.'.join(map(str, exc.path)) or '(root)'}: {exc.message}"]


def _unfence(text: str) -> str:
    """The JSON inside a Markdown code fence (```json ... ```), or `text` as it is.

    String operations, not a regex: the model's text is untrusted, and a backtracking
    pattern over long runs of white space costs cubic time."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        if inner.startswith("json"):
            inner = inner[4:]
        return inner.strip()
    return text


def _given_schema(schema: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """A JSON Schema given as it is: the answer must match it; the output is the validated
    JSON (an object schema is used as it is, anything else wrapped)."""
    import jsonschema  # lazy: only an explicit schema needs the metaschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        given = copy_json(schema)
        Validator(given)
    except (jsonschema.SchemaError, ValueError) as exc:
        raise UsageError(f"output_type: not a valid JSON Schema ({exc})") from None
    wrapped = given.get("type") != "object"
    if wrapped:
        defs = given.pop("$defs", None)
        given = {
            "type": "object",
            "properties": {"result": given},
            "required": ["result"],
            "additionalProperties": False,
            **({"$defs": defs} if defs else {}),
        }
    title = given.get("title") if isinstance(given.get("title"), str) else "output"
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(title))[:64] or "output"
    return name, given, wrapped


def _strict_copy(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict copy of `schema`, or None when it cannot be strict."""
    try:
        return make_strict(schema, tool="output_type")
    except ToolDefinitionError:
        return None


def _drop_strict_nulls(schema: dict[str, Any], data: Any) -> Any:
    """`data` without the `null`s the strict copy allowed for optional properties."""
    if not isinstance(data, dict):
        return data
    root = {"properties": {"answer": schema}, "$defs": schema.get("$defs", {})}
    return NullDropper(root).drop({"answer": data})["answer"]


def _without_root(
    root: dict[str, Any], inlined: dict[str, Any], defs: dict[str, Any]
) -> dict[str, Any]:
    """`defs` without the root type's own entry once it is inlined, unless something
    refers to it (a recursive type)."""
    ref = root.get("$ref")
    if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
        return defs
    others = {k: v for k, v in defs.items() if k != ref.rsplit("/", 1)[-1]}
    return defs if _refers_to(ref, [inlined, others]) else others


def _refers_to(ref: str, node: Any) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("$ref") == ref:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target: dict[str, Any] = defs.get(ref.rsplit("/", 1)[-1], {})
        return target
    return schema
