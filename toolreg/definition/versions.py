"""Tool versions: what a version may be written as, and which of two is the later.

A version is one of:

- numbers with dots, optionally after a `v`: `1`, `2.1`, `v3`, `2025.1`; compared number by
  number, trailing zeros aside (`1` and `1.0` and `v1` are the same version, `1.10` is later
  than `1.9`);
- a date, `YYYY-MM-DD` (`2025-01-31`); compared as dates.

Any date is later than any version of numbers (a project that moves from `3` to dated
versions keeps its order). The latest version of a tool is its default: what `tools()` and
a call without a pin get. These are the versions FastMCP reads the same way (PEP 440 for the
numbers, text for the rest), so a FastMCP client and toolreg agree on which is the latest.
Anything else (`beta`, `2.0rc1`, `1-2`) is refused where it is given, so that which version
is the latest is never a guess.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_VERSION_CHARS", "VERSION_RULE", "VersionKey", "check_version", "version_key"]

MAX_VERSION_CHARS = 64
VERSION_RULE = "numbers with dots, optionally after a v (1, 2.1, v3), or a date (2025-01-31)"
"""The rule in words, for messages."""

_NUMBERS = re.compile(r"[vV]?(\d{1,9}(?:\.\d{1,9}){0,7})")
_DATE = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")

VersionKey = tuple[int, tuple[int, ...], str]
"""What versions are ordered by: (0, numbers, "") for numbers, (1, (), date) for dates."""


def version_key(version: str) -> VersionKey | None:
    """The key `version` sorts by (equal keys: the same version), or None when it is not a
    version by the module's rule."""
    if len(version) > MAX_VERSION_CHARS:
        return None
    found = _NUMBERS.fullmatch(version)
    if found is not None:
        numbers = [int(part) for part in found[1].split(".")]
        while len(numbers) > 1 and numbers[-1] == 0:
            numbers.pop()
        return (0, tuple(numbers), "")
    if _DATE.fullmatch(version):
        return (1, (), version)
    return None


def check_version(value: Any) -> str | None:
    """`version=` as given: None, a version string, or a whole number >= 0 (made its text);
    None when it is not one (the caller says why, naming where it was given)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        value = str(value)
    if not isinstance(value, str) or version_key(value) is None:
        return None
    return value
