"""Docstring text -> summary, parameter descriptions and return description.

Four styles are detected from their section markers; anything else is plain prose:

- Google: a header such as ``Args:``, ``Returns:`` or ``Raises:`` alone on its line and
  followed by an indented block;
- NumPy: a header such as ``Parameters`` underlined with ``---``;
- reST / Sphinx: fields such as ``:param x:``, ``:param str x:``, ``:type x:``, ``:returns:``;
- Epydoc: fields such as ``@param x:``, ``@type x:``, ``@return:``.

This is a small hand-written parser rather than docstring-parser: it runs on every
registration, is several times faster, never imports anything heavy, and cannot raise -- a
docstring it cannot make sense of is returned whole as the summary.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["EMPTY_DOC", "DocInfo", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class DocInfo:
    """What a docstring says about a function.

    `summary` is the prose before the first section (short plus long description, paragraphs
    separated by a blank line), `params` maps parameter names (without ``*``/``**``) to their
    descriptions with whitespace collapsed, `returns` describes the return value, and `style`
    is ``"google"``, ``"numpy"``, ``"rest"``, ``"epydoc"`` or ``"plain"``.
    """

    summary: str
    params: Mapping[str, str]
    returns: str | None
    style: str


EMPTY_DOC = DocInfo(summary="", params=MappingProxyType({}), returns=None, style="plain")

# Section titles shared by the Google and NumPy styles (matched case-insensitively).
_PARAM_TITLES = frozenset({
    "args", "arguments", "params", "parameters", "keyword args", "keyword arguments",
    "other args", "other arguments", "other parameters",
})  # fmt: skip
_RETURN_TITLES = frozenset({"return", "returns"})
_OTHER_TITLES = frozenset({
    "raise", "raises", "yield", "yields", "receive", "receives", "example", "examples", "note",
    "notes", "warning", "warnings", "warn", "warns", "see also", "todo", "references",
    "attributes", "methods", "attention", "caution", "danger", "error", "hint", "important", "tip",
})  # fmt: skip
_ALL_TITLES = _PARAM_TITLES | _RETURN_TITLES | _OTHER_TITLES
# Headers that end a parameter block when they turn up alone inside it, indented like its
# entries (a parameter is rarely called that; "args" or "attributes" often are).
_ENDS_ARGS = frozenset({
    "return", "returns", "yield", "yields", "raise", "raises", "example", "examples",
    "see also", "references", "todo",
})  # fmt: skip
_FIELD_NAMES = (
    r"param|parameter|arg|argument|key|keyword|kwarg|kwtype|type|returns?|rtype|raises?|except"
    r"|exception|yields?|ytype|var|ivar|cvar|vartype|meta"
)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The markers of sections and fields, a Google argument line, a Google return type:
    compiled on the first docstring parsed (about a millisecond `import toolreg` does not
    spend)."""
    # Every marker starts a line, written "\n" (the text is searched with a "\n" in front) so
    # the engine only tries the positions after a newline. A title is any one or two words
    # here; it counts only when it is one of _ALL_TITLES (cheaper than a long alternation).
    markers = re.compile(
        # reST ":param str x:" or Epydoc "@param x:".
        rf"\n(?:(?P<field>[:@])(?P<name>{_FIELD_NAMES})\b(?P<args>[^:\n]*):"
        r"|(?P<title>[A-Za-z]+(?:[ \t]+[A-Za-z]+)?)[ \t]*(?:"
        # Google: "Args:" alone on its line, then (after optional blank lines) an indented line.
        r"(?P<google>:)[ \t]*$(?=\n(?:[ \t]*\n)*[ \t]+\S)"
        # NumPy: "Parameters" underlined with dashes.
        r"|\n[ \t]*-{3,}[ \t]*$))",
        re.MULTILINE | re.IGNORECASE,
    )
    # "city: ...", "city (str): ...", "unit (str, optional): ...", "*args: ...", "城市：..."
    google_arg = re.compile(r"(\*{0,2}[^\W\d]\w*)(?:\s*\(.*?\)[,.;]?)?\s*[:：]\s*(.*)")
    # A leading "type:" in a Google Returns block: "dict: ...", "Dict[str, int]: ...".
    return_type = re.compile(r"(?:[^:\s]+|[^:\n]*\]):\s+(?=\S)")
    return markers, google_arg, return_type


