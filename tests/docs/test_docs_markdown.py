"""The pages render as they are written: a numbered step is an item of its list, not text
run into the step before it (CommonMark lets only `1.` start a list inside a paragraph, so
`6. **Confirm**` on a line of its own, or after a sentence, reads as part of step 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)

# "5. **Inject** the context. 6. **Confirm** ...": a step's number inside running text
_STEP = re.compile(r"(?:^|[.;:!?]\s+)(\d{1,2})\.\s+(?:\*\*|`)")


def swallowed_steps(text: str) -> list[str]:
    """Numbered steps that a CommonMark renderer puts inside another paragraph."""
    found = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "inline":
            continue
        for number, line in enumerate(token.content.splitlines()):
            for match in _STEP.finditer(line):
                if number == 0 and match.start() == 0:
                    continue  # a paragraph that begins with a number: "1. **x**" as text
                found.append(line.strip())
    return found


def test_the_check_finds_steps_run_together() -> None:
    page = (
        "1. **Whitelist** the name.\n"
        "5. **Inject** the context. 6. **Confirm** it.\n"
        "   7. **Call** it.\n"
        "8. **Render** the result.\n"
    )
    assert swallowed_steps(page) == [
        "**Inject** the context. 6. **Confirm** it.",
        "7. **Call** it.",
    ]
    assert swallowed_steps("1. **One**\n2. **Two**: see 3. below\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_numbered_steps_are_list_items(page: Path) -> None:
    assert swallowed_steps(page.read_text(encoding="utf-8")) == []
