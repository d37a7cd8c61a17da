"""`toolreg mcp pin TARGET --lock FILE`: review an MCP server's tools against a pin file.

```
toolreg mcp pin mcp:http://127.0.0.1:8000/mcp --lock tools.lock         # shows, asks, writes
toolreg mcp pin mcp:'uvx mcp-server-time' --lock tools.lock --yes      # approves unasked
```

Every tool that the pin file does not hold, or holds with another definition, is shown
(what changed: the description's old and new text, the schema and annotation paths); then
the command asks (on a terminal) whether to pin them as they are now, unless `--yes`. A pin
file that does not exist yet is not trusted on first use here: every tool is shown as new
and the file is written only when approved. The pin file is the one `mount(..., pin=FILE)`
reads (see `toolreg.mcp.pinning`).

Exit status: 0 the pin file is up to date (it was, or it now is); 1 the changes were not
approved (declined, or no terminal to ask and no `--yes`), the file is as it was; 2 a usage
error, a server that cannot be mounted, or a pin file that cannot be used.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..jsonvalues import safe_text
from ..registry import ToolRegistry
from .target import TargetError, require_mcp_extra

__all__ = ["add_parser", "cmd_mcp"]


def add_parser(
    command: Callable[[str, str], argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add `mcp pin` through `command(name, summary)`; `common` holds the shared options."""
    mcp = command("mcp", "work with the MCP servers whose tools you mount: pin them")
    actions = mcp.add_subparsers(
        dest="mcp_command", required=True, metavar="ACTION", help="what to do (ACTION --help)"
    )
    summary = "show what changed in an MCP server's tools since FILE pinned them, and pin them"
    p = actions.add_parser("pin", help=summary, description=summary, parents=[common])
    p.add_argument("target", metavar="TARGET", help="mcp:URL or mcp:'command'")
    p.add_argument("--lock", required=True, metavar="FILE", help="the pin file (JSON)")
    p.add_argument("--yes", action="store_true", help="pin every change without asking")


def cmd_mcp(args: argparse.Namespace, errlog: Any = None) -> int:
    """`toolreg mcp ACTION`; a stdio server's stderr goes to `errlog` (default: ours)."""
    return _pin(args.target, Path(args.lock), yes=args.yes, errlog=errlog)


def _pin(target: str, lock: Path, *, yes: bool, errlog: Any) -> int:
    require_mcp_extra("toolreg mcp pin needs")
    from ..mcp import McpConnectionError, mount
    from ..mcp.pinning import PinFile

    server = target[len("mcp:") :] if target.startswith("mcp:") else target
    spec: str | list[str] = (
        server if server.startswith(("http://", "https://")) else shlex.split(server)
    )
    if not spec:
        raise TargetError("mcp pin needs a server: mcp:URL or mcp:'command args'")
    created = not lock.exists()
    if created:  # nothing trusted on first use: every tool is new, and shown
        PinFile(lock).write({})
    approved = False
    try:
        env = None if isinstance(spec, str) else dict(os.environ)
        # annotations are only read here, never acted on: no tool is called
        handle = mount(ToolRegistry(), spec, pin=lock, env=env, errlog=errlog)
        try:
            handle.open()
        except McpConnectionError as exc:
            raise TargetError(str(exc)) from None
        with contextlib.closing(handle):
            pending = handle.pending
            if not pending:
                approved = True
                _print(f"{lock} is up to date: {_tools(len(handle.names))} pinned")
                return 0
            for record in pending.values():
                _print(str(record))
                if record.new and record.definition.get("description"):
                    _print(f"    description: {_one_line(record.definition['description'])}")
            if not (yes or _asked(f"Pin {_tools(len(pending))} as shown in {lock}?")):
                print(f"toolreg: not approved; {lock} is unchanged", file=sys.stderr)
                return 1
            handle.approve(*pending)
            approved = True
            _print(f"pinned {_tools(len(pending))} in {lock}")
            return 0
    finally:
        if created and not approved:
            with contextlib.suppress(OSError):
                lock.unlink()


def _asked(question: str) -> bool:
    """The answer of the person at the terminal (asked on stderr); no terminal: no."""
    if not sys.stdin.isatty():
        print("toolreg: no terminal to ask; pass --yes to pin unasked", file=sys.stderr)
        return False
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower().startswith("y")


def _tools(count: int) -> str:
    return f"{count} tool" if count == 1 else f"{count} tools"


def _one_line(text: str, limit: int = 300) -> str:
    """A server's text for the terminal: one line, control characters escaped, short."""
    line = " ".join(str(text).split())
    line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _print(text: str) -> None:
    print(safe_text(text))
