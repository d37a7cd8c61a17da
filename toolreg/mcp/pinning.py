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
written atomically (a temporary file in the same folder, then renamed over it): the lock
file format of `toolreg.toolsets.lock`, which `toolreg lint --lock` reads too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..tool import Tool
from ..toolsets.lock import (
    MAX_PIN_FILE_BYTES,
    PIN_FILE_VERSION,
    PinFile,
    changes,
    fingerprint,
    pin_of,
    shown,
)

if TYPE_CHECKING:
    import mcp_types as types

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
            shown(record.name),
            self.file.path,
            "; ".join(record.changes),
        )
