"""Model-sent arguments -> a dict, within size and depth limits, or an `InvalidArgumentsError`.

Accepted: JSON text (`str`, `bytes`), a mapping, or None. Empty or blank text and None mean
`{}`. Only finite numbers are accepted (`NaN`, `Infinity` and `1e400` are refused), and no
integer longer than `MAX_INT_DIGITS` digits (parsing those costs quadratic time).

Depth counts nested containers: `{}` is 1 level, `{"a": [1]}` is 2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentsError, InvalidJSONError
from ..jsonvalues import MAX_INT_DIGITS, NumberRefused, safe_json, strict_decoder

__all__ = ["MAX_INT_DIGITS", "check_limits", "decode_arguments", "json_type_name"]


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


def _parse(text: str) -> Any:
    """`strict_decoder.decode(text)`, skipping its white-space regexes for the usual `{...}`."""
    if text[0] == "{" and text[-1] == "}":
        value, end = strict_decoder.raw_decode(text)
        if end == len(text):
            return value
    return strict_decoder.decode(text)  # white space around, or trailing data: the full check


def _invalid_json(message: str) -> InvalidJSONError:
    return InvalidJSONError(message)


def decode_arguments(arguments: object, max_bytes: int, max_depth: int) -> dict[str, Any]:
    """Decode `arguments` (JSON text, bytes, a mapping or None) into a dict."""
    if type(arguments) is str:
        text = arguments
        # The usual call: a small JSON object, no white space around it, too few brackets
        # to nest deeper than the limit. Anything else, or an error: the full path below.
        if (
            text[:1] == "{"
            and text[-1:] == "}"
            and len(text) * 4 <= max_bytes
            and text.count("[") + text.count("{") <= max_depth
        ):
            try:
                value, end = strict_decoder.raw_decode(text)
            except (ValueError, RecursionError):
                pass
            else:
                if end == len(text):
                    return _safe(text, value)
    elif arguments is None:
        return {}
    elif isinstance(arguments, Mapping):
        value = arguments if type(arguments) is dict else dict(arguments)
        check_limits(value, max_depth, python=True)
        return safe_json(value)  # type: ignore[no-any-return]
    elif isinstance(arguments, (bytes, bytearray, memoryview)):
        data = bytes(arguments)
        if len(data) > max_bytes:
            raise _too_large(len(data), max_bytes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid_json("Arguments are not valid UTF-8 text.") from None
    elif isinstance(arguments, str):
        text = str(arguments)
    else:
        raise _invalid_json(f"Arguments must be a JSON object, got {json_type_name(arguments)}.")
    return _decode_text(text, max_bytes, max_depth)


def _safe(text: str, value: dict[str, Any]) -> dict[str, Any]:
    """`value` without lone surrogates: only text that is not plain ASCII, or that escapes
    characters (`"\\ud800"`), can hold one."""
    if text.isascii() and "\\u" not in text:
        return value
    return safe_json(value)  # type: ignore[no-any-return]


def _decode_text(text: str, max_bytes: int, max_depth: int) -> dict[str, Any]:
    if len(text) * 4 > max_bytes:  # else even 4-byte UTF-8 characters cannot exceed it
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_large(size, max_bytes)
    if not text or text.isspace():
        return {}
    try:
        value = _parse(text)
    except json.JSONDecodeError as exc:
        # "Unterminated string starting at", "Invalid control character at": no second "at"
        at = "" if exc.msg.endswith(" at") else " at"
        raise _invalid_json(
            f"Arguments are not valid JSON: {exc.msg}{at} line {exc.lineno}, column {exc.colno}."
        ) from None
    except NumberRefused as exc:
        raise _invalid_json(f"Arguments are not valid JSON: {exc}.") from None
    except RecursionError:
        raise _too_deep(max_depth) from None
    if type(value) is not dict:
        raise _invalid_json(f"Arguments must be a JSON object, got {json_type_name(value)}.")
    if text.count("[") + text.count("{") > max_depth:  # else it cannot be deeper
        check_limits(value, max_depth)
    return _safe(text, value)


def check_limits(value: object, max_depth: int, *, python: bool = False) -> None:
    """Raise if `value` nests more than `max_depth` containers.

    With `python=True` (a value built in Python rather than decoded from JSON text) also
    refuse what JSON cannot hold: non-finite floats and non-string object keys.
    """
    if type(value) is dict and all(type(k) is str and type(v) in _FLAT for k, v in value.items()):
        return  # the usual case: one level of strings, integers, booleans and nulls
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise _too_deep(max_depth)
            if python:
                _check_keys(node)
            stack.extend((v, depth + 1) for v in node.values() if _needs_check(v, python))
        elif isinstance(node, list):
            if depth > max_depth:
                raise _too_deep(max_depth)
            stack.extend((v, depth + 1) for v in node if _needs_check(v, python))
        elif isinstance(node, float) and not math.isfinite(node):
            token = "NaN" if math.isnan(node) else ("-Infinity" if node < 0 else "Infinity")
            raise _invalid_json(f"Arguments are not valid JSON: {token} is not a valid number.")


_FLAT = frozenset({str, int, bool, type(None)})


def _needs_check(value: object, python: bool) -> bool:
    return isinstance(value, (dict, list)) or (python and isinstance(value, float))


def _check_keys(node: dict[Any, Any]) -> None:
    for key in node:
        if not isinstance(key, str):
            raise _invalid_json(
                f"Arguments are not valid JSON: object keys must be strings, "
                f"got {json_type_name(key)}."
            )


def _too_large(size: int, limit: int) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Arguments are too large: {size} bytes, the limit is {limit} bytes."
    )


def _too_deep(limit: int) -> InvalidArgumentsError:
    return InvalidArgumentsError(f"Arguments are nested too deeply: the limit is {limit} levels.")
