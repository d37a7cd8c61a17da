"""Model-sent arguments -> a dict, within size and depth limits, or an `InvalidArgumentsError`."""

from __future__ import annotations

import json
from typing import Any

from .errors import InvalidArgumentsError

__all__ = ["decode_arguments", "json_type_name"]

_JSON_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def json_type_name(value: object) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON arguments")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def _invalid_json(message: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(message, kind="invalid_json")


def decode_arguments(arguments: object, max_bytes: int, max_depth: int) -> dict[str, Any]:
    """Decode `arguments` (JSON text, bytes, a dict or None) into a dict."""
    if type(arguments) is str:
        text = arguments
    elif arguments is None:
        return {}
    elif isinstance(arguments, dict):
        _check_depth(arguments, max_depth, None)
        return arguments
    elif isinstance(arguments, (bytes, bytearray)):
        if len(arguments) > max_bytes:
            raise _too_large(len(arguments), max_bytes)
        try:
            text = bytes(arguments).decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid_json("Arguments are not valid UTF-8 text.") from None
    elif isinstance(arguments, str):
        text = str(arguments)
    else:
        raise _invalid_json(f"Arguments must be a JSON object, got {json_type_name(arguments)}.")
    return _decode_text(text, max_bytes, max_depth)


def _decode_text(text: str, max_bytes: int, max_depth: int) -> dict[str, Any]:
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _too_large(size, max_bytes)
    if not text or text.isspace():
        return {}
    try:
        value = _decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise _invalid_json(
            f"Arguments are not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from None
    except ValueError as exc:  # NaN / Infinity
        raise _invalid_json(f"Arguments are not valid JSON: {exc}.") from None
    except RecursionError:
        raise _too_deep(max_depth) from None
    if type(value) is not dict:
        raise _invalid_json(f"Arguments must be a JSON object, got {json_type_name(value)}.")
    _check_depth(value, max_depth, text)
    return value


def _check_depth(value: object, max_depth: int, text: str | None) -> None:
    if text is not None and text.count("[") + text.count("{") <= max_depth:
        return  # cannot be deeper than the number of brackets
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise _too_deep(max_depth)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _too_large(size: int, limit: int) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Arguments are too large: {size} bytes, the limit is {limit} bytes.",
        kind="invalid_arguments",
    )


def _too_deep(limit: int) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Arguments are nested too deeply: the limit is {limit} levels.",
        kind="invalid_arguments",
    )
