"""Lock files of tool definitions: what a model was shown, fingerprinted, kept with the code.

One file format serves two checks:

- a mount's pin file (`mount(..., pin="tools.lock")`, `toolreg mcp pin`: see
  `toolreg.mcp.pinning`): a remote server's tool that changed since it was pinned is held
  back until approved;
- a toolset's lock file (`toolreg lint TARGET --lock tools.lock`): a tool of your own whose
  definition changed without a new `version=` fails the lint, so that no model (and no
  client pinned to that version) gets a tool that changed under the same name and version.

The file is JSON, `{"version": 1, "tools": {key: {"fingerprint": "sha256:...",
"definition": {...}}}}`. A definition is what a model or a client reads of a tool: its
`name`, `description`, `inputSchema`, `outputSchema` and `annotations` (an absent field is
null), and its `version` when it has one; the fingerprint is the SHA-256 of its canonical
JSON. The key is the tool's name, or `name@version` for a tool with versions (each version
is locked on its own). The file is written atomically (a temporary file in the same folder,
then renamed over it) with sorted keys, so that it diffs well in a review; a damaged or
hand-edited entry is a `PinFileError` naming the file and the entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from ..errors import PinFileError
from ..formats import export_tools
from ..formats.mcp import output_schema
from ..jsonvalues import canonical
from ..tool import Tool
from .base import Toolset
from .versions import versions_of

__all__ = [
    "FIELDS",
    "MAX_PIN_FILE_BYTES",
    "PIN_FILE_VERSION",
    "Drift",
    "PinFile",
    "changes",
    "drift",
    "fingerprint",
    "lock_key",
    "locked",
    "pin_of",
    "shown",
    "tool_definition",
]

PIN_FILE_VERSION: Final = 1
"""The version of the file format this toolreg reads and writes (the file's `version`)."""
MAX_PIN_FILE_BYTES: Final = 16 * 1024 * 1024
"""A pin or lock file larger than this is refused (`PinFileError`)."""
FIELDS: Final = ("description", "inputSchema", "outputSchema", "annotations")
"""What a definition holds besides its `name` (and `version`, for a tool with versions)."""
_MAX_CHANGES = 8  # lines of a diff, at most ("... and N more" after them)
_MAX_SHOWN = 100  # characters of a value shown in a diff line
_MAX_DEPTH = 32  # of a diff's walk through two schemas


def fingerprint(defined: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the canonical JSON of a definition (`defined`: what
    `tool_definition`, or a mount's `definition`, makes of a tool)."""
    return "sha256:" + hashlib.sha256(canonical(dict(defined))).hexdigest()


def pin_of(defined: dict[str, Any]) -> dict[str, Any]:
    """The file's entry for the definition `defined`: `{"fingerprint", "definition"}`."""
    return {"fingerprint": fingerprint(defined), "definition": defined}


def lock_key(name: str, version: str | None) -> str:
    """A definition's key in the file: `name`, or `name@version`."""
    return name if version is None else f"{name}@{version}"


def tool_definition(tool: Tool) -> dict[str, Any]:
    """What a lock covers of one of your tools: what `toolreg serve` lists of it (its MCP
    definition: the description with its examples, the parameters as exported, strict for
    a strict tool, the output schema, the annotations its flags make) and its version."""
    (exported,) = export_tools([tool], "mcp")
    defined: dict[str, Any] = {
        "name": tool.name,
        "description": exported.get("description"),
        "inputSchema": exported["inputSchema"],
        "outputSchema": output_schema(tool),
        "annotations": dict(exported["annotations"]),
    }
    if tool.version is not None:
        defined["version"] = tool.version
    return defined


def locked(toolset: Toolset) -> dict[str, dict[str, Any]]:
    """Every version of every tool of `toolset` as the lock file's entries, by key."""
    entries: dict[str, dict[str, Any]] = {}
    for tool in toolset.tools():
        for each in versions_of(toolset, tool.name) or [tool]:
            entries[lock_key(each.name, each.version)] = pin_of(tool_definition(each))
    return entries


def changes(pinned: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between the definition the file holds (`pinned`) and the one `now`,
    one short line each: the description's old and new text, every schema or annotation
    path added, removed or changed (at most eight lines)."""
    lines: list[str] = []
    for name in FIELDS:
        before, after = pinned.get(name), now.get(name)
        if before == after:
            continue
        if name == "description":
            lines.append(f"description: {shown(before)} -> {shown(after)}")
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
                yield f"{where}: added {shown(after[key])}"
            else:
                yield from _walk(where, before[key], after[key], depth + 1)
        return
    yield f"{path}: {shown(before)} -> {shown(after)}"


def shown(value: Any) -> str:
    """A value for a diff line or a log line: one line, control characters escaped, short."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


@dataclass(frozen=True, slots=True)
class Drift:
    """How one tool differs from the lock file (see `drift`): `key` is its entry's key
    (`name` or `name@version`); `kind` is `"changed"` (the same name and version, another
    definition), `"new"` (not in the file) or `"gone"` (in the file, no longer in the
    toolset); `changes` says what changed, for a changed one."""

    key: str
    kind: Literal["changed", "new", "gone"]
    changes: tuple[str, ...] = ()


def drift(toolset: Toolset, pins: Mapping[str, Mapping[str, Any]]) -> list[Drift]:
    """How `toolset`'s tools (every version) differ from a lock file's entries (`pins`,
    what `PinFile.read` gives): changed, new and gone ones, in the toolset's order, then
    the file's."""
    now = locked(toolset)
    found: list[Drift] = []
    for key, entry in now.items():
        before = pins.get(key)
        if before is None:
            found.append(Drift(key, "new"))
        elif before["fingerprint"] != entry["fingerprint"]:
            found.append(Drift(key, "changed", changes(before["definition"], entry["definition"])))
    found.extend(Drift(key, "gone") for key in pins if key not in now)
    return found


class PinFile:
    """The pin or lock file at `path`: `read()` its entries (None while there is no file),
    `write()` them atomically. Every problem is a `PinFileError` naming the file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"PinFile({str(self.path)!r})"

    def read(self) -> dict[str, dict[str, Any]] | None:
        """The entries by key (`{"fingerprint", "definition"}` each), checked: None when
        the file does not exist."""
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
                f"has version {shown(version)}; this toolreg reads version {PIN_FILE_VERSION}"
            )
        tools = document.get("tools")
        if not isinstance(tools, dict):
            raise self._error('has no "tools" object')
        pins: dict[str, dict[str, Any]] = {}
        for key, pin in tools.items():
            where = shown(key)
            if not isinstance(pin, dict) or set(pin) != {"fingerprint", "definition"}:
                raise self._error(f"the entry {where} is not {{fingerprint, definition}}")
            defined = pin["definition"]
            if not isinstance(defined, dict) or set(defined) - {"version"} != _KEYS:
                raise self._error(f"the definition of {where} is not a tool definition")
            version = defined.get("version")
            if (version is not None and not isinstance(version, str)) or not isinstance(
                defined["name"], str
            ):
                raise self._error(f"the definition of {where} is not a tool definition")
            if lock_key(defined["name"], version) != key:
                raise self._error(f"the entry {where} holds the definition of another tool")
            if pin["fingerprint"] != fingerprint(defined):
                raise self._error(
                    f"the fingerprint of {where} does not match its definition (the file was "
                    "edited or damaged); write it again from the tools (toolreg mcp pin for a "
                    "mount, toolreg lint --lock FILE --update for your own) and review the diff"
                )
            pins[key] = {"fingerprint": pin["fingerprint"], "definition": defined}
        return pins

    def _error(self, problem: str) -> PinFileError:
        return PinFileError(self.path, problem)


_KEYS: Final = frozenset({"name", *FIELDS})
