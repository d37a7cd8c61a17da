"""Sphinx directives that generate toolreg's reference from the code itself.

- ``toolreg-api MODULE``: every name in ``MODULE.__all__``, documented by autodoc. A name
  is documented in full on the page of its *home* module, the first module of the
  ``toolreg_api_modules`` setting whose ``__all__`` holds it; elsewhere it is a link there.
  A public name without a docstring is a warning (an error under ``-W``).
- ``toolreg-cli``: the ``toolreg`` command, walked from ``toolreg.cli.main.build_parser()``.
- ``toolreg-options OBJECT``: a table of options read from OBJECT, a dataclass (its fields,
  described by their attribute docstrings) or a callable (its keyword parameters,
  described by its docstring's parameter section); ``:only: MODULE.NAME`` keeps the names
  in that collection.

Nothing here lists a name by hand: a new public name, option or command appears by itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
import typing
from collections.abc import Iterable, Iterator
from typing import Any

import docstring_parser
import toolreg_docstrings
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import inspect as sphinx_inspect
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def _resolve(path: str) -> Any:
    """`package.module.Name` -> the object (the longest importable module prefix)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ValueError(f"cannot import {path!r}")


def _attribute_docs(module_name: str) -> dict[tuple[str, str], list[str]]:
    try:
        analyzer = ModuleAnalyzer.for_module(module_name)
        analyzer.analyze()
    except Exception:  # a module without source (a C extension, a namespace)
        return {}
    return dict(analyzer.attr_docs)


# What a public name's docstring is, shared with tests/docs/test_docstrings.py.
_public_names = toolreg_docstrings.public_names
_kind = toolreg_docstrings.kind
_docstring = toolreg_docstrings.docstring


class ApiDirective(SphinxDirective):
    """``toolreg-api MODULE``: autodoc for every name in MODULE.__all__."""

    required_arguments = 1
    has_content = False

    def _home(self, name: str, obj: Any) -> str | None:
        for module_name in self.config.toolreg_api_modules:
            module = importlib.import_module(module_name)
            if name in getattr(module, "__all__", ()) and getattr(module, name, None) is obj:
                return str(module_name)
        return None

    def run(self) -> list[nodes.Node]:
        module_name = self.arguments[0]
        if module_name not in self.config.toolreg_api_modules:
            raise self.error(f"{module_name} is missing from toolreg_api_modules in conf.py")
        module = importlib.import_module(module_name)
        lines: list[str] = [f".. py:module:: {module_name}", "   :no-index:", ""]
        elsewhere: list[str] = []
        for name in _public_names(module_name):
            obj = getattr(module, name)
            home = self._home(name, obj) or module_name
            kind = _kind(obj)
            role = {"exception": "exc", "function": "func", "module": "mod"}.get(kind, kind)
            role = "data" if role == "data" else role
            if home != module_name:
                elsewhere.append(f"* :py:{role}:`{module_name}.{name} <{home}.{name}>`")
                continue
            undocumented = not _docstring(module_name, name, obj).strip()
            known_gap = f"{module_name}.{name}" in self.config.toolreg_api_undocumented
            if undocumented and not known_gap and not name.startswith("__"):
                logger.warning(
                    "%s.%s is public (in __all__) but has no docstring",
                    module_name,
                    name,
                    location=self.get_location(),
                )
            if known_gap and not undocumented:
                logger.warning(
                    "%s.%s has a docstring now: remove it from toolreg_api_undocumented",
                    module_name,
                    name,
                    location=self.get_location(),
                )
            lines += self._autodoc(module_name, name, kind)
        if elsewhere:
            lines += [
                ".. rubric:: Also exported here, documented with their home module",
                "",
                *elsewhere,
                "",
            ]
        return self.parse_text_to_nodes("\n".join(lines))

    @staticmethod
    def _autodoc(module_name: str, name: str, kind: str) -> list[str]:
        full = f"{module_name}.{name}"
        if kind == "data":
            # autodoc finds a value's `#:` docs only in the module it documents; the shared
            # lookup follows a re-export to the module that assigns the value
            doc = toolreg_docstrings.data_docstring(module_name, name).splitlines()
            body = [f"      {line}" if line else "" for line in doc]
            head = [f".. py:data:: {name}", f"   :module: {module_name}", ""]
            return [*head, "   .. toolreg-markdown::", "", *body, ""]
        if kind in ("class", "exception"):
            return [
                f".. auto{kind}:: {full}",
                "   :members:",
                "   :show-inheritance:",
                "",
            ]
        if kind == "function":
            return [f".. autofunction:: {full}", ""]
        if kind == "module":
            return [f".. py:data:: {full}", "", f"   The module :py:mod:`{full}`.", ""]
        raise ValueError(f"{full}: no directive for a {kind}")


