"""Structured output: a Python type -> `response_format`, and the model's answer -> a value."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..definition.conversion import converter_for
from ..definition.schema import SchemaBuilder
from ..dispatch.decode import decode_arguments
from ..errors import InvalidArgumentsError, UsageError
from ..jsonvalues import copy_json
from ..types import ConversionError, Converter
from ..validation import Validator

__all__ = ["OutputSpec"]

_MAX_BYTES = 1 << 20
_MAX_DEPTH = 64
_MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What a final answer must look like, and how to turn it into a Python value."""

    name: str
    schema: dict[str, Any]
    wrapped: bool  # a non-object type travels as {"result": ...}
    validator: Validator
    converter: Converter | None

    @classmethod
    def for_type(cls, tp: Any) -> OutputSpec:
        if isinstance(tp, dict):
            return cls.for_schema(tp)
        builder = SchemaBuilder("output_type")
        # Inline a root `$ref`: providers want `"type": "object"` at the top of the schema.
        schema = dict(_resolve(builder.build(tp), builder.defs))
        wrapped = schema.get("type") != "object"
        if wrapped:
            schema = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
                "additionalProperties": False,
            }
        if builder.defs:
            schema = {**schema, "$defs": builder.defs}
        raw_name = getattr(tp, "__name__", "output")
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", raw_name)[:64] or "output"
        return cls(name, schema, wrapped, Validator(schema), converter_for(tp, "output_type"))

    @classmethod
    def for_schema(cls, schema: dict[str, Any]) -> OutputSpec:
        """A JSON Schema given as it is: the answer must match it; the output is the
        validated JSON (an object schema is sent as it is, anything else wrapped)."""
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
        return cls(name, given, wrapped, Validator(given), None)

    def response_format(self) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema}}

    def parse(self, text: str) -> tuple[Any, list[str]]:
        """(value, []) for a valid answer; (None, problems) otherwise."""
        try:  # the same limits as tool arguments: size, depth, finite numbers
            data = decode_arguments(_unfence(text.strip()), _MAX_BYTES, _MAX_DEPTH)
        except InvalidArgumentsError as exc:
            message = exc.message.replace("Arguments are", "The answer is", 1)
            return None, [message.replace("Arguments", "The answer", 1)]
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


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target: dict[str, Any] = defs.get(ref.rsplit("/", 1)[-1], {})
        return target
    return schema
