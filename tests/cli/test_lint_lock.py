"""`toolreg lint TARGET --lock FILE`: a tool whose definition changed without a new version
fails the lint; `--update` writes the file. Run as a user runs it (a subprocess, real exit
codes), and through `toolreg.toolsets.lock` (the format the mounts' pin files share)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from toolreg import ToolRegistry
from toolreg.errors import PinFileError
from toolreg.toolsets import pinned
from toolreg.toolsets.lock import PinFile, drift, locked, pin_of, tool_definition

ROOT = Path(__file__).resolve().parents[2]

V1 = '''
@registry.register_tool(name="search", version="1", read_only=True)
def search_v1(q: Annotated[str, "Words to look for"]) -> str:
    """Search the catalog by words. Use it when the user asks for a product."""
    return q
'''
V2 = '''
@registry.register_tool(name="search", version="2", read_only=True)
def search_v2(
    q: Annotated[str, "Words to look for"], limit: Annotated[int, "Hits at most"] = 5
) -> str:
    """Search the catalog by words, with a limit. Use it when the user asks for a product."""
    return q
'''
HEAD = "from typing import Annotated\nfrom toolreg import ToolRegistry\nregistry = ToolRegistry()\n"


def toolreg(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=folder,
        env={**env, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
    )


def write_tools(folder: Path, *parts: str) -> None:
    (folder / "tools.py").write_text(HEAD + "".join(parts), encoding="utf-8")


def findings(done: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    return [(f["tool"], f["code"], f["severity"]) for f in json.loads(done.stdout)]


@pytest.mark.slow
def test_the_workflow_write_commit_lint(tmp_path: Path) -> None:
    write_tools(tmp_path, V1)
    missing = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock")
    assert missing.returncode == 2
    assert "toolreg: no lock file tools.lock: write it with toolreg lint tools.py --lock" in (
        missing.stderr
    )

    wrote = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock", "--update")
    assert wrote.returncode == 0, wrote.stderr
    assert "new: search@1" in wrote.stdout
    assert "wrote tools.lock (1 definition; 1 new, changed or gone)" in wrote.stdout
    clean = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock")
    assert clean.returncode == 0, clean.stdout
    assert "1 tools, 0 errors, 0 other findings" in clean.stdout

    # the same name and version, another description: the lint fails, saying what changed
    write_tools(tmp_path, V1.replace("by words", "by keywords"))
    changed = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock")
    assert changed.returncode == 1
    assert "search@1: error [changed-without-version] changed since tools.lock" in changed.stdout
    assert "description: 'Search the catalog by words." in changed.stdout
    assert "later version=" in changed.stdout

    # the change as a new version beside the old one: version 2 is not locked yet
    write_tools(tmp_path, V1, V2)
    new = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock", "--json")
    assert new.returncode == 1
    assert findings(new) == [("search@2", "not-locked", "error")]
    assert toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock", "--update").returncode == 0
    assert toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock").returncode == 0

    # a version dropped: a warning (clients pinned to it fail), not an error
    write_tools(tmp_path, V2)
    gone = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock", "--json")
    assert gone.returncode == 0
    assert findings(gone) == [("search@1", "gone-from-lock", "warning")]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("schema", "changed since tools.lock"),
        ("annotations", "annotations.readOnlyHint: true -> false"),
        ("examples", "Example arguments"),
    ],
)
def test_what_a_model_reads_is_locked(tmp_path: Path, edit: str, words: str) -> None:
    write_tools(tmp_path, V1)
    assert toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock", "--update").returncode == 0
    changed = {
        "schema": V1.replace("q: Annotated[str,", "q: Annotated[int,").replace(
            "return q", "return 'x'"
        ),
        "annotations": V1.replace(", read_only=True", ""),
        "examples": V1.replace(", read_only=True", ", read_only=True, examples=[{'q': 'tea'}]"),
    }[edit]
    write_tools(tmp_path, changed)
    done = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock")
    assert done.returncode == 1
    assert words in done.stdout


def test_update_needs_a_lock_and_a_damaged_file_is_refused(tmp_path: Path) -> None:
    write_tools(tmp_path, V1)
    alone = toolreg(tmp_path, "lint", "tools.py", "--update")
    assert alone.returncode == 2
    assert "--update writes the lock file: pass --lock FILE too" in alone.stderr
    toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock", "--update")
    lock = tmp_path / "tools.lock"
    text = lock.read_text(encoding="utf-8").replace("by words", "by hand")  # a hand edit
    lock.write_text(text, encoding="utf-8")
    done = toolreg(tmp_path, "lint", "tools.py", "--lock", "tools.lock")
    assert done.returncode == 2
    assert "the fingerprint of 'search@1' does not match its definition" in done.stderr


def test_a_toolset_target_is_linted_as_served(tmp_path: Path) -> None:
    source = (
        HEAD
        + V1
        + V2
        + ("from toolreg.toolsets import pinned\nold_clients = pinned(registry, {'search': '1'})\n")
    )
    (tmp_path / "tools.py").write_text(source, encoding="utf-8")
    assert toolreg(tmp_path, "lint", "tools.py:old_clients", "--lock", "a.lock", "--update")
    pins = PinFile(tmp_path / "a.lock").read()
    assert pins is not None
    assert list(pins) == ["search@1"]  # the view serves version 1 only


# -- the lock module ----------------------------------------------------------------------------


def registry_with(description: str) -> ToolRegistry:
    registry = ToolRegistry()

    def search(q: str) -> str:
        return q

    registry.register_tool(search, version="1", description=description)
    registry.register_tool(search, version="2", description=description + " More.")
    return registry


def test_every_version_is_locked_on_its_own(tmp_path: Path) -> None:
    registry = registry_with("Search.")
    entries = locked(registry)
    assert list(entries) == ["search@2", "search@1"]
    assert entries["search@1"]["definition"]["version"] == "1"
    file = PinFile(tmp_path / "tools.lock")
    file.write(entries)
    assert file.read() == entries
    assert drift(registry, entries) == []
    other = registry_with("Find.")
    kinds = [(d.key, d.kind) for d in drift(other, entries)]
    assert kinds == [("search@2", "changed"), ("search@1", "changed")]
    assert drift(pinned(registry, {"search": "1"}), entries)[0].kind == "gone"


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"name": "search", "version": "1"}, "holds the definition of another tool"),
        ({"name": "search", "version": 1}, "is not a tool definition"),
        ({"name": 5}, "is not a tool definition"),
        ({"extra": True}, "is not a tool definition"),
    ],
)
def test_a_lock_entry_is_checked(tmp_path: Path, entry: dict[str, Any], words: str) -> None:
    registry = registry_with("Search.")
    one = registry.get("search", version="1")
    assert one is not None
    defined = tool_definition(one)
    del defined["version"]  # as a tool without versions, under the key "search"
    defined.update(entry)
    path = tmp_path / "tools.lock"
    document = {"version": 1, "tools": {"search": pin_of(defined)}}
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PinFileError, match=words):
        PinFile(path).read()


def test_the_lock_module_needs_no_mcp() -> None:
    code = textwrap.dedent(
        """
        import sys
        import toolreg.toolsets.lock
        import toolreg.cli.lint
        print(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types"))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr
