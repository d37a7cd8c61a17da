"""Pinning a mounted server's tools ("rug pull" defence): `mount(..., pin="tools.lock")`.

A server can change a tool after the application reviewed it: a new description that tells
the model something else, a schema that asks for more, annotations that now claim the tool
is read-only. A pin file records, for each mounted tool, its definition (name, description,
`inputSchema`, `outputSchema`, annotations) and that definition's fingerprint (the SHA-256
of its canonical JSON). On a later mount, and on every `tools/list_changed` refresh, a tool
the pin file does not hold, or holds with another fingerprint, is held back: not offered,
not callable, reported (a WARNING naming the tool and what changed) and listed in
`Mount.pending` until the application approves it (`Mount.approve(name)`, or
`toolreg mcp pin`), which updates the file.

Trust on first use: a mount whose pin file does not exist yet records every tool it mounts
and writes the file. Review that first list (`toolreg mcp pin` shows it) and keep the file
with the application's code: it is as trustworthy as its place on disk. The fingerprints
catch a file edited by hand or damaged (`PinFileError`), not someone who may write it.

The file is JSON, `{"version": 1, "tools": {name: {"fingerprint": "sha256:...",
"definition": {...}}}}`, keyed by the server's names (not the local, prefixed ones), and
written atomically (a temporary file in the same folder, then renamed over it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import mcp_types as types

from ..conversation.signing import canonical
from ..errors import PinFileError
from ..tool import Tool

__all__ = [
    "MAX_PIN_FILE_BYTES",
    "PIN_FILE_VERSION",
    "PendingTool",
    "PinFile",
    "Pinning",
    "changes",
    "definition",
    "fingerprint",
    "pin_of",
]

_log = logging.getLogger("toolreg.mcp")

PIN_FILE_VERSION: Final = 1
MAX_PIN_FILE_BYTES: Final = 16 * 1024 * 1024
"""A pin file larger than this is refused (`PinFileError`)."""
_FIELDS: Final = ("description", "inputSchema", "outputSchema", "annotations")
_MAX_CHANGES = 8  # lines of a diff, at most ("... and N more" after them)
_MAX_SHOWN = 100  # characters of a value shown in a diff line
_MAX_DEPTH = 32  # of a diff's walk through two schemas


@dataclass(frozen=True, slots=True)
class PendingTool:
    """A remote tool held back by a pin file until it is approved (`Mount.pending`).

    `name` is the server's name, `local` the name it would have here; `new` is true for a
    tool the pin file does not hold; `changes` says what differs from the pinned definition
    (`description: 'old' -> 'new'`, `inputSchema.properties.x: added`, ...; for a new tool,
    one line saying so); `definition` is the server's definition now."""

    name: str
    local: str
    new: bool
    changes: tuple[str, ...]
    definition: dict[str, Any] = field(repr=False)
    fingerprint: str = field(repr=False)

    def __str__(self) -> str:
        head = f"{'new' if self.new else 'changed'}: {self.name}"
        return "\n".join([head, *(f"    {line}" for line in self.changes)])


def definition(tool: types.Tool) -> dict[str, Any]:
    """What a pin covers of a remote tool: its name, description, schemas and annotations,
    as JSON values (an absent field is null)."""
    hints = tool.annotations
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": None
        if hints is None
        else hints.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def fingerprint(defined: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the canonical JSON of a `definition`."""
    return "sha256:" + hashlib.sha256(canonical(dict(defined))).hexdigest()


def changes(pinned: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between a pinned definition and the server's, one short line each:
    the description's old and new text, every schema or annotation path added, removed
    or changed (at most `_MAX_CHANGES` lines)."""
    lines: list[str] = []
    for name in _FIELDS:
        before, after = pinned.get(name), now.get(name)
        if before == after:
            continue
        if name == "description":
            lines.append(f"description: {_shown(before)} -> {_shown(after)}")
        else:
            lines.extend(_walk(name, before, after, 0))
    if len(lines) > _MAX_CHANGES:
        lines[_MAX_CHANGES:] = [f"... and {len(lines) - _MAX_CHANGES} more"]
    return tuple(lines)


def _walk(path: str, before: Any, after: Any, depth: int) -> Iterator[str]:
    if before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict) and depth < _MAX_DEPTH:
        for key in [*before, *(k for k in after if k not in before)]:
            where = f"{path}.{key}"
            if key not in after:
                yield f"{where}: removed"
            elif key not in before:
                yield f"{where}: added {_shown(after[key])}"
            else:
                yield from _walk(where, before[key], after[key], depth + 1)
        return
    yield f"{path}: {_shown(before)} -> {_shown(after)}"


