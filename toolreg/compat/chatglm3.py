"""ChatGLM3's `tool_registry`, on toolreg: its demo code runs after changing only the import.

```python
# from tool_registry import register_tool, dispatch_tool, get_tools
from toolreg.compat.chatglm3 import register_tool, dispatch_tool, get_tools
```

- `register_tool(func)` registers `func` (ChatGLM3's `Annotated[T, "description", required]`
  parameters, and everything else toolreg reads) and returns it;
- `dispatch_tool(tool_name, tool_params) -> str`: the call's observation, as text: the
  result, or a short message for the model when the name, the arguments or the tool fail
  (ChatGLM3 sent the traceback; toolreg sends what `errors="redact"` allows);
- `get_tools() -> dict`: the definitions in ChatGLM3's own shape, `{name: {"name",
  "description", "params": [{"name", "description", "type", "required"}]}}`, a fresh copy.

The tools live in `registry`, a `ToolRegistry` of this module (ChatGLM3 keeps a module-level
table too): pass it to `Conversation(..., registry=registry, dialect="chatglm3")`.
Registering a function again (a reloaded module) replaces it; another function under a
taken name is a `DuplicateToolError`.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..definition.signature import qualified_name
from ..registry import ToolRegistry
from ..tool import Tool

__all__ = ["dispatch_tool", "get_tools", "register_tool", "registry"]

F = TypeVar("F", bound=Callable[..., Any])

registry = ToolRegistry()
"""The tools registered through this module."""


def register_tool(func: F) -> F:
    """Register `func` as a tool named after it; returns it unchanged."""
    existing = registry.get(getattr(func, "__name__", ""))
    same = existing is not None and qualified_name(existing.function) == qualified_name(func)
    return registry.register_tool(replace=same)(func)


def dispatch_tool(
    tool_name: str, tool_params: Mapping[str, Any] | str | bytes | None = None
) -> str:
    """Run the call; the observation for the model, as text (never raises for the call).

    ChatGLM3's `dispatch_tool(tool_name, tool_params)`, on the compat registry: the call is
    validated, converted and redacted like any toolreg call.

    Args:
        tool_name: the tool's name, as the model sent it.
        tool_params: the arguments: a mapping, JSON text or bytes, or None.

    Example:
        observation = dispatch_tool("roll_dice", {"seed": 7})
    """
    return str(registry.dispatch_tool(tool_name, tool_params))


def get_tools() -> dict[str, dict[str, Any]]:
    """Every tool's definition in ChatGLM3's shape (a fresh copy each time)."""
    return {tool.name: _definition(tool) for tool in registry.tools()}


def _definition(tool: Tool) -> dict[str, Any]:
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", ()))
    params = [
        {
            "name": p.name,
            "description": properties.get(p.name, {}).get("description", ""),
            "type": _type_name(p.annotation),
            "required": p.name in required,
        }
        for p in tool.params
        if p.inject is None and not p.var_keyword
    ]
    return {"name": tool.name, "description": tool.description, "params": params}


def _type_name(tp: Any) -> str:
    """The type as ChatGLM3 writes it: `str`, `int`, `list[str]`..."""
    if isinstance(tp, types.GenericAlias) or typing.get_origin(tp) is not None:
        return str(tp).replace("typing.", "")
    return str(getattr(tp, "__name__", tp))
