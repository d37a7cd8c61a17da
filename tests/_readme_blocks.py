"""The README's code blocks as a CommonMark renderer sees them (tests/docs/test_readme.py
runs them; tests/cli/test_lint_injection.py lints them)."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOKENS = MarkdownIt("commonmark").parse(README)


def blocks(language: str) -> list[str]:
    """The README's code blocks in `language`, as a CommonMark renderer sees them."""
    return [t.content for t in TOKENS if t.type == "fence" and t.info.strip() == language]
