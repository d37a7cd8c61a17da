"""A function registered again from the same place (a notebook cell run again, a reloaded
module) replaces its tool with a warning; a different function under a taken name is still a
`DuplicateToolError`.

"The same place" is the function's module, qualified name, file and first line. A notebook
cell is compiled under a file name of its own (Jupyter's kernel names it after the cell's
text), so a cell is played here by source compiled under a made-up file name and run in a
module namespace, as the kernel runs it in `__main__`.
"""

from __future__ import annotations

import types
import warnings

import pytest

from toolreg import DuplicateToolError, ToolRegistry

CELL = """
@registry.register_tool
def lookup(sku: str) -> str:
    \"\"\"Look a product up by its SKU.\"\"\"
    return f"{VERSION}: {sku}"
"""

CALLED = """
def lookup(sku: str) -> str:
    \"\"\"Look a product up by its SKU.\"\"\"
    return f"{VERSION}: {sku}"

registry.register_tool(lookup)
"""

WITH_OPTIONS = """
@registry.register_tool(read_only=True)
def lookup(sku: str) -> str:
    \"\"\"Look a product up by its SKU.\"\"\"
    return f"{VERSION}: {sku}"
"""


@pytest.fixture
def notebook() -> types.ModuleType:
    """A module namespace standing in for the kernel's `__main__`, with a registry."""
    module = types.ModuleType("notebook_main")
    module.registry = ToolRegistry()  # type: ignore[attr-defined]
    return module


def run_cell(module: types.ModuleType, source: str, cell: str, version: int) -> None:
    module.VERSION = version  # type: ignore[attr-defined]
    exec(compile(source, cell, "exec"), module.__dict__)


@pytest.mark.parametrize("source", [CELL, CALLED, WITH_OPTIONS], ids=["bare", "call", "options"])
def test_a_cell_run_again_replaces_its_tool_with_a_warning(
    notebook: types.ModuleType, source: str
) -> None:
    registry: ToolRegistry = notebook.registry  # type: ignore[attr-defined]
    run_cell(notebook, source, "/tmp/ipykernel_1/2417.py", 1)
    assert registry.dispatch_tool("lookup", '{"sku": "a1"}').content == "1: a1"
    revision = registry.revision
    with pytest.warns(UserWarning, match="registered again") as caught:
        run_cell(notebook, source, "/tmp/ipykernel_1/2417.py", 2)
    assert registry.names() == ["lookup"]
    assert registry.dispatch_tool("lookup", '{"sku": "a1"}').content == "2: a1"  # the new one
    assert registry.revision > revision  # exports are rebuilt
    [warning] = caught.list
    assert str(warning.message) == (
        "register_tool: notebook_main.lookup was registered again from the same place; the "
        "new definition replaces the tool 'lookup' (a notebook cell run again, a reloaded "
        "module). replace=True says so and silences this warning"
    )
    # it points at the cell's line that registers, not into toolreg
    assert warning.filename == "/tmp/ipykernel_1/2417.py"


def test_replace_true_replaces_without_a_warning(notebook: types.ModuleType) -> None:
    source = CELL.replace("register_tool\n", "register_tool(replace=True)\n")
    run_cell(notebook, source, "cell.py", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_cell(notebook, source, "cell.py", 2)


def test_a_function_of_the_same_name_from_another_cell_is_an_error(
    notebook: types.ModuleType,
) -> None:
    registry: ToolRegistry = notebook.registry  # type: ignore[attr-defined]
    run_cell(notebook, CELL, "/tmp/ipykernel_1/2417.py", 1)
    with pytest.raises(DuplicateToolError, match="a tool named 'lookup' is already registered"):
        run_cell(notebook, CELL, "/tmp/ipykernel_1/9031.py", 2)  # another cell's text
    assert registry["lookup"].function.__code__.co_filename == "/tmp/ipykernel_1/2417.py"


def test_a_function_of_the_same_name_further_down_the_same_file_is_an_error(
    notebook: types.ModuleType,
) -> None:
    # the same module, name and file, another line: two definitions, not one run twice
    with pytest.raises(DuplicateToolError):
        run_cell(notebook, CELL + "\n" + CELL, "app.py", 1)


def test_a_function_of_the_same_name_from_another_module_is_an_error(
    notebook: types.ModuleType,
) -> None:
    run_cell(notebook, CELL, "app.py", 1)
    other = types.ModuleType("other_module")
    other.registry = notebook.registry  # type: ignore[attr-defined]
    with pytest.raises(DuplicateToolError):
        run_cell(other, CELL, "app.py", 1)


def test_closures_of_one_factory_are_different_functions() -> None:
    # one place in the source, two functions (a factory's): never taken for a re-run
    registry = ToolRegistry()

    def make(answer: str) -> object:
        def ping() -> str:
            """Answer."""
            return answer

        return ping

    registry.register_tool(make("a"))  # type: ignore[arg-type]
    with pytest.raises(DuplicateToolError):
        registry.register_tool(make("b"))  # type: ignore[arg-type]


def test_a_method_of_another_instance_is_a_different_function() -> None:
    class Shop:
        def __init__(self, name: str) -> None:
            self.name = name

        def stock(self, sku: str) -> str:
            """The stock of a product."""
            return f"{self.name}: {sku}"

    registry = ToolRegistry()
    registry.register_tool(Shop("north").stock)
    with pytest.raises(DuplicateToolError):
        registry.register_tool(Shop("south").stock)
