"""An OpenAPI document as untrusted input: parsed within bounds, its `$ref`s followed inside
it only, its schemas turned into JSON Schema 2020-12 that a tool can carry.

The document is someone else's, like a mounted MCP server's tool list, and checked the
same way before anything is built from it:

- `parse_document` refuses text past `MAX_DOCUMENT_BYTES`, a value nested deeper than
  `MAX_DOCUMENT_DEPTH` or more than `MAX_DOCUMENT_VALUES` values (counted as a walk sees
  them: a YAML alias is counted each time it is used, so an alias bomb is refused, and a
  recursive alias is too deep), and a document that is not OpenAPI 3.0 or 3.1. YAML needs
  PyYAML (`pip install 'toolreg[openapi]'`), imported only for a YAML document.
- `Resolver.follow` follows a `$ref` to a parameter, a request body or a response inside
  the document: a `$ref` to another document (a file, a URL) is refused, and so is a
  chain of them that loops or runs past `MAX_REF_HOPS`.
- `SchemaBundle` turns an operation's schemas into JSON Schema 2020-12: OpenAPI 3.0's own
  keywords made standard (`nullable`, boolean `exclusiveMinimum`/`exclusiveMaximum`,
  `example`), keywords with no meaning for a tool dropped (`discriminator`, `xml`,
  `externalDocs`, `x-*`), properties the other side never sends dropped (`readOnly` ones
  from a request, `writeOnly` ones from a response), and each `$ref` to a component
  rewritten to a `$defs` entry of the tool's own schema. What comes out is then bounded
  (size, depth, patterns) by `toolreg.validation.untrusted` when the tool is built.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any, Final, Literal

from ..errors import ToolregError, with_article
from ..validation.refs import pointer_target

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_VALUES",
    "MAX_REF_HOPS",
    "OpenAPIError",
    "RefRefused",
    "Resolver",
    "SchemaBundle",
    "checked_document",
    "parse_document",
]

MAX_DOCUMENT_BYTES: Final = 16 * 1024 * 1024
"""Bytes of a document's text (the largest public API documents are around 10 MB)."""
MAX_DOCUMENT_DEPTH: Final = 100
"""Objects and arrays inside one another in a document."""
MAX_DOCUMENT_VALUES: Final = 1_000_000
"""JSON values in a document, YAML aliases counted each time they are used."""
MAX_REF_HOPS: Final = 32
"""`$ref`s followed in a row to reach one parameter, request body or response."""


class OpenAPIError(ToolregError, ValueError):
    """An OpenAPI document toolreg cannot use (malformed, past a limit, not OpenAPI 3), or
    tools from it that cannot be named apart; the message says which and how to fix it."""


class RefRefused(Exception):
    """A `$ref` toolreg will not follow (external, dangling, a loop): the operation that
    uses it is refused, the message says why."""


# -- parsing -------------------------------------------------------------------------------