_REST_PARAM_FIELDS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})
_FIELD_PARAMS = {"rest": _REST_PARAM_FIELDS, "epydoc": _REST_PARAM_FIELDS | {"kwarg"}}

_Params = dict[str, str]
_Marker = tuple[str, str, str, re.Match[str]]  # style, title or field name, arguments, match
_Chunks = list[tuple[str, str, str]]  # title or field name, arguments, text up to the next marker


def parse_docstring(doc: str | None) -> DocInfo:
    """Parse `doc` (any supported style, auto-detected); never raises."""
    if not doc or not isinstance(doc, str):
        return EMPTY_DOC
    text = doc
    try:
        text = _clean(doc)
        if ":" not in text and "--" not in text:  # no marker possible: plain prose
            return _plain(text)
        body = "\n" + text
        markers = [marker for m in _patterns()[0].finditer(body) if (marker := _marker(m))[0]]
        if not markers:
            return _plain(text)
        style = markers[0][0]  # the first marker decides the style; others are text
        chunks = _chunks(body, [marker for marker in markers if marker[0] == style])
        if style == "google":
            params, returns = _parse_google(chunks)
        elif style == "numpy":
            params, returns = _parse_numpy(chunks)
        else:
            params, returns = _parse_fields(chunks, _FIELD_PARAMS[style])
        summary = _tidy(body[: markers[0][3].start()])
        return DocInfo(summary, MappingProxyType(params), returns, style)
    except Exception:  # a docstring the fast parser cannot read: ask docstring-parser
        return _fallback(text)


def _fallback(text: str) -> DocInfo:
    """docstring-parser's auto-detection (imported only here, ~4x slower); else plain prose."""
    try:
        import docstring_parser  # lazy by design: `import toolreg` stays light

        parsed = docstring_parser.parse(text)
        params = {
            p.arg_name.lstrip("*"): " ".join(p.description.split())
            for p in parsed.params
            if p.description
        }
        parts = (parsed.short_description, parsed.long_description)
        summary = "\n\n".join(part.strip() for part in parts if part)
        returns = parsed.returns.description if parsed.returns else None
        return DocInfo(summary, MappingProxyType(params), returns, "plain")
    except Exception:  # still unreadable: the whole text is the summary
        return _plain(text)


def _clean(doc: str) -> str:
    """`inspect.cleandoc`, keeping the block under a section header on the opening line."""
    if "\r" in doc:
        doc = doc.replace("\r\n", "\n").replace("\r", "\n")
    if "\n" not in doc:
        return doc.strip()
    first, rest = doc.split("\n", 1)
    head = first.strip()
    if head.endswith(":") and " ".join(head[:-1].lower().split()) in _ALL_TITLES:
        closing = rest[rest.rfind("\n") + 1 :]  # the closing quotes' line: the base indentation
        if not closing.strip():
            doc = f"\n{closing}{head}\n{rest}"
    return inspect.cleandoc(doc)


def _plain(text: str) -> DocInfo:
    return DocInfo(_tidy(text), MappingProxyType({}), None, "plain")


def _parse_google(chunks: _Chunks) -> tuple[_Params, str | None]:
    params: _Params = {}
    returns: str | None = None
    for title, _, chunk in chunks:
        if title in _PARAM_TITLES:
            found: dict[str, list[str]] = {}
            last: list[str] | None = None
            for entry in _entries(chunk, block=True):
                arg = _patterns()[1].fullmatch(entry[0])
                if arg is not None and not arg.group(2) and arg.group(1).lower() in _ENDS_ARGS:
                    break  # "Returns:", "Example:"... indented into the block: a new section
                if arg is not None:
                    name = arg.group(1).lstrip("*")
                    # documented twice: the first description counts, the second is dropped
                    last = found.setdefault(name, []) if name not in found else []
                    last += [arg.group(2), *entry[1:]]
                elif last is not None:  # a line that is not "name: ..." continues the last one
                    last += entry
            _add(params, ((name, _join(desc)) for name, desc in found.items()))
        elif title in _RETURN_TITLES and returns is None:
            returns = _join([line for entry in _entries(chunk, block=True) for line in entry])
            typed = _patterns()[2].match(returns)
            returns = (returns[typed.end() :] if typed else returns) or None
    return params, returns