class ErrorTreeDirective(SphinxDirective):
    """``toolreg-error-tree``: the exception hierarchy of ``toolreg.errors.__all__``."""

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module("toolreg.errors")
        classes = [getattr(module, n) for n in _public_names("toolreg.errors")]
        classes = [c for c in classes if inspect.isclass(c)]
        known = set(classes)

        def children(parent: type) -> list[type]:
            return [c for c in classes if parent in c.__bases__]

        def lines(cls: type, depth: int) -> Iterator[str]:
            others = [b.__name__ for b in cls.__bases__ if b not in known and b is not Exception]
            also = f" (also {', '.join(others)})" if others else ""
            yield f"{'  ' * depth}* :py:exc:`~toolreg.errors.{cls.__name__}`{also}"
            yield ""
            for child in children(cls):
                yield from lines(child, depth + 1)

        roots = [c for c in classes if not any(b in known for b in c.__bases__)]
        text = [line for root in roots for line in lines(root, 0)]
        return self.parse_text_to_nodes("\n".join(text))


def _action_row(action: argparse.Action) -> tuple[str, str]:
    if action.option_strings:
        flags = ", ".join(action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            flags += " " + (" ".join(metavar) if isinstance(metavar, tuple) else metavar)
    else:
        flags = action.metavar or action.dest
    help_text = (action.help or "").strip()
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        help_text += f" (one of: {', '.join(map(str, action.choices))})"
    return f"``{flags}``", _escape(help_text)


class CliDirective(SphinxDirective):
    """``toolreg-cli``: every command and option of the ``toolreg`` command."""

    def run(self) -> list[nodes.Node]:
        build_parser = _resolve(self.config.toolreg_cli_parser)
        parser: argparse.ArgumentParser = build_parser()
        lines = self._parser_lines(parser, "toolreg")
        return self.parse_text_to_nodes("\n".join(lines), allow_section_headings=True)

    def _parser_lines(self, parser: argparse.ArgumentParser, prog: str) -> list[str]:
        out = [".. code-block:: text", "", *(f"   {x}" for x in _usage(parser, prog)), ""]
        if parser.description:
            out += [_escape(parser.description), ""]
        rows = []
        subcommands: list[tuple[str, argparse.ArgumentParser]] = []
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                subcommands += list(action.choices.items())
                continue
            if action.help == argparse.SUPPRESS:
                continue
            rows.append(_action_row(action))
        if rows:
            out += _table(["Argument", "What it does"], rows)
        if parser.epilog:
            out += [_escape(parser.epilog), ""]
        for name, sub in subcommands:
            title = f"{prog} {name}"
            out += [f".. _cli-{'-'.join(title.split()[1:])}:", "", title, "-" * len(title), ""]
            out += self._parser_lines(sub, title)
        return out


def _usage(parser: argparse.ArgumentParser, prog: str) -> list[str]:
    parser.prog = prog
    return parser.format_usage().strip().splitlines()


def _escape(text: str) -> str:
    """Plain text, safe in reST: markup characters escaped."""
    for char in "\\*`|_":
        text = text.replace(char, "\\" + char)
    return text


def _cell(text: str) -> str:
    return " ".join(text.split()) or " "


def _table(header: list[str], rows: Iterable[tuple[str, ...]]) -> list[str]:
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [tuple(header), *rows]:
        first, *rest = row
        out.append(f"   * - {_cell(first)}")
        out += [f"     - {_cell(cell)}" for cell in rest]
    return [*out, ""]


def _literal(text: str) -> str:
    return f"``{text}``" if text else " "


def _type_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation).replace("typing.", "")