def parse_document(text: str | bytes) -> dict[str, Any]:
    """The document in `text` (JSON, or YAML when it does not start with `{`), checked
    against the limits and for an `openapi: 3.0.x / 3.1.x` field."""
    size = len(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    if size > MAX_DOCUMENT_BYTES:
        raise OpenAPIError(
            f"the OpenAPI document is {size:,} bytes long (toolreg's limit: {MAX_DOCUMENT_BYTES:,})"
        )
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise OpenAPIError("the OpenAPI document is not UTF-8 text") from None
    text = text.lstrip("\ufeff")
    value = _parse_json(text) if text.lstrip()[:1] in ("{", "[") else _parse_yaml(text)
    return checked_document(value)


def checked_document(value: Any) -> dict[str, Any]:
    """A parsed document (or one given as a dict) as a copy of JSON values within the
    limits, with an `openapi: 3.0.x / 3.1.x` field."""
    document = _checked(value)
    if not isinstance(document, dict):
        raise OpenAPIError("the OpenAPI document is not an object")
    version = document.get("openapi")
    if not isinstance(version, str) or not version.startswith(("3.0.", "3.1.")):
        if "swagger" in document:
            raise OpenAPIError(
                "the document is Swagger 2.0; toolreg reads OpenAPI 3.0 and 3.1 (convert it, "
                "e.g. with swagger2openapi)"
            )
        raise OpenAPIError(
            f"the document's 'openapi' field is {_shown(version)}; toolreg reads OpenAPI 3.0 "
            "and 3.1 documents ('openapi': '3.0.3', '3.1.0'...)"
        )
    if not isinstance(document.get("paths", {}), dict):
        raise OpenAPIError("the document's 'paths' is not an object")
    return document


def _refuse_constant(name: str) -> Any:
    raise OpenAPIError(f"the OpenAPI document has {name}, which is not JSON")


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise OpenAPIError(_too_deep()) from None
    except ValueError as exc:
        if isinstance(exc, OpenAPIError):
            raise
        raise OpenAPIError(f"the OpenAPI document is not valid JSON: {exc}") from None


def _parse_yaml(text: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise OpenAPIError(
            "the OpenAPI document is YAML (it does not start with '{'), which needs PyYAML: "
            "pip install 'toolreg[openapi]'; or give the JSON form of it"
        ) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # safe: no Python objects
    try:
        return yaml.load(text, Loader=loader)
    except RecursionError:
        raise OpenAPIError(_too_deep()) from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise OpenAPIError(f"the OpenAPI document is not valid YAML{at}: {problem}") from None


def _too_deep() -> str:
    return f"the OpenAPI document nests deeper than {MAX_DOCUMENT_DEPTH} levels (toolreg's limit)"


def _checked(value: Any) -> Any:
    """A copy of a parsed document made of JSON values only, within the limits. YAML's own
    scalars become JSON: a date its ISO text, a number key (`200:`) a string."""
    count = 0

    def scalar(item: Any) -> Any:
        if item is None or isinstance(item, (str, bool, int)):
            return item
        if isinstance(item, float):
            if not math.isfinite(item):
                raise OpenAPIError("the OpenAPI document has a number that is not finite")
            return item
        isoformat = getattr(item, "isoformat", None)  # a YAML date or timestamp
        if callable(isoformat) and type(item).__module__ == "datetime":
            return str(isoformat())
        raise OpenAPIError(
            f"the OpenAPI document has {with_article(type(item).__name__)} value, which is not JSON"
        )

    def key(item: Any) -> str:
        if isinstance(item, str):
            return item
        if item is None or isinstance(item, bool):
            return json.dumps(item)
        if isinstance(item, (int, float)):
            return str(item)
        raise OpenAPIError(f"the OpenAPI document has {with_article(type(item).__name__)} as a key")

    root: list[Any] = [None]
    todo: list[tuple[Any, Callable[[Any], None], int]] = [(value, _setter(root, 0), 0)]
    while todo:
        item, put, depth = todo.pop()
        count += 1
        if count > MAX_DOCUMENT_VALUES:
            raise OpenAPIError(
                f"the OpenAPI document has more than {MAX_DOCUMENT_VALUES:,} values "
                "(toolreg's limit; YAML aliases count each time they are used)"
            )
        if isinstance(item, (dict, list)):
            if depth >= MAX_DOCUMENT_DEPTH:
                raise OpenAPIError(_too_deep())
            if isinstance(item, dict):
                made: dict[str, Any] = {}
                for k, v in item.items():
                    name = key(k)
                    made[name] = None
                    todo.append((v, _setter(made, name), depth + 1))
                put(made)
            else:
                listed: list[Any] = [None] * len(item)
                for i, v in enumerate(item):
                    todo.append((v, _setter(listed, i), depth + 1))
                put(listed)
        else:
            put(scalar(item))
    return root[0]


def _setter(container: Any, index: Any) -> Callable[[Any], None]:
    def put(value: Any) -> None:
        container[index] = value

    return put


def _shown(value: object, limit: int = 60) -> str:
    shown = ascii(value)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


# -- $refs ----------------------------------------------------------------------------------


class Resolver:
    """Follows a document's local `$ref`s (`#/components/...`), never another document's."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def target(self, ref: object) -> Any:
        """What the `$ref` `ref` points to; `RefRefused` for an external or dangling one."""
        if not isinstance(ref, str):
            raise RefRefused(f"a $ref that is not a string ({_shown(ref)})")
        if not (ref == "#" or ref.startswith("#/")):
            raise RefRefused(
                f"the $ref {_shown(ref)} points outside the document (toolreg follows only "
                "$refs inside it, '#/components/...')"
            )
        try:
            return pointer_target(self.document, ref)
        except LookupError:
            raise RefRefused(f"the $ref {_shown(ref)} points to nothing") from None

    def follow(self, value: Any) -> Any:
        """`value`, or what its chain of `$ref`s leads to (a parameter, a request body...)."""
        seen: set[str] = set()
        while isinstance(value, dict) and "$ref" in value:
            ref = value["$ref"]
            if ref in seen:
                raise RefRefused(f"the $ref {_shown(ref)} leads back to itself")
            if len(seen) >= MAX_REF_HOPS:
                raise RefRefused(f"more than {MAX_REF_HOPS} $refs in a row")
            seen.add(ref)
            value = self.target(ref)
        return value


# -- schemas ----------------------------------------------------------------------------------

Direction = Literal["request", "response"]

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "additionalProperties",
    "items",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
# OpenAPI's own schema keywords, and those that would mean something else inside a tool's
# schema ($id and $schema would change what its $refs resolve against)
_DROPPED = frozenset(
    {"discriminator", "xml", "externalDocs", "example", "nullable", "$id", "$schema"}
    | {"$anchor", "$dynamicAnchor", "$comment", "$vocabulary"}
)
_COMPONENT = "#/components/schemas/"


class SchemaBundle:
    """An operation's schemas as JSON Schema 2020-12, with every component they use, as
    converted, in `defs` (the tool schema's `$defs`). One bundle per tool schema and
    direction; `convert` may be called for several schemas of it (parameters, body)."""

    def __init__(self, resolver: Resolver, openapi_30: bool, direction: Direction) -> None:
        self.resolver = resolver
        self.openapi_30 = openapi_30
        self.direction = direction
        self.defs: dict[str, Any] = {}
        self._names: dict[str, str] = {}  # the pointer a def holds -> its name
        self._todo: list[str] = []

    def convert(self, schema: Any) -> Any:
        """`schema` converted; the components it uses are added to `defs` (see `finish`)."""
        return self._convert(schema, 0)

    def finish(self) -> dict[str, Any]:
        """Convert every component the converted schemas use, and those they use: `defs`."""
        while self._todo:
            pointer = self._todo.pop()
            name = self._names[pointer]
            self.defs[name] = self._convert(self.resolver.target(pointer), 0)
        return self.defs

    def resolved(self, schema: Any) -> Any:
        """A converted schema with its top-level `$ref` chain followed into `defs`."""
        for _ in range(MAX_REF_HOPS):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                return schema
            try:
                schema = pointer_target({"$defs": self.defs}, schema["$ref"])
            except LookupError:
                return None
        return None

    def _local(self, ref: object) -> str:
        """The `$ref` of the tool's own schema for the document's `ref`."""
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            self.resolver.target(ref)  # raises RefRefused, saying why
        assert isinstance(ref, str)
        rest = ""
        if ref.startswith(_COMPONENT) and len(ref) > len(_COMPONENT):
            name, _, tail = ref[len(_COMPONENT) :].partition("/")
            pointer = _COMPONENT + name
            rest = "/" + tail if tail else ""
        else:
            pointer, name = ref, ""
        self.resolver.target(ref)  # it must point to something (RefRefused otherwise)
        known = self._names.get(pointer)
        if known is None:
            known = self._name_for(pointer, name)
            self._names[pointer] = known
            self._todo.append(pointer)
        return "#/$defs/" + _escape(known) + rest

    def _name_for(self, pointer: str, name: str) -> str:
        if name:
            decoded = name.replace("~1", "/").replace("~0", "~")
        else:
            decoded = "ref-" + hashlib.sha256(pointer.encode("utf-8")).hexdigest()[:12]
        taken = set(self._names.values())
        chosen, n = decoded, 2
        while chosen in taken:
            chosen, n = f"{decoded}-{n}", n + 1
        return chosen

    def _convert(self, node: Any, depth: int) -> Any:
        if depth > MAX_DOCUMENT_DEPTH:
            raise RefRefused("a schema nested too deep")
        if not isinstance(node, dict):
            return node  # a boolean schema (3.1), or something the metaschema refuses later
        out: dict[str, Any] = {}
        if "$ref" in node:
            out["$ref"] = self._local(node["$ref"])
            if self.openapi_30:  # 3.0: a $ref's siblings SHALL be ignored
                return out
        for key, value in node.items():
            if key == "$ref" or key in _DROPPED or key.startswith("x-"):
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {k: self._convert(v, depth + 1) for k, v in value.items()}
            elif key in _SCHEMA_ONE and isinstance(value, dict):
                out[key] = self._convert(value, depth + 1)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self._convert(v, depth + 1) for v in value]
            else:
                out[key] = value
        if "example" in node and "examples" not in node:
            out["examples"] = [node["example"]]
        if self.openapi_30:
            _standard_30(node, out)
        self._drop_unsent(out)
        return out

    def _drop_unsent(self, out: dict[str, Any]) -> None:
        """Drop the properties the other side never sends: `readOnly` ones from what a
        request carries, `writeOnly` ones from what a response does."""
        properties = out.get("properties")
        if not isinstance(properties, dict):
            return
        flag = "readOnly" if self.direction == "request" else "writeOnly"
        dropped = [k for k, v in properties.items() if isinstance(v, dict) and v.get(flag) is True]
        if not dropped:
            return
        out["properties"] = {k: v for k, v in properties.items() if k not in dropped}
        required = out.get("required")
        if isinstance(required, list):
            out["required"] = [k for k in required if k not in dropped]


def _standard_30(node: dict[str, Any], out: dict[str, Any]) -> None:
    """OpenAPI 3.0's variants of JSON Schema keywords, as 2020-12 says them."""
    if node.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = node.get(exclusive)
        if isinstance(flag, bool):
            del out[exclusive]
            if flag and bound in out:
                out[exclusive] = out.pop(bound)


def _escape(name: str) -> str:
    """`name` as one JSON pointer token."""
    return name.replace("~", "~0").replace("/", "~1")
