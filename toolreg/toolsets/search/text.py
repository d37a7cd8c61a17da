"""Text to search terms, in any language.

Every text is NFKC-normalised (full-width letters and digits become ASCII, half-width
katakana full-width) and casefolded. Then:

- a run of letters and digits in a script with spaces between words is one word: English
  plurals and `-ing` / `-ed` endings are stripped lightly (`files` -> `file`, `listing` ->
  `list`), a few function words are dropped;
- a run of Han, Hiragana, Katakana or Hangul characters is cut into overlapping character
  pairs (`天气预报` -> `天气 气预 预报`) and its Han and Katakana characters are terms too:
  Chinese and Japanese write no spaces, so a whole run is almost never shared by a question
  and a description, while its pairs are;
- an identifier is split first on `_`, `.`, `-`, `/` and camelCase (`getWeatherNow` ->
  `get weather now`, `HTTPServer` -> `http server`).
"""

from __future__ import annotations

import itertools
import re
import unicodedata

__all__ = ["identifier_terms", "normalize", "terms"]

MAX_TEXT = 20_000  # characters of one text that are read (a description may be huge)

# A word character run, or a single character of a script written without spaces.
_CJK = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3100-\u312f"  # Bopomofo
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_RUN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
_SINGLE = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30a0-\u30ff\U00020000-\U0003134f]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_.\-/:\s]+")

_FUNCTION_WORDS = """a an and are as at be by can do does for from has have how i if in into is
it its me my of on or our please should so that the their them then there these this to use
used was we what when where which while who will with would you your"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split())


def normalize(text: str) -> str:
    """NFKC, then casefold: the form every term is made from.

    Args:
        text: any text (a query, a description, a name).
    """
    return unicodedata.normalize("NFKC", text[:MAX_TEXT]).casefold()


def stem(word: str) -> str:
    """A light English stemmer: plurals only (`files` -> `file`, `boxes` -> `box`,
    `repositories` -> `repository`); never on a word of three letters or fewer, or with a
    digit. Stripping `-ing` / `-ed` too measured worse (`finding` is not `find`)."""
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The search terms of a text (see the module docstring); in order, with repeats."""
    out: list[str] = []
    for cjk, word in _RUN.findall(normalize(text)):
        if word:
            if word not in STOPWORDS:
                out.append(stem(word))
            continue
        if len(cjk) == 1:
            out.append(cjk)
            continue
        out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
        out.extend(_SINGLE.findall(cjk))
    return out


def identifier_terms(name: str) -> list[str]:
    """The terms of an identifier: split on `_ . - / :` and camelCase, then as `terms`;
    two neighbours split by case are a term together too (`GitHub` -> `git hub github`).

    Args:
        name: a tool or parameter name, e.g. `getGitHubIssue` or `train_tickets`.
    """
    out: list[str] = []
    for segment in _SEPARATORS.split(unicodedata.normalize("NFKC", name[:MAX_TEXT])):
        parts = _CAMEL.split(segment)
        for part in parts:
            out += terms(part)
        for left, right in itertools.pairwise(parts):
            out += terms(left + right)
    return out
