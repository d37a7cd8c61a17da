"""Checked with `mypy --strict` by test_decorator_types.py: registering keeps the type.

Every line here would be an error if a decorator returned `Any` or a different callable.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from typing_extensions import assert_type, reveal_type

import toolreg
from toolreg import ToolRegistry

reg = ToolRegistry()


@reg.register_tool
def add(a: int, b: int = 2) -> int:
    return a + b


@reg.register_tool(name="shout", description="Say it louder.", strict=True, tags=["text"])
def shout(text: str) -> str:
    return text.upper()


@reg.register_tool(timeout=1.5, read_only=True)
async def fetch(url: str) -> bytes:
    return url.encode()


@toolreg.register_tool
def module_bare(x: float) -> float:
    return x


@toolreg.register_tool(name="module_options", max_result_chars=100)
def module_options(xs: list[float]) -> list[float]:
    return xs


@reg.register_tool(allowed_callers=["direct", "programmatic"], output_schema=True)
def lookup(key: str) -> dict[str, str]:
    return {"key": key}


def plain(flag: bool) -> str:
    return str(flag)


called = reg.register_tool(plain)

reveal_type(add)
reveal_type(shout)
reveal_type(fetch)
reveal_type(module_bare)
reveal_type(module_options)
reveal_type(called)

assert_type(add(1), int)
assert_type(add(1, b=3), int)
assert_type(shout("hi"), str)
pending = assert_type(fetch("u"), Coroutine[Any, Any, bytes])
assert_type(module_bare(1.0), float)
assert_type(module_options([1.0]), list[float])
assert_type(called(True), str)
assert_type(lookup("k"), dict[str, str])

as_callable: Callable[[str], str] = shout
as_two_ints: Callable[[int, int], int] = add
as_float: Callable[[float], float] = module_bare
total: int = add(1) + add(2, 3)
