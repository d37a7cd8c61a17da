"""The docstring the reference shows for each public name, found without Sphinx.

Shared by the Sphinx extension (`toolreg_docs`) and `tests/docs/test_docstrings.py`, so the test
checks exactly what the site shows. A class, function or module has its own `__doc__`; a
value (a constant, a type alias, a `Format`) cannot, so its docstring is written in the
source where it is assigned, as Sphinx reads it: `#:` comment lines just above the
assignment, or a string just below it. A name a module imports from another is followed to
the module that assigns it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any


def public_names(module_name: str) -> list[str]:
    """The names in `module_name.__all__` (a ValueError when it has none)."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"{module_name} has no __all__ to document")
    return list(names)


def kind(obj: Any) -> str:
    """What a public object is: "exception", "class", "function", "module" or "data"."""
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isroutine(obj):
        return "function"
    if inspect.ismodule(obj):
        return "module"
    return "data"


def docstring(module_name: str, name: str, obj: Any) -> str:
    """The docstring shown for `module_name.name` (whose value is `obj`), cleaned."""
    if kind(obj) == "data":
        return data_docstring(module_name, name)
    own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    return inspect.cleandoc(own or "")


def _assigned(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if type(node).__name__ == "TypeAlias":  # `type X = ...` (Python 3.12+)
        return [node.name.id]  # type: ignore[attr-defined]
    return []


def data_docstring(module_name: str, name: str) -> str:
    """The docstring of the value `name` of `module_name`, from the source that assigns it.

    A name the module exports lazily (its `__getattr__` imports it on first use) is looked
    up in the loaded module of the same package that holds the very same object."""
    found = _assigned_docstring(module_name, name)
    if found is not None:
        return found
    module = importlib.import_module(module_name)
    value = getattr(module, name)
    package = module_name.split(".")[0] + "."
    for other_name, other in sorted(sys.modules.items()):
        if (
            other_name.startswith(package)
            and other_name != module_name
            and getattr(other, name, None) is value
        ):
            found = _assigned_docstring(other_name, name)
            if found is not None:
                return found
    return ""


def _assigned_docstring(module_name: str, name: str) -> str | None:
    """The docstring where `module_name`'s source assigns (or imports) `name`; None when
    its source does neither."""
    module = importlib.import_module(module_name)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return None
    source = Path(path).read_text(encoding="utf-8")
    lines = source.splitlines()
    body = ast.parse(source).body
    for i, node in enumerate(body):
        if name in _assigned(node):
            after = body[i + 1] if i + 1 < len(body) else None
            if (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                return inspect.cleandoc(after.value.value)
            above: list[str] = []
            row = node.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#:"):
                above.insert(0, lines[row].strip()[2:].strip())
                row -= 1
            return "\n".join(above).strip()
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    package = module.__package__ or module_name
                    origin = importlib.util.resolve_name(
                        "." * node.level + (node.module or ""), package
                    )
                    return data_docstring(origin, alias.name)
    return None