def _parse_numpy(chunks: _Chunks) -> tuple[_Params, str | None]:
    params: _Params = {}
    returns: str | None = None
    for title, _, chunk in chunks:
        if title in _PARAM_TITLES:
            for entry in _entries(chunk, block=False):  # "x : int" / "x, y : int", description
                names = [name.strip().lstrip("*") for name in entry[0].split(":", 1)[0].split(",")]
                if all(name.isidentifier() for name in names):  # else: not an entry
                    _add(params, ((name, _join(entry[1:])) for name in names))
        elif title in _RETURN_TITLES and returns is None:
            # "type" (or "name : type") lines, each followed by an indented description.
            entries = _entries(chunk, block=False)
            descs = [desc for entry in entries if (desc := _join(entry[1:]))]
            returns = " ".join(descs) or _join([entry[0] for entry in entries]) or None
    return params, returns


def _parse_fields(chunks: _Chunks, param_fields: frozenset[str]) -> tuple[_Params, str | None]:
    """reST (``:param x: ...``) and Epydoc (``@param x: ...``) field lists."""
    params: _Params = {}
    returns: str | None = None
    for field, args, chunk in chunks:
        lines = chunk.split("\n")
        for i in range(1, len(lines)):  # the field's text ends at the first unindented line
            if lines[i][:1].strip():
                del lines[i:]
                break
        desc = _join(lines)
        names = args.split()
        if field in param_fields and names:  # ":param x:" or ":param str x:"
            _add(params, [(names[-1].lstrip("*"), desc)])
        elif field in _RETURN_TITLES and returns is None:
            returns = desc or None
    return params, returns


def _marker(match: re.Match[str]) -> _Marker:
    """A marker's style ("" for a title that is not a known section), name and arguments."""
    field, name, args, title = match.group("field", "name", "args", "title")
    if field:
        return ("rest" if field == ":" else "epydoc", name.lower(), args, match)
    title = " ".join(title.lower().split())
    style = ("google" if match.group("google") else "numpy") if title in _ALL_TITLES else ""
    return (style, title, "", match)


def _chunks(body: str, markers: list[_Marker]) -> _Chunks:
    """Each marker's name and arguments, with the text up to the next marker."""
    ends = [marker[3].start() for marker in markers[1:]] + [len(body)]
    return [
        (name, args, body[match.end() : end])
        for (_, name, args, match), end in zip(markers, ends, strict=True)
    ]


def _entries(chunk: str, *, block: bool) -> list[list[str]]:
    """Group a section's lines into entries: a head line, then its more-indented lines.

    The first line (the rest of the header) is skipped; with `block`, the section ends at the
    first line indented less than its entries (Google sections are indented blocks: prose or
    a code example at the section's own indentation comes after it).
    """
    entries: list[list[str]] = []
    base = -1
    for line in chunk.split("\n")[1:]:
        stripped = line.lstrip()
        if not stripped:
            continue
        indent = len(line) - len(stripped)
        if block and (not indent or indent < base):
            break
        if base < 0:
            base = indent
        if indent > base and entries:
            entries[-1].append(stripped)
        else:
            entries.append([stripped])
    return entries


def _add(params: _Params, items: Iterable[tuple[str, str]]) -> None:
    """Record each (name, description) whose name is an identifier; the first one wins."""
    for name, desc in items:
        if desc and name not in params and name.isidentifier():
            params[name] = desc


def _join(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def _tidy(summary: str) -> str:
    """Strip trailing spaces from every line and keep at most one blank line in a row."""
    summary = summary.strip()
    if "\n" not in summary:
        return summary
    if " \n" in summary:
        summary = "\n".join(line.rstrip() for line in summary.split("\n"))
    while "\n\n\n" in summary:
        summary = summary.replace("\n\n\n", "\n\n")
    return summary
