"""`toolreg lint`: what in a tool definition a model would trip over.

Checks (code, severity):

- `no-description` (error): the tool has no description; the model must guess its purpose.
- `no-param-description` (warning): a parameter has no description.
- `no-usage-hint` (warning): the description is short (under 40 characters, a Chinese or
  Japanese character counting as three) or never says when to use the tool; toolreg looks
  for the words "use", "when", "call" (and their forms), and 当…时, 用于, 使用, 调用, 如果,
  需要, 场合/場合, とき.
- `overlap` (warning): two tools' descriptions share most of their words (Jaccard
  similarity of their word sets above 0.6; Chinese and Japanese text is read as pairs of
  characters, since it has no spaces), so a model must guess between them.
- `indistinct` (warning): a search for the tool's own description (toolreg's search index,
  in any language) finds another tool first, or scores it at least 90% as high, so neither
  `tool_search=` nor a model's `search_tools` can tell the two apart.
- `ignored-metadata` (warning): `Annotated` metadata toolreg does not understand (a
  validator, an option of another library) was ignored: the model is not told about it and
  dispatch does not enforce it.
- `invalid-name` (warning): a provider rejects the tool name (the error names which).
- `not-strict` (info): the parameters cannot be exported with strict=True, and why.
- `unconfirmed-destructive` (warning): the name reads destructive (delete, remove, cancel,
  drop, ...) but the tool is not marked `destructive=True`, so it runs without confirmation.
- `instructions-to-model` (warning): the description, or a parameter's, reads as orders to
  the model rather than about the tool ("ignore previous instructions", "do not tell the
  user", a `<system>` tag, "IMPORTANT:"; see `toolreg.definition.injection`): a prompt
  injection, if the text came from someone else.
- `backtracking-pattern` (warning): a parameter's `pattern` (or `patternProperties` name)
  has nested quantifiers (`^(a+)+$`), on which Python's `re` takes time exponential in the
  text's length: whoever sends the arguments, a model or a client of `toolreg serve`, can
  make one call take minutes, holding the interpreter while it runs.
- `older-draft` (info): the parameters schema (`register_schema`, a mount, an OpenAPI
  document) used an older JSON Schema draft's keywords, which toolreg rewrote as 2020-12
  (`Tool.schema_changes`, `toolreg.validation.drafts`): what each change was.

With `--lock FILE` (a lock file, `toolreg.toolsets.lock`), every version of every tool is
also held to the definition the file records for it:

- `changed-without-version` (error): the tool's definition (what a model or a client
  reads: description, schemas, annotations) is not the one locked for its name and
  version; a model would get a changed tool under a name and version it knows. Register
  the new definition as a later `version=` (keep the old one while clients pin it), or,
  when nobody has used it yet, accept it with `--update`.
- `not-locked` (error): a tool or version the file does not hold yet (`--update` adds it).
- `gone-from-lock` (warning): the file holds a tool or version that is no longer there
  (a client pinned to it now fails; `--update` drops it).

`--update` writes the file from the tools as they are (and says what it changed): review
that diff, and commit the file with the code.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

from ..definition.injection import instructions_to_model, schema_descriptions
from ..definition.names import NAME_RULES
from ..definition.strict import strict_problem
from ..tool import Tool
from ..toolsets import Toolset
from ..toolsets.lock import Drift, drift
from ..toolsets.search import SearchIndex
from ..validation.untrusted import UntrustedSchemaError, check_patterns_for_re

__all__ = ["Finding", "lint_lock", "lint_registry"]

_USAGE_WORDS = re.compile(
    r"\b(use|used|uses|using|when|whenever|call|calls|called)\b"
    r"|[当在](?![前地然天时])[^。！？]{1,40}?时(?![间区刻代])|用于|使用|调用|如果|需要|场合|場合|とき",
    re.I,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_DESTRUCTIVE = re.compile(r"^(delete|remove|cancel|drop|destroy|erase|purge|wipe|kill|refund)")
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_CJK_WEIGHT = 3  # a Chinese or Japanese character says about as much as three Latin ones
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
CLOSE = 0.9  # `indistinct`: another tool scores at least this share of the tool's own score


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


def lint_registry(registry: Toolset) -> list[Finding]:
    """Every finding for every tool of a registry (or any toolset), tool by tool, then the
    overlaps."""
    tools = registry.tools()
    findings = [f for tool in tools for f in _lint_tool(tool)]
    findings.extend(_overlaps(tools))
    findings.extend(_indistinct(tools))
    return findings


def lint_lock(
    toolset: Toolset, pins: dict[str, dict[str, Any]], lock: str, update: str
) -> list[Finding]:
    """The findings of holding `toolset` (every version) to a lock file's entries (`pins`,
    read from the file `lock`); `update` is the command that rewrites the file, for the
    messages."""
    return [_drift_finding(found, lock, update) for found in drift(toolset, pins)]


def _drift_finding(found: Drift, lock: str, update: str) -> Finding:
    if found.kind == "changed":
        what = "; ".join(found.changes) or "its definition"
        message = (
            f"changed since {lock} without a new version ({what}): register the new "
            "definition as a later version=... (keep this one while clients use it), or, if "
            f"no model or client has used it yet, accept it: {update}"
        )
        return Finding(found.key, "changed-without-version", "error", message)
    if found.kind == "new":
        message = f"not in {lock}: add it with {update}, and commit the file"
        return Finding(found.key, "not-locked", "error", message)
    message = (
        f"in {lock} but no longer among the tools (a client pinned to it fails); {update} drops it"
    )
    return Finding(found.key, "gone-from-lock", "warning", message)


def _lint_tool(tool: Tool) -> list[Finding]:
    out: list[Finding] = []
    text = tool.description.strip()
    if not text:
        out.append(Finding(tool.name, "no-description", "error", _NO_DESCRIPTION))
    elif _weight(text) < MIN_DESCRIPTION or not _USAGE_WORDS.search(text):
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
    problem = strict_problem(tool.parameters, signature=bool(tool.params))  # not a mount's
    if problem:
        out.append(Finding(tool.name, "not-strict", "info", problem))
    for p in tool.params:
        if p.param.ignored:
            message = (
                f"ignored {', '.join(p.param.ignored)}: toolreg does not understand it, so the "
                "model is not told and dispatch does not enforce it; use Param/Field constraints"
            )
            out.append(Finding(tool.name, "ignored-metadata", "warning", message, p.name))
    out.extend(_instructions(tool))
    out.extend(_backtracking(tool))
    if tool.schema_changes:
        message = "older JSON Schema rewritten as 2020-12: " + "; ".join(tool.schema_changes)
        out.append(Finding(tool.name, "older-draft", "info", message))
    if _DESTRUCTIVE.match(tool.name) and not tool.needs_confirmation:
        message = "the name reads destructive; mark it destructive=True to require confirmation"
        out.append(Finding(tool.name, "unconfirmed-destructive", "warning", message))
    return out


def _backtracking(tool: Tool) -> list[Finding]:
    """Each parameter (or the whole object, for its `patternProperties`) with a pattern
    `re` could backtrack on for a long time."""
    schema = tool.parameters
    parts: list[tuple[str | None, Any]] = list(schema.get("properties", {}).items())
    rest = {k: v for k, v in schema.items() if k not in ("properties", "$defs", "definitions")}
    parts.append((None, rest))
    parts += [
        (None, sub) for key in ("$defs", "definitions") for sub in schema.get(key, {}).values()
    ]
    out = []
    for parameter, part in parts:
        try:
            # the author's own: any length, and only the surest finding (exponential time)
            check_patterns_for_re(part, max_length=None, exponential_only=True)
        except UntrustedSchemaError as exc:
            message = (
                f"{exc}: a model or an MCP client can make one call take minutes; write it "
                "without a repeat inside a repeat"
            )
            out.append(Finding(tool.name, "backtracking-pattern", "warning", message, parameter))
    return out


def _instructions(tool: Tool) -> list[Finding]:
    texts = [(None, tool.description), *schema_descriptions(tool.parameters)]
    out = []
    for parameter, text in texts:
        phrases = instructions_to_model(text)
        if phrases:
            message = (
                f"reads like instructions to the model ({', '.join(map(repr, phrases))}); "
                "say what the tool does and when to use it (from someone else, this is a "
                "prompt injection)"
            )
            out.append(Finding(tool.name, "instructions-to-model", "warning", message, parameter))
    return out


def _weight(text: str) -> int:
    cjk = sum(len(run) for run in _CJK.findall(text))
    return len(text) - cjk + cjk * _CJK_WEIGHT


def _words(text: str) -> set[str]:
    """Words of three letters or more; in Chinese and Japanese runs, pairs of characters."""
    words = {w for w in (m.lower() for m in _WORD.findall(_CJK.sub(" ", text))) if w not in _STOP}
    for run in _CJK.findall(text):
        words.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return words


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


def _indistinct(tools: list[Tool]) -> list[Finding]:
    """Tools whose own description does not find them clearly first."""
    if len(tools) < 2:
        return []
    index = SearchIndex()
    index.update(tools)
    out = []
    for tool in tools:
        if not tool.description.strip():
            continue  # no-description says it already
        scored = index.scores(tool.description)
        own = scored.get(tool.name, 0.0)
        rival = max(((s, n) for n, s in scored.items() if n != tool.name), default=None)
        if rival is not None and rival[0] >= CLOSE * own:
            found = "first" if rival[0] > own else "almost as well"
            message = (
                f"a search for its description finds '{rival[1]}' {found}; say what makes "
                "each tool different"
            )
            out.append(Finding(tool.name, "indistinct", "warning", message))
    return out


_NO_DESCRIPTION = "add a docstring or description= saying what it does and when to use it"
_NO_USAGE = (
    f"say when to use it (at least {MIN_DESCRIPTION} characters, e.g. 'Use it when the user "
    "asks ...')"
)
