"""JSON values as toolreg handles them: untrusted text decoded strictly, schemas copied.

What a *Python type* becomes in JSON (and back) is the type table's business (`types`).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_INT_DIGITS",
    "NOT_JSONABLE",
    "NumberRefused",
    "canonical",
    "copy_json",
    "safe_json",
    "safe_text",
    "strict_decoder",
]

MAX_INT_DIGITS: Final = 4300  # CPython's own default limit for int(str)


class NumberRefused(ValueError):
    """A number JSON text may spell but a tool must not get; the message suits a model."""


def _parse_constant(name: str) -> Any:
    raise NumberRefused(f"{name} is not a valid number")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NumberRefused(f"{text[:20]} is not a valid number (out of range)")
    return value


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:  # parsing those costs quadratic time
        raise NumberRefused(f"a number has more than {MAX_INT_DIGITS} digits")
    return int(text)


strict_decoder = json.JSONDecoder(
    parse_constant=_parse_constant, parse_float=_parse_float, parse_int=_parse_int
)
"""A JSON decoder for untrusted text: no NaN/Infinity, no overflowing floats, no huge ints."""


class _NotJsonable:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_JSONABLE"


NOT_JSONABLE: Any = _NotJsonable()


_LEAVES = (str, int, float, bool, type(None))
_EXACT_LEAVES = frozenset(_LEAVES)


def canonical(value: Any) -> bytes:
    """The one encoding JSON values are signed, digested and fingerprinted in (a saved
    conversation state, a pin or lock file's definitions): sorted keys, no whitespace,
    `ensure_ascii=False`, UTF-8 (a lone surrogate kept as its own bytes, never an error)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (schemas): every mapping becomes a dict and every
    tuple a list; immutable leaves are shared. Several times faster than `copy.deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _EXACT_LEAVES else copy_json(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _EXACT_LEAVES else copy_json(v) for v in value]
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    return copy.deepcopy(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD: valid JSON may hold them (`"\\ud800"`),
    but no UTF-8 encoder takes them, so they would crash whatever sends the text on."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def safe_json(value: Any, _depth: int = 0) -> Any:
    """`value` with `safe_text` applied to every string in it, keys included; the very same
    object when nothing needed replacing (the usual case costs one `isascii` per string)."""
    kind = type(value)
    if kind is str:
        return safe_text(value)
    if _depth > 200:
        return value
    if kind is dict:
        changed = {}
        for key, item in value.items():
            new_key, new_item = safe_json(key, _depth + 1), safe_json(item, _depth + 1)
            if new_key is not key or new_item is not item:
                changed[key] = (new_key, new_item)
        if not changed:
            return value
        return {
            changed[k][0] if k in changed else k: changed[k][1] if k in changed else v
            for k, v in value.items()
        }
    if kind is list or kind is tuple:
        items = [safe_json(item, _depth + 1) for item in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return items if kind is list else tuple(items)
    return value
