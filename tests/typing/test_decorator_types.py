"""`@register_tool` and `@register_tool(...)` keep the function's type (mypy --strict)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CLEAN = HERE / "typed_registration.py"
MISUSE = HERE / "typed_misuse.py"

REVEALED = {
    "add": '"def (a: int, b: int =) -> int"',
    "shout": '"def (text: str) -> str"',
    "fetch": '"def (url: str) -> typing.Coroutine[Any, Any, bytes]"',
    "module_bare": '"def (x: float) -> float"',
    "module_options": '"def (xs: list[float]) -> list[float]"',
    "called": '"def (flag: bool) -> str"',
}


# toolreg itself is checked by `mypy --strict toolreg` in CI; here it is only followed for
# its types. Third-party packages toolreg's conversation layer uses are skipped: analysing
# the whole `openai` SDK would take a minute, and nothing here depends on it.
CONFIG = """
[mypy]
strict = True
python_version = 3.10
follow_imports = silent
show_error_codes = True

[mypy-openai.*,httpx.*,pydantic.*,pydantic_core.*,jsonschema.*,docstring_parser.*]
follow_imports = skip
"""


# A cache of its own inside the project's (git-ignored) .mypy_cache: later runs take a second.
CACHE = ROOT / ".mypy_cache" / "typing-test"


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One mypy run over both files; its lines grouped by file name."""
    config = tmp_path_factory.mktemp("mypy") / "mypy.ini"
    config.write_text(CONFIG, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)  # so mypy finds the `toolreg` package
        stdout, stderr, _ = mypy_api.run(
            [
                "--config-file",
                str(config),
                "--cache-dir",
                str(CACHE),
                "--no-error-summary",
                str(CLEAN),
                str(MISUSE),
            ]
        )
    assert stderr == ""
    lines: dict[str, list[str]] = {CLEAN.name: [], MISUSE.name: []}
    for line in stdout.splitlines():
        for name in lines:
            if line.startswith(str(HERE / name)) or Path(line.split(":")[0]).name == name:
                lines[name].append(line)
    return lines


def test_registered_functions_keep_their_types(mypy_output: dict[str, list[str]]) -> None:
    lines = mypy_output[CLEAN.name]
    errors = [line for line in lines if ": error:" in line]
    assert errors == []
    notes = [line for line in lines if "Revealed type is" in line]
    assert len(notes) == len(REVEALED)
    for note, (name, expected) in zip(notes, REVEALED.items()):
        assert expected in note, (name, note)


def test_misuse_is_caught(mypy_output: dict[str, list[str]]) -> None:
    source = MISUSE.read_text(encoding="utf-8").splitlines()
    expected = {
        number: match.group(1)
        for number, text in enumerate(source, start=1)
        if (match := re.search(r"# error: ([a-z-]+)$", text))
    }
    assert len(expected) == 5
    found: dict[int, set[str]] = {}
    for line in mypy_output[MISUSE.name]:
        match = re.search(r":(\d+): error: .*\[([a-z-]+)\]$", line)
        if match:
            found.setdefault(int(match.group(1)), set()).add(match.group(2))
    assert set(found) == set(expected), mypy_output[MISUSE.name]
    for number, code in expected.items():
        assert code in found[number], (number, found[number])
