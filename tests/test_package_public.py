"""Public import paths, declared in one place and held: a module is public iff the reference
documents it (`toolreg_api_modules` in docs/conf.py, one `toolreg-api` block on a page of
docs/reference), its `__all__` its public names; every other module is private whatever its
name, and the docs (guides, examples, reference) and the README import public paths only.
The rule is written in docs/reference/deprecations.md and docs/contributing.md."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGE = DOCS / "reference" / "deprecations.md"

_DIRECTIVE = re.compile(r"^\.\. toolreg-api:: (\S+)\s*$", re.MULTILINE)
_FROM = re.compile(r"^[ \t]*from (toolreg[\w.]*) import (?:\(([\w\s,]+)\)|([\w ,]+))", re.M)
_IMPORT = re.compile(r"^\s*import (toolreg[\w.]*)", re.MULTILINE)
_FROM_INLINE = re.compile(r"`from (toolreg[\w.]*) import ([\w, ]+)`")


def public_modules() -> list[str]:
    """The one list: `toolreg_api_modules` in docs/conf.py."""
    conf = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    found: list[str] = next(
        ast.literal_eval(node.value)
        for node in conf.body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") == "toolreg_api_modules" for t in node.targets)
    )
    return found


def documented_modules() -> list[str]:
    """Every module a `toolreg-api` block of the reference documents (with repeats)."""
    return [
        module
        for page in sorted((DOCS / "reference").glob("*.md"))
        for module in _DIRECTIVE.findall(page.read_text(encoding="utf-8"))
    ]


def _is_public(path: str, names: list[str] | None = None) -> bool:
    """`from path import names` (or `import path`) reads public modules only: `path` is
    public, or each name is a public module inside it (`from toolreg.compat import
    chatglm3`)."""
    public = set(public_modules())
    if path in public:
        return True
    return bool(names) and all(f"{path}.{n}" in public for n in names)


def imports_in(text: str) -> list[tuple[str, list[str] | None]]:
    """The toolreg imports a page or an example makes: (module, names or None)."""
    found: list[tuple[str, list[str] | None]] = []
    given = [(m, a or b) for m, a, b in _FROM.findall(text)] + _FROM_INLINE.findall(text)
    for module, names in given:
        listed = [n.strip() for n in names.replace("\n", " ").split(",") if n.strip()]
        found.append((module, [n.split()[0] for n in listed]))
    found.extend((module, None) for module in _IMPORT.findall(text))
    return found


def test_the_reference_documents_exactly_the_declared_modules_once_each() -> None:
    declared, documented = public_modules(), documented_modules()
    assert len(declared) == len(set(declared)), "toolreg_api_modules lists a module twice"
    repeated = sorted({m for m in documented if documented.count(m) > 1})
    assert repeated == [], f"documented on two pages: {repeated}"
    assert sorted(documented) == sorted(declared), (
        "a module is public iff docs/conf.py lists it in toolreg_api_modules and one page of "
        "docs/reference documents it (.. toolreg-api:: MODULE)"
    )


@pytest.mark.parametrize("module", public_modules())
def test_a_public_module_declares_its_names_in_all(module: str) -> None:
    loaded = importlib.import_module(module)
    names = getattr(loaded, "__all__", None)
    assert isinstance(names, list), f"{module} has no __all__ list: its public names"
    assert all(isinstance(n, str) and hasattr(loaded, n) for n in names)
    assert not any(part.startswith("_") for part in module.split(".")), module


def test_no_deprecated_shim_is_public() -> None:
    shims = set(re.findall(r"^\| `(toolreg[\w.]*)` \|", PAGE.read_text(encoding="utf-8"), re.M))
    assert shims, "the deprecations page lists its shims in a table"
    assert shims.isdisjoint(public_modules())


def _docs_files() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted(DOCS.rglob("*.md")),
        *sorted((DOCS / "examples").glob("*.py")),
    ]


@pytest.mark.parametrize("path", _docs_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_import_public_paths_only(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    private = [
        f"{module} ({', '.join(names)})" if names else module
        for module, names in imports_in(text)
        if not _is_public(module, names)
    ]
    assert private == [], (
        f"{path.relative_to(ROOT)} imports private modules: {private}; import the names from "
        "a public module (docs/conf.py toolreg_api_modules), or make the module public"
    )


def test_the_import_reader_sees_each_form() -> None:
    text = (
        "from toolreg import Conversation, ToolRegistry\n"
        "    from toolreg.conversation.offer import (\n        Offer,\n        Found,\n    )\n"
        "import toolreg.search\n"
        "Say `from toolreg.compat.chatglm3 import register_tool, get_tools` in prose.\n"
    )
    found = imports_in(text)
    assert ("toolreg", ["Conversation", "ToolRegistry"]) in found
    assert ("toolreg.conversation.offer", ["Offer", "Found"]) in found
    assert ("toolreg.search", None) in found
    assert ("toolreg.compat.chatglm3", ["register_tool", "get_tools"]) in found
    assert not _is_public("toolreg.conversation.offer", ["Offer"])
    assert not _is_public("toolreg.search")
    assert _is_public("toolreg.compat", ["chatglm3"])
