"""The fast signature reader agrees with `inspect.signature` on every kind of parameter."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from toolreg.definition.signature import _parameters


def plain(a: int, b: str = "x") -> None: ...
def positional_only(a: int, b: int = 2, /, c: int = 3) -> None: ...
def keyword_only(a: int, *, b: int, c: str = "c") -> None: ...
def var_positional(a: int, *rest: int, b: int = 1) -> None: ...
def var_keyword(a: int, **extra: Any) -> None: ...
def everything(a: int, /, b: int = 2, *args: int, c: int, d: int = 4, **kw: Any) -> None: ...
def no_parameters() -> None: ...
def with_locals(a: int) -> None:
    unused_local = a  # locals follow the parameters in co_varnames
    del unused_local


def closure_maker() -> Callable[..., None]:
    captured = 1

    def inner(x: int, *, y: int = captured) -> None: ...

    return inner


@functools.wraps(plain)
def wrapped(*args: Any, **kwargs: Any) -> None: ...


class Thing:
    def method(self, a: int, b: int = 2) -> None: ...

    def __call__(self, q: str) -> None: ...


FUNCTIONS = [
    plain,
    positional_only,
    keyword_only,
    var_positional,
    var_keyword,
    everything,
    no_parameters,
    with_locals,
    closure_maker(),
    wrapped,
    Thing().method,
    Thing().__call__,
    lambda a, b=1, *c, d, **e: None,
]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: getattr(f, "__name__", "?"))
def test_fast_reader_matches_inspect_signature(fn: Callable[..., Any]) -> None:
    expected = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert _parameters(fn) == expected
