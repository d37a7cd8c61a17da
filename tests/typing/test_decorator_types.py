"""`@register_tool` and `@register_tool(...)` keep the function's type (mypy --strict)."""

from __future__ import annotations

import pytest
from _mypy import HERE, STRICT, check_marked_errors, run_mypy

pytest.importorskip("mypy.api")

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
CONFIG = (
    STRICT
    + """
[mypy-openai.*,httpx.*,pydantic.*,pydantic_core.*,jsonschema.*,docstring_parser.*]
follow_imports = skip
"""
)


# A cache of its own inside the project's (git-ignored) .mypy_cache: later runs take a second.
CACHE = "typing-test"


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One mypy run over both files; its lines grouped by file name."""
    return run_mypy(CONFIG, CACHE, [CLEAN, MISUSE], tmp_path_factory.mktemp("mypy"))


def test_registered_functions_keep_their_types(mypy_output: dict[str, list[str]]) -> None:
    lines = mypy_output[CLEAN.name]
    errors = [line for line in lines if ": error:" in line]
    assert errors == []
    notes = [line for line in lines if "Revealed type is" in line]
    assert len(notes) == len(REVEALED)
    for note, (name, expected) in zip(notes, REVEALED.items()):
        assert expected in note, (name, note)


def test_misuse_is_caught(mypy_output: dict[str, list[str]]) -> None:
    check_marked_errors(MISUSE, mypy_output[MISUSE.name], 6)
