"""Messages put "a" or "an" before a word they fill in as it is read aloud ("an integer or
number type", "not an AsyncStateStore"), never "a integer": every such article in toolreg's
messages comes from `with_article`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolreg.errors import with_article

PACKAGE = Path(__file__).resolve().parent.parent / "toolreg"


@pytest.mark.parametrize(
    ("word", "written"),
    [
        ("integer", "an integer"),
        ("integer or number", "an integer or number"),
        ("object", "an object"),
        ("array", "an array"),
        ("int", "an int"),
        ("Enum", "an Enum"),
        ("AsyncStateStore", "an AsyncStateStore"),
        ("Anthropic", "an Anthropic"),
        ("string", "a string"),
        ("str", "a str"),
        ("StateStore", "a StateStore"),
        ("ToolRegistry", "a ToolRegistry"),
        ("union", "a union"),
        ("user", "a user"),
        ("one-off", "a one-off"),
        ("hour", "an hour"),
        ("UUID", "a UUID"),
        ("URLError", "a URLError"),
        ("HTTPError", "an HTTPError"),
        ("IPv4Address", "an IPv4Address"),
        ("MCP server", "an MCP server"),
        ("", "a "),
    ],
)
def test_the_article_follows_how_the_word_is_read(word: str, written: str) -> None:
    assert with_article(word) == written


# an f-string that writes "a {...}" or "an {...}": the article cannot know the word
FIXED_ARTICLE = re.compile(r"""\b[Aa]n? \{(?!with_article\()""")


def test_no_message_writes_a_fixed_article_before_a_filled_in_word() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            if FIXED_ARTICLE.search(code):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert found == [], "use with_article(...) for the word:\n" + "\n".join(found)
