"""Every public name has a docstring that says what it does; every public function and
class says what each of its parameters is and names the toolreg errors it raises itself.

"Public" is what the reference documents: each name in `__all__` of the modules listed in
docs/conf.py (`toolreg_api_modules`), which cover `toolreg`, `toolreg.testing`,
`toolreg.mcp`, the formats, the stores and the error tree. A docstring is read the way
the reference reads it (docs/_ext/toolreg_docstrings.py): a class's or a function's own
`__doc__`, and for a value the string below (or the `#:` comments above) the assignment.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Protocol

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import toolreg_docstrings  # noqa: E402  (docs/_ext, shared with the Sphinx extension)

import toolreg.errors  # noqa: E402


def _api_modules() -> list[str]:
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "toolreg_api_modules" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError("docs/conf.py has no toolreg_api_modules")


MODULES = _api_modules()


def _public() -> list[tuple[str, str, Any]]:
    """(module, name, object) of each public name, each object once (at its first module)."""
    seen: set[int] = set()
    found = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in toolreg_docstrings.public_names(module_name):
            obj = getattr(module, name)
            kind = toolreg_docstrings.kind(obj)
            if kind != "data":  # a value (an int, a str) may be the same object elsewhere
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
            found.append((module_name, name, obj))
    return found


PUBLIC = _public()


def _ids(entries: list[tuple[str, str, Any]]) -> list[str]:
    """Stable test ids (xdist workers must collect the same ones): `module.name`."""
    return [f"{module}.{name}" for module, name, _ in entries]


def test_the_reference_covers_what_the_issue_names() -> None:
    wanted = {"toolreg", "toolreg.errors", "toolreg.testing", "toolreg.mcp", "toolreg.stores"}
    assert wanted <= set(MODULES)
    # the formats: the package, the contract and every format module
    import toolreg.formats

    for fmt in toolreg.formats.FORMATS.values():
        module = inspect.getmodule(fmt.definition)
        assert module is not None, fmt.name
        assert module.__name__ in MODULES, fmt.name
    assert "toolreg.formats.base" in MODULES


def _words(text: str) -> int:
    return len(re.findall(r"[A-Za-z]{2,}", text))


@pytest.mark.parametrize(("module", "name", "obj"), PUBLIC, ids=_ids(PUBLIC))
def test_every_public_name_says_what_it_is(module: str, name: str, obj: Any) -> None:
    doc = toolreg_docstrings.docstring(module, name, obj)
    assert doc.strip(), f"{module}.{name} has no docstring"
    first = doc.strip().split("\n\n", 1)[0]  # the summary paragraph
    too_short = f"{module}.{name}: its docstring {doc!r} is too short to say what it does"
    assert len(doc) >= 40, too_short
    assert _words(first) >= 5, too_short
    assert doc.strip().strip("`.") != name, f"{module}.{name}: the docstring only names it"


def _signature_target(obj: Any) -> Any:
    """What takes the parameters: a function, or a class's `__init__`, its own or one it
    inherits from a toolreg class (a dataclass's fields, a Protocol's and an exception's
    are documented otherwise)."""
    if inspect.isroutine(obj):
        return obj
    if (
        inspect.isclass(obj)
        and getattr(obj.__init__, "__module__", "").startswith("toolreg.")
        and not dataclasses.is_dataclass(obj)
        and not issubclass(obj, BaseException)
        and Protocol not in obj.__mro__
    ):
        return obj.__init__
    return None


def _option_records() -> list[type]:
    """The public records that declare options once (`ConversationOptions`, ...): their
    fields' docs are the options tables of the reference."""
    return [
        o
        for _, n, o in PUBLIC
        if inspect.isclass(o) and n.endswith("Options") and dataclasses.is_dataclass(o)
    ]


def _option_docs(record: type) -> dict[str, str]:
    """What the options table says of each field of `record`."""
    below = _field_docs(record)
    return {
        f.name: f.metadata.get("doc") or below.get(f.name, "")
        for f in dataclasses.fields(record)  # type: ignore[arg-type]
    }