def _option_rows(obj: Any) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) for every option of `obj`."""
    if dataclasses.is_dataclass(obj):
        docs = _attribute_docs(obj.__module__)
        rows = []
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            if f.default is not dataclasses.MISSING:
                default = repr(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                default = repr(f.default_factory())
            else:
                default = ""
            doc = f.metadata.get("doc") or "\n".join(docs.get((obj.__qualname__, f.name), []))
            rows.append((f.name, _type_text(f.type), default, doc))
        return rows
    signature = inspect.signature(obj)
    described = {
        p.arg_name: p.description or "" for p in docstring_parser.parse(obj.__doc__ or "").params
    }
    rows = []
    for p in signature.parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        default = "" if p.default is inspect.Parameter.empty else repr(p.default)
        rows.append((p.name, _type_text(p.annotation), default, described.get(p.name, "")))
    return rows


class OptionsDirective(SphinxDirective):
    """``toolreg-options OBJECT``: the options table of a dataclass or a callable."""

    required_arguments = 1
    option_spec: typing.ClassVar[dict[str, Any]] = {
        "only": directives.unchanged,
        "require-docs": directives.flag,
    }

    def run(self) -> list[nodes.Node]:
        rows = _option_rows(_resolve(self.arguments[0]))
        if "only" in self.options:
            keep = set(_resolve(self.options["only"]))
            rows = [r for r in rows if r[0] in keep]
            missing = keep - {r[0] for r in rows}
            if missing:
                logger.warning(
                    "%s names options %s that %s does not have",
                    self.options["only"],
                    ", ".join(sorted(missing)),
                    self.arguments[0],
                    location=self.get_location(),
                )
        if not rows:
            raise self.error(f"{self.arguments[0]} has no options to list")
        if "require-docs" in self.options:
            for name, *_, doc in rows:
                if not doc.strip():
                    logger.warning(
                        "option %s of %s has no description",
                        name,
                        self.arguments[0],
                        location=self.get_location(),
                    )
        table = _table(
            ["Option", "Type", "Default", "What it does"],
            [(_literal(n), _literal(t), _literal(d), doc) for n, t, d, doc in rows],
        )
        return self.parse_text_to_nodes("\n".join(table))


# A reST role (`:meth:`close``, `:class:`~toolreg.X``) in a docstring: MyST reads it as the
# text ":meth:" before a code span, so the page would show the role. It is written as the
# Markdown the docstrings use for names instead: a code span (`~` keeps the last part).
_REST_ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const|any|ref|doc):`(~?)([^`]+)`"
)


def rest_roles_as_markdown(line: str) -> str:
    """`line` with every reST role written as a Markdown code span."""
    return _REST_ROLE.sub(
        lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`",
        line,
    )


class MarkdownDirective(SphinxDirective):
    """``toolreg-markdown``: its content parsed as MyST Markdown (toolreg's docstrings are)."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        from myst_parser.parsers.sphinx_ import MystParser
        from sphinx.util.docutils import new_document

        source, _line = self.get_source_info()
        document = new_document(source, self.state.document.settings)
        document.reporter = self.state.document.reporter
        text = "\n".join(rest_roles_as_markdown(line) for line in self.content)
        MystParser().parse(text, document)
        return list(document.children)


_LISTED = {"Args", "Arguments", "Parameters", "Raises", "Attributes"}
_SECTIONS = {*_LISTED, "Returns", "Yields", "Example", "Examples", "Note"}


def _sections_as_markdown(lines: list[str]) -> list[str]:
    """Google-style sections (`Args:`, `Raises:`, `Returns:`, `Example:`), which
    docstring_parser also reads, as Markdown: a bold title, then a list of `name`: text
    entries, a paragraph, or (an example) a Python block."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        title = lines[i].strip()[:-1] if lines[i].strip().endswith(":") else ""
        if lines[i][:1].isspace() or title not in _SECTIONS:
            out.append(lines[i])
            i += 1
            continue
        body: list[str] = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        indent = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        body = [b[indent:] for b in body]
        out += [f"**{title}**", ""]
        if title in _LISTED:
            for entry in body:
                if not entry.strip():
                    continue
                if entry[:1].isspace():
                    out[-1] += " " + entry.strip()
                else:
                    key, _, text = entry.partition(":")
                    out.append(f"- `{key.strip()}`: {text.strip()}")
        elif title.startswith("Example"):
            out += ["```python", *body, "```"]
        else:
            out += body
        out.append("")
    return out


def _docstring_as_markdown(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """autodoc hands docstrings over as reST; toolreg writes them in Markdown."""
    if not any(line.strip() for line in lines):
        return
    markdown = _sections_as_markdown(lines)
    wrapped = [".. toolreg-markdown::", "", *(f"   {line}" if line else "" for line in markdown)]
    lines[:] = [*wrapped, ""]


def _public_targets(app: Sphinx) -> set[str]:
    """Every `module.name` the reference documents, and the members of those classes."""
    found: set[str] = set()
    for module_name in app.config.toolreg_api_modules:
        module = importlib.import_module(module_name)
        for name in _public_names(module_name):
            found.add(f"{module_name}.{name}")
            obj = getattr(module, name)
            home = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
            found.add(home)
    return found


def _unlinked_private_names(
    app: Sphinx, env: Any, node: nodes.Element, contnode: nodes.Node
) -> nodes.Node | None:
    """A hint naming a toolreg name that is not public (a TypeVar, a private helper class)
    stays plain text: only public names have pages. A public one that does not resolve is
    still a warning."""
    target = str(node.get("reftarget", ""))
    if node.get("refdomain") != "py" or not target.startswith("toolreg."):
        return None
    cached = getattr(app, "_toolreg_public", None)
    if cached is None:
        cached = _public_targets(app)
        app._toolreg_public = cached  # type: ignore[attr-defined]
    return None if target in cached else contnode


def _bound_method_signature(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str, str | None] | None:
    """A module-level name bound to a method (`toolreg.dispatch_tool` is
    `default_registry.dispatch_tool`) lost its first parameter: documenting the method on
    its class (`autodoc_preserve_defaults`) stores the signature without `self` on the
    function, and the bound method then drops one more. Show the stored one as it is."""
    if what != "function" or not inspect.ismethod(obj):
        return None
    stored = obj.__func__.__dict__.get("__signature__")
    if stored is None:
        return None  # nothing stored: autodoc's own signature is right
    args = sphinx_inspect.stringify_signature(
        stored, show_return_annotation=False, unqualified_typehints=True
    )
    return args, return_annotation


def _public_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    """`Bases:` names public classes only (a private base is an implementation detail)."""
    bases[:] = [b for b in bases if not b.__name__.startswith("_")]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("toolreg_api_modules", [], "env", list)
    app.add_config_value("toolreg_api_undocumented", [], "env", list)
    app.add_config_value("toolreg_cli_parser", "toolreg.cli.main.build_parser", "env", str)
    app.add_directive("toolreg-api", ApiDirective)
    app.add_directive("toolreg-error-tree", ErrorTreeDirective)
    app.add_directive("toolreg-cli", CliDirective)
    app.add_directive("toolreg-options", OptionsDirective)
    app.add_directive("toolreg-markdown", MarkdownDirective)
    app.connect("autodoc-process-docstring", _docstring_as_markdown)
    app.connect("missing-reference", _unlinked_private_names)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-process-signature", _bound_method_signature)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
