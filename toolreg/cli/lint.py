"""`toolreg lint`: what in a tool definition a model would trip over.

Checks (code, severity):

- `no-description` (error): the tool has no description; the model must guess its purpose.
- `no-param-description` (warning): a parameter has no description.
- `no-usage-hint` (warning): the description is short (under 40 characters) or never says
  when to use the tool; toolreg looks for the words "use", "when", "call" (and their forms).
- `overlap` (warning): two tools' descriptions share most of their words (Jaccard
  similarity of their word sets above 0.6), so a model must guess between them.
- `invalid-name` (warning): a provider rejects the tool name (the error names which).
- `not-strict` (info): the parameters cannot be exported with strict=True, and why.
- `unconfirmed-destructive` (warning): the name reads destructive (delete, remove, cancel,
  drop, ...) but the tool is not marked `destructive=True`, so it runs without confirmation.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

from ..definition.names import NAME_RULES
from ..definition.strict import strict_problem
from ..registry import ToolRegistry
from ..tool import Tool

__all__ = ["Finding", "lint_registry"]

_USAGE_WORDS = re.compile(r"\b(use|used|uses|using|when|whenever|call|calls|called)\b", re.I)
_DESTRUCTIVE = re.compile(r"^(delete|remove|cancel|drop|destroy|erase|purge|wipe|kill|refund)")
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "this",
        "that",
        "from",
        "use",
        "when",
        "user",
        "users",
        "your",
        "you",
        "are",
        "can",
        "get",
        "set",
        "it",
        "its",
        "into",
        "about",
        "asks",
        "ask",
        "call",
        "tool",
        "tools",
    ]
)
MIN_DESCRIPTION = 40
OVERLAP = 0.6


@dataclass(frozen=True, slots=True)
class Finding:
    tool: str
    code: str
    severity: str  # "error", "warning" or "info"
    message: str
    parameter: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = self.tool + (f".{self.parameter}" if self.parameter else "")
        return f"{where}: {self.severity} [{self.code}] {self.message}"


def lint_registry(registry: ToolRegistry) -> list[Finding]:
    """Every finding for every tool, tool by tool, then the overlaps."""
    tools = registry.tools()
    findings = [f for tool in tools for f in _lint_tool(tool)]
    findings.extend(_overlaps(tools))
    return findings


def _lint_tool(tool: Tool) -> list[Finding]:
    out: list[Finding] = []
    text = tool.description.strip()
    if not text:
        out.append(Finding(tool.name, "no-description", "error", _NO_DESCRIPTION))
    elif len(text) < MIN_DESCRIPTION or not _USAGE_WORDS.search(text):
        out.append(Finding(tool.name, "no-usage-hint", "warning", _NO_USAGE))
    for name, schema in tool.parameters.get("properties", {}).items():
        if not schema.get("description"):
            message = "describe it (Annotated[T, 'description'] or the docstring's Args)"
            out.append(Finding(tool.name, "no-param-description", "warning", message, name))
    bad = [fmt for fmt, (rule, _) in NAME_RULES.items() if not rule.fullmatch(tool.name)]
    if bad:
        out.append(
            Finding(tool.name, "invalid-name", "warning", f"not accepted by: {', '.join(bad)}")
        )
    problem = strict_problem(tool.parameters)
    if problem:
        out.append(Finding(tool.name, "not-strict", "info", problem))
    if _DESTRUCTIVE.match(tool.name) and not tool.needs_confirmation:
        message = "the name reads destructive; mark it destructive=True to require confirmation"
        out.append(Finding(tool.name, "unconfirmed-destructive", "warning", message))
    return out


def _words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP}


def _overlaps(tools: list[Tool]) -> list[Finding]:
    out = []
    words = {t.name: _words(t.description) for t in tools}
    for a, b in combinations(tools, 2):
        wa, wb = words[a.name], words[b.name]
        if wa and wb:
            similarity = len(wa & wb) / len(wa | wb)
            if similarity > OVERLAP:
                message = (
                    f"its description overlaps {similarity:.0%} with '{b.name}'; "
                    "say what makes each tool different"
                )
                out.append(Finding(a.name, "overlap", "warning", message))
    return out


_NO_DESCRIPTION = "add a docstring or description= saying what it does and when to use it"
_NO_USAGE = (
    f"say when to use it (at least {MIN_DESCRIPTION} characters, e.g. 'Use it when the user "
    "asks ...')"
)
