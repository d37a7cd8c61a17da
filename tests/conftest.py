"""Shared fixtures. A test module may define its own `registry` fixture to override this one."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import ToolRegistry


@pytest.fixture
def registry() -> ToolRegistry:
    """A fresh registry with one tool: `get_weather(city)`."""
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return {"city": city, "temp": 18}

    return reg


@pytest.fixture
def adder() -> ToolRegistry:
    """A fresh registry with one tool: `add(a, b)` on integers."""
    reg = ToolRegistry()

    @reg.register_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return reg
