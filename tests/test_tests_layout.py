"""The test tree mirrors the package: the tests of `toolreg/<sub>/` are in `tests/<sub>/`, so a
contributor finds a module's tests by its path (docs/contributing.md, "Tests")."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "toolreg"
NOT_PACKAGES = {
    "docs": "the documentation, README and samples",
    "data": "documents the tests read",
    "typing": "what mypy says of typed uses",
}
# Tests of toolreg's top-level modules and of the package as a whole stay at the top.
TOP = {
    "package",
    "wheel",
    "benchmarks",
    "errors",
    "suite",
    "tests",
    "types",
    "telemetry",
    "services",
}


def test_every_test_folder_is_a_subpackage_of_toolreg_or_says_what_it_holds() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith("_")}
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    strays = sorted(folders - subpackages - set(NOT_PACKAGES))
    assert strays == [], f"tests/{strays[0]}/ is no toolreg subpackage: move its tests"


def test_a_test_file_at_the_top_tests_a_top_level_module_or_the_whole_package() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} | TOP
    misplaced = [p.name for p in TESTS.glob("test_*.py") if p.stem.split("_")[1] not in modules]
    assert misplaced == [], f"move {misplaced} into the tests/ folder of its subpackage"


def test_test_file_names_are_unique_across_folders() -> None:
    """pytest imports test modules by file name (no __init__.py: a tests/mcp package would
    hide the SDK's `mcp`), so two files of one name would collide."""
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names))
