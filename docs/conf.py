"""Sphinx configuration of toolreg's documentation (MyST Markdown pages, the furo theme).

Build: `python -m sphinx -W --keep-going -n -b html docs docs/_build/html`.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "toolreg"
author = "toolreg developers"
copyright = "toolreg developers"
release = version = __import__("toolreg").__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "toolreg_docs",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "examples", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# MyST: `#`-headings up to level 3 get anchors that `[text](page.md#anchor)` links check.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# The reference, generated from the code (docs/_ext/toolreg_docs.py). A name is documented
# on the page of the first module below that exports it; the others link there.
toolreg_api_modules = [
    "toolreg.errors",
    "toolreg",
    "toolreg.idempotency",
    "toolreg.content",
    "toolreg.asking",
    "toolreg.conversation",
    "toolreg.testing",
    "toolreg.formats",
    "toolreg.formats.base",
    "toolreg.formats.openai",
    "toolreg.formats.responses",
    "toolreg.formats.anthropic",
    "toolreg.formats.gemini",
    "toolreg.formats.mcp",
    "toolreg.formats.chatglm3",
    "toolreg.formats.functions",
    "toolreg.stores",
    "toolreg.durable",
    "toolreg.durable.dbos",
    "toolreg.testing.crash",
    "toolreg.toolsets.search",
    "toolreg.toolsets",
    "toolreg.toolsets.lock",
    "toolreg.mcp",
    "toolreg.sources",
    "toolreg.compat.chatglm3",
    "toolreg.adapters.pydantic_ai",
    "toolreg.adapters.agents",
    "toolreg.adapters.langchain",
    "toolreg.adapters.base",
]
# Every public name has a docstring (tests/docs/test_docstrings.py): the build fails on one
# without (a list here would name known gaps; there are none).
toolreg_api_undocumented: list[str] = []
toolreg_cli_parser = "toolreg.cli.main.build_parser"

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = False
# Docstrings are Markdown: toolreg_docs parses them with MyST. In reST, `name` is code too.
default_role = "code"

# Every cross-reference into toolreg must resolve (-n); names of other libraries, of the
# standard library and of toolreg's private modules are not documented here.
nitpicky = True
# Several format modules each have a ToolDefinition: a short name in a signature may match
# more than one; it links to one of them.
suppress_warnings = ["ref.python"]
nitpick_ignore_regex = [
    (r"py:.*", r"(?!toolreg\b).*"),
    (r"py:.*", r"toolreg\.(definition|validation|dispatch|jsonvalues|observe|tool|result)\..*"),
]

html_theme = "furo"
html_title = f"toolreg {release}"
# docs/_static/toolreg.css: code blocks fit (a wider column where the window has room) or
# wrap, never cut off (tests/docs/test_docs_site.py checks that every page links it)
html_static_path = ["_static"]
html_css_files = ["toolreg.css"]