def _shown(value: Any) -> str:
    """A value for a diff line or a log line: one line, control characters escaped, short."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


class PinFile:
    """The pin file at `path`: `read()` its pins (None while there is no file), `write()`
    them atomically. Every problem is a `PinFileError` naming the file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"PinFile({str(self.path)!r})"

    def read(self) -> dict[str, dict[str, Any]] | None:
        """The pins by remote name (`{"fingerprint", "definition"}` each), checked: None
        when the file does not exist."""
        try:
            with self.path.open("rb") as file:
                data = file.read(MAX_PIN_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._error(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
        if len(data) > MAX_PIN_FILE_BYTES:
            raise self._error(f"is larger than {MAX_PIN_FILE_BYTES // 2**20} MiB")
        try:
            document = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise self._error("is not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise self._error(f"is not JSON ({exc.msg}, line {exc.lineno})") from None
        except RecursionError:
            raise self._error("is nested too deeply to be a pin file") from None
        return self._checked(document)

    def write(self, pins: Mapping[str, Mapping[str, Any]]) -> None:
        """Replace the file with `pins`, atomically: readers see the old file or the new."""
        document = {
            "version": PIN_FILE_VERSION,
            "tools": {name: dict(pins[name]) for name in sorted(pins)},
        }
        text = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        folder = self.path.parent
        try:
            handle, temporary = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=folder
            )
        except OSError as exc:
            raise self._error(f"cannot be written ({exc.strerror or type(exc).__name__})") from None
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise self._error(f"cannot be written ({exc.strerror or type(exc).__name__})") from None

    def _checked(self, document: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(document, dict):
            raise self._error("is not a pin file (a JSON object with version and tools)")
        version = document.get("version")
        if type(version) is not int or version != PIN_FILE_VERSION:
            raise self._error(
                f"has version {_shown(version)}; this toolreg reads version {PIN_FILE_VERSION}"
            )
        tools = document.get("tools")
        if not isinstance(tools, dict):
            raise self._error('has no "tools" object')
        pins: dict[str, dict[str, Any]] = {}
        for name, pin in tools.items():
            shown = _shown(name)
            if not isinstance(pin, dict) or set(pin) != {"fingerprint", "definition"}:
                raise self._error(f"the entry {shown} is not {{fingerprint, definition}}")
            defined = pin["definition"]
            if not isinstance(defined, dict) or set(defined) != {"name", *_FIELDS}:
                raise self._error(f"the definition of {shown} is not a tool definition")
            if defined["name"] != name:
                raise self._error(f"the entry {shown} holds the definition of another tool")
            if pin["fingerprint"] != fingerprint(defined):
                raise self._error(
                    f"the fingerprint of {shown} does not match its definition (the file was "
                    "edited or damaged); run toolreg mcp pin to review the server's tools "
                    "and write the file again"
                )
            pins[name] = {"fingerprint": pin["fingerprint"], "definition": defined}
        return pins

    def _error(self, problem: str) -> PinFileError:
        return PinFileError(self.path, problem)


def pin_of(defined: dict[str, Any]) -> dict[str, Any]:
    """The pin file's entry for a definition."""
    return {"fingerprint": fingerprint(defined), "definition": defined}


class Pinning:
    """A mount's pins: which of the server's tools are offered (`sort`), which are held back
    (`pending`) until `approve`d. `label()` names the server in log lines."""

    def __init__(self, file: PinFile, label: Callable[[], str]) -> None:
        self.file = file
        self.label = label
        self.pins: dict[str, dict[str, Any]] | None = None  # None: not read yet
        self.pending: dict[str, PendingTool] = {}
        self._held: dict[str, Tool] = {}  # remote name -> the Tool it would be

    def sort(self, built: Iterable[tuple[types.Tool, Tool]]) -> list[Tool]:
        """The tools to offer, of the server's `(definition, tool)` pairs: those pinned as
        they are now. The others become `pending`, each reported once per change. A mount
        whose pin file does not exist yet pins everything (trust on first use)."""
        built = list(built)
        on_disk = self.file.read()
        if on_disk is None and self.pins is None:
            self.pins = {item.name: pin_of(definition(item)) for item, _ in built}
            self.file.write(self.pins)
            _log.info(
                "pinned %d tools of the MCP server %s in the new pin file %s (trust on first use)",
                len(self.pins),
                self.label(),
                self.file.path,
            )
            self.pending, self._held = {}, {}
            return [tool for _, tool in built]
        if on_disk is not None:  # else the file went away meanwhile: the pins read before
            self.pins = on_disk
        assert self.pins is not None
        offered: list[Tool] = []
        pending: dict[str, PendingTool] = {}
        held: dict[str, Tool] = {}
        for item, tool in built:
            defined = definition(item)
            printed = fingerprint(defined)
            pinned = self.pins.get(item.name)
            if pinned is not None and pinned["fingerprint"] == printed:
                offered.append(tool)
                continue
            lines = (
                ("not in the pin file",)
                if pinned is None
                else changes(pinned["definition"], defined)
            )
            record = PendingTool(item.name, tool.name, pinned is None, lines, defined, printed)
            before = self.pending.get(item.name)
            if before is None or before.fingerprint != printed:
                self._report(record)
            pending[item.name] = record
            held[item.name] = tool
        self.pending, self._held = pending, held
        return offered

    def approve(self, names: Iterable[str]) -> list[Tool]:
        """Pin the pending tools `names` as they are now (the file is written first), and
        give back their tools, to offer."""
        names = list(names)
        assert self.pins is not None
        pins = dict(self.pins)
        for name in names:
            pins[name] = pin_of(self.pending[name].definition)
        self.file.write(pins)
        self.pins = pins
        for name in names:
            del self.pending[name]
        return [self._held.pop(name) for name in names]

    def _report(self, record: PendingTool) -> None:
        what = "has a new tool" if record.new else "changed the tool"
        _log.warning(
            "the MCP server %s %s %s since %s was written; it is not offered until "
            "approved (Mount.approve, or toolreg mcp pin): %s",
            self.label(),
            what,
            _shown(record.name),
            self.file.path,
            "; ".join(record.changes),
        )