def _described(module: str, name: str, obj: Any) -> str:
    """Where a name's parameters are described: its docstring, for a class also its
    `__init__`'s, and the fields of an options record the docstring names."""
    doc = toolreg_docstrings.docstring(module, name, obj)
    if inspect.isclass(obj):
        doc += "\n" + inspect.cleandoc(obj.__init__.__doc__ or "")
    for record in _option_records():
        if re.search(rf"\b{record.__name__}\b", doc):
            doc += "".join(f"\n{n}: {d}" for n, d in _option_docs(record).items() if d)
    return doc


CALLABLES = [(m, n, o) for m, n, o in PUBLIC if _signature_target(o) is not None]


@pytest.mark.parametrize(("module", "name", "obj"), CALLABLES, ids=_ids(CALLABLES))
def test_every_parameter_is_described(module: str, name: str, obj: Any) -> None:
    doc = _described(module, name, obj)
    target = _signature_target(obj)
    named = [
        p.name
        for p in inspect.signature(target).parameters.values()
        if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    missing = [p for p in named if not re.search(rf"\b{re.escape(p)}\b", doc)]
    assert not missing, f"{module}.{name}: its docstring does not say what {missing} are"


_ERRORS = {
    name
    for name, value in vars(toolreg.errors).items()
    if inspect.isclass(value) and issubclass(value, toolreg.errors.ToolregError)
}


def _raised_here(target: Any) -> set[str]:
    """The toolreg errors `target`'s own body raises by name (`raise UsageError(...)`)."""
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(target)))
    except (OSError, TypeError):
        return set()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in _ERRORS:
                found.add(exc.id)
    return found


@pytest.mark.parametrize(("module", "name", "obj"), CALLABLES, ids=_ids(CALLABLES))
def test_every_error_raised_directly_is_named(module: str, name: str, obj: Any) -> None:
    doc = _described(module, name, obj)
    missing = sorted(e for e in _raised_here(_signature_target(obj)) if e not in doc)
    assert not missing, f"{module}.{name} raises {missing}, which its docstring does not name"


def test_the_checks_catch_a_bad_docstring() -> None:
    def bare(city: str, unit: str = "c") -> str:
        """Weather."""
        if not city:
            raise toolreg.errors.UsageError("no city")
        raise UsageError(city + unit)  # type: ignore[name-defined]  # noqa: F821

    doc = inspect.getdoc(bare) or ""
    assert len(doc) < 40
    assert [p for p in ("city", "unit") if not re.search(rf"\b{p}\b", doc)] == ["city", "unit"]
    assert _raised_here(bare) == {"UsageError"}


def _field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a class's fields (what the options tables show)."""
    source = textwrap.dedent(inspect.getsource(cls))
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    found = {}
    for node, after in zip(body.body, body.body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            found[node.target.id] = after.value.value
    return found


def _tables() -> list[tuple[str, str | None]]:
    """Every `toolreg-options` table of the site: (what it reads, its `:only:` or None)."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.startswith(".. toolreg-options::"):
                after = lines[i + 1].strip() if i + 1 < len(lines) else ""
                only = after.removeprefix(":only:").strip() if after.startswith(":only:") else None
                found.append((line.split("::", 1)[1].strip(), only))
    return found


def _resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_row_of_the_options_tables_says_what_it_does() -> None:
    # the tables of docs/reference/options.md: the tool options from toolreg.ToolOptions,
    # the conversation options from toolreg.ConversationOptions
    tables = _tables()
    assert ("toolreg.ConversationOptions", None) in tables
    assert ("toolreg.ToolOptions", None) in tables
    for target, only in tables:
        record = _resolve(target)
        assert dataclasses.is_dataclass(record), target
        docs = _option_docs(record)
        rows = (
            set(_resolve(only)) if only else {f.name for f in dataclasses.fields(record) if f.init}
        )
        blank = sorted(n for n in rows if not docs.get(n, "").strip())
        assert blank == [], f"{target}: options without a description: {blank}"
