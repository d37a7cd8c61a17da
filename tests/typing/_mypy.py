"""Running mypy over user-code files for the typing tests, and reading what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

STRICT = """
[mypy]
strict = True
python_version = 3.10
follow_imports = silent
show_error_codes = True
"""
"""A careful user's project: strict, following the imports of the checked files."""


def run_mypy(config_text: str, cache: str, files: list[Path], tmp: Path) -> dict[str, list[str]]:
    """One `mypy` run over `files` with the config `config_text` and a cache of its own in the
    project's (git-ignored) `.mypy_cache/<cache>`; its output lines grouped by file name."""
    mypy_api = pytest.importorskip("mypy.api")
    config = tmp / "mypy.ini"
    config.write_text(config_text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)  # so mypy finds the `toolreg` package
        stdout, stderr, _ = mypy_api.run(
            [
                "--config-file",
                str(config),
                "--cache-dir",
                str(ROOT / ".mypy_cache" / cache),
                "--no-error-summary",
                *map(str, files),
            ]
        )
    assert stderr == ""
    lines: dict[str, list[str]] = {path.name: [] for path in files}
    for line in stdout.splitlines():
        name = Path(line.split(":")[0]).name
        if name in lines:
            lines[name].append(line)
    return lines


def check_marked_errors(source: Path, lines: list[str], count: int) -> None:
    """Each line of `source` that ends in `# error: CODE` (there are `count`) is reported by
    mypy with that error code, and no other line is."""
    text = source.read_text(encoding="utf-8").splitlines()
    expected = {
        number: match.group(1)
        for number, line in enumerate(text, start=1)
        if (match := re.search(r"# error: ([a-z-]+)$", line))
    }
    assert len(expected) == count
    found: dict[int, set[str]] = {}
    for line in lines:
        match = re.search(r":(\d+): error: .*\[([a-z-]+)\]$", line)
        if match:
            found.setdefault(int(match.group(1)), set()).add(match.group(2))
    assert set(found) == set(expected), lines
    for number, code in expected.items():
        assert code in found[number], (number, found[number])
