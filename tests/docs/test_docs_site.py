"""The documentation site builds, as CI builds it, and every internal link and anchor in it
resolves.

`sphinx-build -W --keep-going -n -b html docs OUT`: every warning is an error, and `-n`
(nitpicky) makes every cross-reference into toolreg resolve. MyST reports a Markdown link
to a page or a heading anchor that does not exist (`[..](page.md#anchor)`, `[..](#anchor)`)
as a warning, so those fail the build too; then the built HTML is read back and every
`href`/`src` inside the site is checked to name a file that exists and, with a `#fragment`,
an element id in it. Sphinx 9 needs Python 3.11+, so the `dev` extra installs the `docs`
requirements from 3.11 on; on 3.10 this module is skipped, anywhere else a missing Sphinx
is a failure.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

if sys.version_info < (3, 11):  # pragma: no cover - Sphinx 9 is not installable there
    pytest.skip("the docs toolchain (Sphinx 9) needs Python 3.11+", allow_module_level=True)

import tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BUILD = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-b", "html"]
SERVE = "python -m sphinx_autobuild docs docs/_build/html"


class _Links(HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key in ("id", "name"):
                self.ids.add(value)
            elif key == "href" or (key == "src" and tag in ("img", "script")):
                self.links.append(value)


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(site: Path) -> list[str]:
    """Every link from a page of `site` to a file or an anchor of `site` that is not there."""
    pages = {p.resolve(): _parse(p) for p in site.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue  # outside the site
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            name = f"{page.relative_to(site.resolve())}: {link}"
            if not target.exists():
                broken.append(f"{name} (no such file)")
            elif parts.fragment and target.suffix == ".html" and target not in pages:
                broken.append(f"{name} (outside the site)")
            elif parts.fragment and unquote(parts.fragment) not in pages.get(target, _Links()).ids:
                broken.append(f"{name} (no such anchor)")
    return broken


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors_and_every_link_resolves(tmp_path: Path) -> None:
    done = subprocess.run(
        [*BUILD, str(DOCS), str(tmp_path / "html")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stderr[-6000:]}"
    site = tmp_path / "html"
    assert (site / "index.html").is_file()
    pages = sorted(p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md"))
    missing = [str(p) for p in pages if "_build" not in p.parts and not (site / p).is_file()]
    assert not missing, f"pages that were not built: {missing}"
    assert broken_links(site) == []
    assert _signatures_missing_parameters(site / "reference" / "toolreg.html") == []
    assert raw_roles(site) == []
    assert code_blocks_cut_off(site) == []


# a reST role as a reader would see it on a page: ":meth:" before the name, or the whole
# role as text (a docstring is Markdown: MyST does not read `:meth:`x``)
_RAW_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const|ref|doc):\s*\S")


def raw_roles(site: Path) -> list[str]:
    """Every reST role a built page shows as text, as `page: ...text around it...`."""
    found = []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        body = html[html.find("<body") :]
        text = unescape(
            re.sub(r"<[^>]*>", "", re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.S))
        )
        for match in _RAW_ROLE.finditer(text):
            around = " ".join(text[max(0, match.start() - 30) : match.end() + 30].split())
            found.append(f"{page.relative_to(site)}: {around}")
    return found


def test_the_raw_role_check_finds_a_role_shown_as_text(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        "<body><p>Close the clients made by :meth:<code>client</code>.</p>"
        "<p>A <code>ScriptedServer</code> and a time: 10:30.</p></body>",
        encoding="utf-8",
    )
    [found] = raw_roles(tmp_path)  # the role, not the time
    assert found.startswith("a.html: Close the clients made by :meth:client.")


def code_blocks_cut_off(site: Path) -> list[str]:
    """Pages whose code blocks a 1280 px window cuts off: furo's text column holds about 82
    columns and hides the rest of a line behind a scroll bar; docs/_static/toolreg.css widens
    the column where the window has room and wraps what still does not fit."""
    css = site / "_static" / "toolreg.css"
    if not css.is_file():
        return ["_static/toolreg.css was not copied into the site"]
    rules = re.sub(
        r"\s+", " ", re.sub(r"/\*.*?\*/", "", css.read_text(encoding="utf-8"), flags=re.S)
    )
    problems = []
    if not re.search(r"\.highlight pre \{[^}]*white-space: pre-wrap", rules):
        problems.append("toolreg.css: code lines do not wrap")
    if not re.search(r"\.content \{[^}]*max-width: (5[6-9]|6\d)em", rules):
        problems.append("toolreg.css: the text column does not grow to 100 columns of code")
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        if "<pre" in html and not re.search(r'href="(\.\./)*_static/toolreg\.css', html):
            problems.append(f"{page.relative_to(site)}: has code but no toolreg.css")
    return problems


def test_docstrings_with_rest_roles_render_their_names_as_code() -> None:
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from toolreg_docs import rest_roles_as_markdown
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    line = "made by :meth:`client`, see :class:`~toolreg.testing.ScriptedServer` and :py:func:`f`"
    assert rest_roles_as_markdown(line) == "made by `client`, see `ScriptedServer` and `f`"


def _signatures_missing_parameters(page: Path) -> list[str]:
    """`toolreg.dispatch_tool` and the other verbs are methods of the default registry:
    the reference once showed them without their first parameter."""
    import inspect

    import toolreg

    text = page.read_text(encoding="utf-8")
    missing = []
    for name in toolreg.__all__:
        obj = getattr(toolreg, name)
        if not inspect.isroutine(obj):
            continue
        start = text.find(f'id="toolreg.{name}"')
        if start < 0:
            missing.append(f"toolreg.{name}: not on the page")
            continue
        shown = re.sub(r"<[^>]*>", "", text[start : text.find("</dt>", start)])
        for parameter in inspect.signature(obj).parameters:
            if not re.search(rf"\b{parameter}\b", shown):
                missing.append(f"toolreg.{name}: {parameter}")
    return missing


def test_the_link_check_finds_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<h1 id="top">A</h1><a href="b.html#there">ok</a><a href="#top">ok</a>'
        '<a href="b.html#nowhere">x</a><a href="c.html">x</a><a href="#gone">x</a>'
        '<a href="https://example.com/c.html">outside</a>',
        encoding="utf-8",
    )
    (tmp_path / "b.html").write_text('<p id="there">B</p>', encoding="utf-8")
    assert broken_links(tmp_path) == [
        "a.html: b.html#nowhere (no such anchor)",
        "a.html: c.html (no such file)",
        "a.html: #gone (no such anchor)",
    ]


def _bash_lines(page: Path) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    return [
        line.strip()
        for t in tokens
        if t.type == "fence" and t.info.strip() == "bash"
        for line in t.content.splitlines()
    ]


def test_ci_builds_the_site_the_way_contributing_documents_it() -> None:
    # the one-off build command of docs/contributing.md is the one this module runs
    text = (DOCS / "contributing.md").read_text(encoding="utf-8")
    assert "python -m sphinx -W --keep-going -n -b html docs docs/_build/html" in text
    assert BUILD[1:] == ["-m", "sphinx", "-W", "--keep-going", "-n", "-b", "html"]


def test_the_documented_command_builds_and_serves_the_site_locally() -> None:
    # docs/contributing.md: `pip install -e '.[docs]'`, then one command
    lines = _bash_lines(DOCS / "contributing.md")
    assert "pip install -e '.[docs]'" in lines
    assert SERVE in lines
    # the docs extra installs what the command runs, and the command exists
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    docs_extra = " ".join(project["optional-dependencies"]["docs"])
    for distribution in ("sphinx", "myst-parser", "furo", "sphinx-autobuild"):
        assert re.search(rf"(^|\s){re.escape(distribution)}\b", docs_extra), distribution
    module = SERVE.split()[2]
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--port" in done.stdout  # it serves


SPHINX_TOOLCHAIN = ("sphinx", "myst-parser", "furo", "sphinx-autobuild")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]


def _own_extras(requirements: list[str]) -> list[str]:
    """The extras of toolreg itself that `requirements` name (`toolreg[mcp,agents]`)."""
    own = [r for r in requirements if _name(r) == "toolreg"]
    return [e.strip() for r in own for e in r[r.index("[") + 1 : r.index("]")].split(",")]


def test_the_docs_extra_brings_what_the_reference_imports() -> None:
    # autodoc imports every module the reference documents: `pip install -e '.[docs]'` alone
    # must bring the SDKs they import (toolreg.mcp: mcp; toolreg.adapters.X: the framework),
    # through toolreg's own extras. .ci/run builds and serves the site in such a venv.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    brought = _own_extras(extras["docs"])
    conf = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    modules = next(
        ast.literal_eval(node.value)
        for node in conf.body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") == "toolreg_api_modules" for t in node.targets)
    )
    for module in modules:
        parts = module.split(".")
        if parts[1:2] == ["mcp"]:
            needed = "mcp"
        elif parts[1:2] == ["adapters"] and parts[2] != "base":
            needed = parts[2].replace("_", "-")
        else:
            continue
        assert needed in extras, f"{module}: no extra {needed!r}"
        assert needed in brought, f"the docs extra does not bring toolreg[{needed}] ({module})"


def test_the_dev_extra_brings_the_docs_toolchain_on_python_3_11_and_later() -> None:
    # `.ci/run` tests with `.[dev]` only: the site's build above must have what it needs
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    dev = {_name(r): r for r in extras["dev"]}
    for requirement in extras["docs"]:
        name = _name(requirement)
        if name == "toolreg":  # toolreg's own extras: the dev extra has what they bring
            for extra in _own_extras([requirement]):
                for needed in extras[extra]:
                    assert _name(needed) in dev, f"the dev extra lacks {needed} (toolreg[{extra}])"
            continue
        assert name in SPHINX_TOOLCHAIN, requirement
        assert dev.get(name) == f"{requirement}; python_version >= '3.11'", dev.get(name)
