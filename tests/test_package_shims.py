"""Shim modules: every module that only hands on another module's names is a deprecated
shim, listed in docs/reference/deprecations.md with its removal release, says that release
in its docstring and its `DeprecationWarning`, hands on the same objects as the new path,
and is imported by nothing in the package."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolreg"
PAGE = ROOT / "docs" / "reference" / "deprecations.md"

_ROW = re.compile(r"^\| `(toolreg[\w.]*)` \| `(toolreg[\w.]*)`.*\| (\d+\.\d+) \|$", re.MULTILINE)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolved(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name a relative `from ... import` of `module` reads."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_warning(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and ast.unparse(statement.value.func) == "warnings.warn"
    )


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _is_all(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Assign) and [ast.unparse(t) for t in statement.targets] == [
        "__all__"
    ]


def shims() -> dict[str, str]:
    """Every shim of the package, by name, with the module it hands on: a module whose only
    statements are its docstring, imports, `__all__` and `warnings.warn(...)`, and whose
    toolreg imports all read modules outside itself (a package that hands on its own
    submodules' names is their face, not a shim: `toolreg.cli`, `toolreg.stores`)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = (ast.Import, ast.ImportFrom)
        if not all(
            isinstance(s, allowed) or _is_docstring(s) or _is_all(s) or _is_warning(s)
            for s in tree.body
        ):
            continue
        module = _module_name(path)
        package = path.name == "__init__.py"
        sources = [
            _resolved(module, package, s) for s in tree.body if isinstance(s, ast.ImportFrom)
        ]
        own = [s for s in sources if s.startswith("toolreg")]
        outside = [s for s in own if s != module and not s.startswith(module + ".")]
        if outside and outside == own:
            found[module] = outside[0]
    return found


def documented() -> dict[str, tuple[str, str]]:
    """The deprecations page's table: old path -> (new path, removal release)."""
    text = PAGE.read_text(encoding="utf-8")
    return {old: (new, release) for old, new, release in _ROW.findall(text)}


def test_the_shim_finder_finds_a_shim_and_passes_a_face() -> None:
    found = shims()
    assert found["toolreg.search"] == "toolreg.toolsets.search"
    assert "toolreg.cli" not in found  # hands on its own toolreg.cli.main
    assert "toolreg.stores" not in found  # its own modules' names (and one error's)
    assert "toolreg" not in found
    assert "toolreg.conversation" not in found


def test_every_shim_is_on_the_deprecations_page_and_nothing_else_is() -> None:
    found, table = shims(), documented()
    assert sorted(found) == sorted(table), (
        "a shim module (it only hands on another module's names) is listed in "
        f"{PAGE.relative_to(ROOT)} with its new path and removal release: "
        f"found {sorted(found)}, listed {sorted(table)}"
    )
    for old, source in found.items():
        assert source == table[old][0], f"{old} hands on {source}, the page says {table[old][0]}"


@pytest.mark.parametrize("old", sorted(documented()))
def test_a_shim_says_its_removal_release_in_its_docstring(old: str) -> None:
    path = PACKAGE.joinpath(*old.split(".")[1:])
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    release = documented()[old][1]
    assert docstring.startswith("Deprecated:"), docstring
    assert f"Removed in {release}." in docstring, docstring


PROBE = """
import importlib, json, sys, warnings
out = {}
for old, new in json.loads(sys.argv[1]).items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shim = importlib.import_module(old)
    target = importlib.import_module(new)
    out[old] = {
        "warnings": [
            [w.category.__name__, str(w.message), w.filename] for w in caught
        ],
        "names": list(shim.__all__),
        "same": all(getattr(shim, n) is getattr(target, n) for n in shim.__all__),
    }
print(json.dumps(out))
"""


@pytest.mark.slow
def test_importing_a_shim_warns_with_its_new_path_and_release_and_hands_on_the_same_objects() -> (
    None
):
    table = documented()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    new = {old: shims()[old] for old in table}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(new)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    for old, (new_path, release) in table.items():
        got = seen[old]
        deprecations = [w for w in got["warnings"] if w[0] == "DeprecationWarning"]
        assert len(deprecations) == 1, (old, got["warnings"])
        message = deprecations[0][1]
        assert old in message
        assert new_path in message
        assert f"removed in {release}" in message
        assert got["names"], f"{old} hands on no names"
        assert got["same"], f"{old} hands on other objects than {new_path}"


@pytest.mark.slow
def test_nothing_in_the_package_imports_a_shim() -> None:
    """Every module of the package imports without one of the shims' warnings: the shims
    are for code outside it."""
    table = documented()
    names = sorted(
        _module_name(p)
        for p in PACKAGE.rglob("*.py")
        if _module_name(p) not in table and p.name != "__main__.py"
    )
    code = (
        "import importlib, sys, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except DeprecationWarning as w:\n"
        "        print(name, w)\n"
        "    except Exception:\n"
        "        pass  # an optional dependency not installed: not this test's business\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    shim_warnings = [line for line in done.stdout.splitlines() if "removed in" in line]
    assert shim_warnings == []
