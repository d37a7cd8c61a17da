"""A checker of JSON values against the SDKs' own TypedDict type hints (`conforms`): the
wire shapes toolreg writes are held to the `openai` and `anthropic` packages' param types."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union

import typing_extensions

_REQUIRED = {typing_extensions.Required, getattr(typing, "Required", None)} - {None}
_NOT_REQUIRED = {typing_extensions.NotRequired, getattr(typing, "NotRequired", None)} - {None}
_UNIONS = (Union, types.UnionType)


def _unwrap(hint: Any) -> tuple[Any, bool | None]:
    """(the type, True for Required / False for NotRequired / None when unmarked)."""
    origin = typing.get_origin(hint)
    if origin in _REQUIRED or origin in _NOT_REQUIRED:
        return typing.get_args(hint)[0], origin in _REQUIRED
    return hint, None


def conforms(value: Any, hint: Any, path: str = "$") -> list[str]:
    """Problems of `value` against an SDK type hint (TypedDicts checked key by key)."""
    hint, _ = _unwrap(hint)
    if typing_extensions.is_typeddict(hint):
        return _typed_dict_problems(value, hint, path)
    origin = typing.get_origin(hint)
    if origin in _UNIONS:
        options = typing.get_args(hint)
        results = [conforms(value, option, path) for option in options]
        return [] if any(not r for r in results) else min(results, key=len)
    if origin is Literal:
        return [] if value in typing.get_args(hint) else [f"{path}: {value!r} not in {hint}"]
    if hint is type(None):
        return [] if value is None else [f"{path}: expected None"]
    if origin in (dict, typing.Dict) or hint in (dict, typing.Dict):  # noqa: UP006
        return [] if isinstance(value, dict) else [f"{path}: expected a dict"]
    if origin in (list, typing.List):  # noqa: UP006
        return [] if isinstance(value, list) else [f"{path}: expected a list"]
    if hint is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a bool"]
    if hint is str:
        return [] if isinstance(value, str) else [f"{path}: expected a str"]
    return []


def _typed_dict_problems(value: Any, td: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object for {td.__name__}"]
    hints = typing.get_type_hints(td, include_extras=True)
    required = set()
    for key, hint in hints.items():
        _, marked = _unwrap(hint)
        if marked is True or (marked is None and key in td.__required_keys__):
            required.add(key)
    assert set(hints) == td.__required_keys__ | td.__optional_keys__
    problems = [f"{path}: unknown key {k!r} for {td.__name__}" for k in value if k not in hints]
    problems += [f"{path}: missing key {k!r} for {td.__name__}" for k in required - set(value)]
    for key, item in value.items():
        if key in hints:
            problems += conforms(item, hints[key], f"{path}.{key}")
    return problems
