"""Checked with `mypy --strict` by test_decorator_types.py: each marked line MUST be an error.

If registering lost the function's type (`Any`), these lines would pass silently.
"""

from __future__ import annotations

import toolreg
from toolreg import ToolRegistry

reg = ToolRegistry()


@reg.register_tool
def add(a: int, b: int = 2) -> int:
    return a + b


@toolreg.register_tool(name="shout")
def shout(text: str) -> str:
    return text.upper()


add("one")  # error: arg-type
wrong: str = add(1)  # error: assignment
shout(1)  # error: arg-type
shout("a", "b")  # error: call-arg
reg.register_tool(name=3)  # error: call-overload
reg.register_tool(allowed_callers=["robot"])  # error: list-item
