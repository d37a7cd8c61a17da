"""Tool-name rules of each provider, in one place.

- OpenAI chat completions, legacy functions and Responses: `^[a-zA-Z0-9_-]{1,64}$`
  (API reference, `function.name`).
- Anthropic: `^[a-zA-Z0-9_-]{1,64}$` (Messages API, `tools[].name`).
- Gemini: starts with a letter or underscore; letters, digits, `_ . : -`; at most 64
  characters (`FunctionDeclaration.name`).
- MCP: 1-128 characters of `A-Z a-z 0-9 _ - .` (tool names, specification 2025-06-18).
- ChatGLM3: any non-empty name without white space; toolreg caps it at 128 characters.

A name is accepted at registration when at least one provider accepts it; each export checks
its own provider's rule.
"""

from __future__ import annotations

import re

__all__ = ["NAME_RULES", "NameRule", "accepted_somewhere", "check_name"]

NameRule = tuple[re.Pattern[str], str]
"""A provider's rule: the pattern a whole name must match, and the rule in words."""

NAME_RULES: dict[str, NameRule] = {
    "openai": (re.compile(r"[a-zA-Z0-9_-]{1,64}"), "1-64 of a-z A-Z 0-9 _ -"),
    "responses": (re.compile(r"[a-zA-Z0-9_-]{1,64}"), "1-64 of a-z A-Z 0-9 _ -"),
    "functions": (re.compile(r"[a-zA-Z0-9_-]{1,64}"), "1-64 of a-z A-Z 0-9 _ -"),
    "anthropic": (re.compile(r"[a-zA-Z0-9_-]{1,64}"), "1-64 of a-z A-Z 0-9 _ -"),
    "gemini": (
        re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}"),
        "a letter or _ first, then a-z A-Z 0-9 _ . : -, at most 64",
    ),
    "mcp": (re.compile(r"[a-zA-Z0-9_.-]{1,128}"), "1-128 of a-z A-Z 0-9 _ - ."),
    "chatglm3": (re.compile(r"[^\s]{1,128}"), "1-128 characters, no white space"),
}


def accepted_somewhere(name: str) -> bool:
    """Whether any provider accepts `name` (stops at the first that does)."""
    return any(rule.fullmatch(name) for rule, _ in NAME_RULES.values())


def check_name(name: str, rule: NameRule) -> str | None:
    """None when `rule` accepts `name`; otherwise the rule in words, for an error message."""
    pattern, text = rule
    return None if pattern.fullmatch(name) else text
