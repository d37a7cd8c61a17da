"""A call's arguments at the command line: read as the user types them, shown one way.

Reading (`toolreg call`, `toolreg demo --call`): ARGS is one JSON object, `-` (the object on
stdin), or `key=value` pairs. A value is JSON when it parses (`count=3`, `ok=true`,
`tags='["a", "b"]'`, `note=null`), else the text as typed (`city=Paris`); a parameter that
takes only strings gets the text as typed (`zip=01234`, `name=1984`). A key twice, a JSON
object mixed with pairs, or anything else (a JSON array, a bare word) is a usage error.

Showing (every tool call, confirmation question and pending approval the CLI prints): the
arguments as the model sends them, one line of JSON; converted Python values are written
back as the model wrote them (a `Decimal` as a number, a date in ISO 8601), so the call
the model made and the question about it read the same.
"""

from __future__ import annotations

import dataclasses
import decimal
import json
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from ..errors import UsageError
from ..jsonvalues import NOT_JSONABLE, safe_text
from ..tool import Tool
from ..types import to_jsonable

__all__ = ["read_arguments", "shown_arguments"]

_FIX = 'pass key=value pairs (city=Paris unit=c) or one JSON object (\'{"city": "Paris"}\')'
_MAX_SHOWN_DEPTH = 32


def _usage(problem: str) -> NoReturn:
    raise UsageError(f"{problem}; {_FIX}")


def read_arguments(words: Sequence[str], tool: Tool | None, stdin: TextIO) -> str:
    """ARGS as the JSON object text the dispatcher reads as a model's arguments.

    A JSON object is handed on as written (the dispatcher decodes it as it decodes a model's);
    pairs become an object. `tool` (None when the name is unknown) says which parameters
    take only strings. Raises `UsageError` naming the word at fault and the fix.
    """
    if not words:
        return "{}"
    if list(words) == ["-"]:
        return _json_object(stdin.read(), "the JSON on stdin")
    if "-" in words:
        _usage("'-' (read ARGS from stdin) comes alone")
    if len(words) == 1 and not _is_pair(words[0]):
        return _json_object(words[0], "ARGS")
    if _split_json(words):
        unquoted = not any('"' in word for word in words)  # {"city": "Paris"} typed as is
        _usage(
            f"ARGS looks like one JSON value that the shell split into {len(words)} words"
            f"{' and stripped of its double quotes' if unquoted else ''}: quote it whole"
        )
    for word in words:
        if not _is_pair(word):
            if word.lstrip()[:1] in _JSON_STARTS:
                _usage("ARGS is one JSON object or key=value pairs, not both")
            _usage(f"'{safe_text(word)}' is not key=value")
    return _pairs(words, tool)


_JSON_STARTS = ("{", "[", '"')


def _split_json(words: Sequence[str]) -> bool:
    """Whether `words` look like one JSON value the shell split at its spaces: the first
    opens an object or array it does not close, and none is a key=value pair."""
    if words[0].lstrip()[:1] not in ("{", "[") or any(_is_pair(word) for word in words):
        return False
    try:
        json.loads(words[0])
    except (ValueError, RecursionError):
        return True
    return False


def _is_pair(word: str) -> bool:
    """Whether `word` is `key=value` rather than JSON."""
    return "=" in word and word.lstrip()[:1] not in _JSON_STARTS


def _json_object(text: str, what: str) -> str:
    if not text.strip():
        return "{}"
    try:
        value = json.loads(text, object_pairs_hook=_no_repeated_key, parse_constant=_no_constant)
    except _RepeatedKeyError as exc:
        _usage(f"{what} has the key '{exc}' twice")
    except RecursionError:
        _usage(f"{what} is nested too deeply")
    except ValueError as exc:
        if what == "ARGS" and not text.lstrip().startswith(_JSON_STARTS):
            _usage(f"ARGS '{safe_text(text)}' is not key=value")
        if what == "ARGS" and '"' not in text and ":" in text:
            _usage("ARGS looks like JSON that the shell stripped of its double quotes: quote it")
        _usage(f"{what} is not valid JSON ({exc})")
    if not isinstance(value, dict):
        _usage(f"{what} must be an object, got {_json_kind(value)}")
    return text


class _RepeatedKeyError(ValueError):
    pass


def _no_repeated_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKeyError(key)
        found[key] = value
    return found


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def _pairs(words: Sequence[str], tool: Tool | None) -> str:
    """The pairs as a JSON object's text; a value that is JSON is kept as typed (`19.90`
    stays `19.90`, which a `Decimal` parameter reads exactly)."""
    properties = tool.parameters.get("properties", {}) if tool is not None else {}
    found: dict[str, str] = {}
    for word in words:
        key, _, raw = word.partition("=")
        if not key:
            _usage(f"'{safe_text(word)}' has no key before '='")
        if key in found:
            _usage(f"the key '{key}' is given twice")
        try:
            found[key] = _value(raw, properties.get(key))
        except _RepeatedKeyError as exc:
            _usage(f"the value of '{key}' has the key '{exc}' twice")
    items = (f"{json.dumps(key, ensure_ascii=False)}: {value}" for key, value in found.items())
    return "{" + ", ".join(items) + "}"


def _value(raw: str, schema: Any) -> str:
    """`raw` as JSON text: itself when it is JSON, else a string of it; a string of it for
    a parameter of strings only."""
    try:
        value = json.loads(raw, object_pairs_hook=_no_repeated_key, parse_constant=_no_constant)
    except _RepeatedKeyError:
        raise
    except (ValueError, RecursionError):
        return json.dumps(raw, ensure_ascii=False)
    only_strings = isinstance(schema, dict) and schema.get("type") == "string"
    if only_strings and not isinstance(value, str):
        return json.dumps(raw, ensure_ascii=False)
    return raw.strip()


def shown_arguments(arguments: Any) -> str:
    """`arguments` on one line as the model sends them (text the model sent, as it is)."""
    if isinstance(arguments, str):
        return safe_text(arguments)
    return safe_text(_shown(arguments, 0))


def _shown(value: Any, depth: int) -> str:
    if depth > _MAX_SHOWN_DEPTH:
        return '"..."'
    if value is None or isinstance(value, (bool, int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return str(value)  # a JSON number, as the model wrote it: 120, 19.99
    if isinstance(value, dict):
        items = (f"{_shown(str(k), depth)}: {_shown(v, depth + 1)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)) and not hasattr(value, "_asdict"):
        return "[" + ", ".join(_shown(v, depth + 1) for v in value) + "]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return _shown({f.name: getattr(value, f.name) for f in fields if f.init}, depth + 1)
    written = to_jsonable(value)
    if written is NOT_JSONABLE:
        return json.dumps(repr(value), ensure_ascii=False)
    return _shown(written, depth + 1)
