"""The commands that need the `mcp` extra say how to install it when it is missing, as one
line on stderr (exit status 2), not a ModuleNotFoundError.

The extra is made missing in a child process: a finder placed first on `sys.meta_path`
refuses `mcp` and its submodules, as an interpreter without the package would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEATHER = str(ROOT / "samples" / "weather.py")

WITHOUT_MCP = """
import sys

class NoMcp:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMcp())
from toolreg.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def toolreg_without_mcp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_MCP, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["serve", WEATHER], "toolreg serve needs"),
        (["serve", WEATHER, "--transport", "http", "--port", "0"], "toolreg serve needs"),
        (["mcp", "pin", "mcp:uvx some-server", "--lock", "tools.lock"], "toolreg mcp pin needs"),
        (["list", "mcp:uvx some-server"], "mcp: targets need"),
    ],
)
def test_a_command_that_needs_the_mcp_extra_says_how_to_install_it(
    args: list[str], command: str, tmp_path: Path
) -> None:
    done = toolreg_without_mcp(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"toolreg: {command} the mcp extra: pip install 'toolreg[mcp]' (No module named 'mcp')\n"
    )
    assert not (tmp_path / "tools.lock").exists()  # nothing written before the check


def test_the_other_commands_run_without_the_mcp_extra(tmp_path: Path) -> None:
    done = toolreg_without_mcp("list", WEATHER, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "get_weather" in done.stdout
