"""`get_tools(format)` and the observation builders pass straight to the openai SDK under
`mypy --strict` (issue 10, item 4): one mypy run that follows the SDK's own types."""

from __future__ import annotations

import ast
import inspect
import re

import pytest
from _mypy import HERE, STRICT, check_marked_errors, run_mypy

from toolreg import ToolRegistry
from toolreg.formats import FORMATS

pytest.importorskip("mypy.api")

CLEAN = HERE / "typed_exports.py"
MISUSE = HERE / "typed_exports_misuse.py"

_SDK_TOOL = "openai.types.chat.chat_completion_function_tool_param.ChatCompletionFunctionToolParam"
_SDK_FUNCTION = "TypedDict(openai.types.shared_params.function_definition.FunctionDefinition"
# What each reveal_type line of typed_exports.py must show, in order: the type, then some of
# its items (mypy prints a TypedDict's items in a different order when read from its cache).
REVEALED: list[tuple[str, ...]] = [
    (f"list[TypedDict({_SDK_TOOL}, ", f"'function': {_SDK_FUNCTION}"),  # get_tools()
    (f"list[TypedDict({_SDK_TOOL}, ",),  # get_tools("openai")
    ("list[TypedDict(openai.types.responses.function_tool_param.FunctionToolParam, ",),
    (
        "list[TypedDict(toolreg.formats.anthropic.ToolDefinition, ",
        "'name': str",
        "'description'?: str",
        "'input_schema': dict[str, Any]",
        "'strict'?: bool",
    ),
    ("list[TypedDict(toolreg.formats.gemini.ToolDefinition, ", "'parameters'?: dict[str, Any]"),
    ("list[TypedDict(toolreg.formats.mcp.ToolDefinition, ", "'inputSchema': dict[str, Any]"),
    ("list[TypedDict(toolreg.formats.chatglm3.ToolDefinition, ", "'parameters': dict[str, Any]"),
    ("list[TypedDict(openai.types.chat.completion_create_params.Function, ",),
    (f"list[TypedDict({_SDK_TOOL}, ",),  # toolreg.get_tools(names=[...])
    (
        "-> TypedDict(openai.types.chat.chat_completion_tool_message_param."
        "ChatCompletionToolMessageParam, ",
        "'role': Literal['tool']",
    ),
    ("-> TypedDict(openai.types.responses.response_input_param.FunctionCallOutput, ",),
    (
        "-> TypedDict(toolreg.formats.anthropic.Observation, ",
        "'type': Literal['tool_result']",
        "'is_error': bool",
    ),
]

# Strict, like a careful user's project; unlike test_decorator_types.py nothing is skipped:
# the point is the openai SDK's own param types.
CONFIG = STRICT

# A cache of its own inside the project's (git-ignored) .mypy_cache: analysing the SDK takes
# a while once, later runs a few seconds.
CACHE = "typing-exports"


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One mypy run over both files; its lines grouped by file name."""
    return run_mypy(CONFIG, CACHE, [CLEAN, MISUSE], tmp_path_factory.mktemp("mypy"))


@pytest.mark.slow
def test_exports_pass_straight_to_the_sdk(mypy_output: dict[str, list[str]]) -> None:
    lines = mypy_output[CLEAN.name]
    assert [line for line in lines if ": error:" in line] == []
    notes = [line for line in lines if "Revealed type is" in line]
    assert len(notes) == len(REVEALED), notes
    for note, expected in zip(notes, REVEALED):
        assert all(part in note for part in expected), (expected, note)


@pytest.mark.slow
def test_wrong_exports_are_caught(mypy_output: dict[str, list[str]]) -> None:
    check_marked_errors(MISUSE, mypy_output[MISUSE.name], 11)


def _overloaded_format_names() -> list[str]:
    """The format names `ToolRegistry.get_tools` has a typed overload for, from its source."""
    tree = ast.parse(inspect.getsource(ToolRegistry))
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.name != "get_tools":
            continue
        if not any(ast.unparse(d) == "overload" for d in node.decorator_list):
            continue
        annotation = ast.unparse(node.args.args[1].annotation or ast.Constant(None))
        if match := re.fullmatch(r"Literal\['(\w+)'\]", annotation):
            names.append(match.group(1))
    return names


def test_every_format_has_a_typed_overload() -> None:
    names = _overloaded_format_names()
    assert sorted(names) == sorted(FORMATS)
    assert len(REVEALED) == len(FORMATS) + 5  # one reveal per format, and five more


def test_typed_builders_write_the_same_dicts() -> None:
    # The module functions are what `get_tools` and the loop use: the types changed, not them.
    reg = ToolRegistry()

    @reg.register_tool(name="noop", title="No-op")
    def noop() -> None:
        """Do nothing."""

    assert reg.get_tools("mcp")[0] == {
        "name": "noop",
        "title": "No-op",
        "description": "Do nothing.",
        "inputSchema": reg["noop"].parameters,
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "title": "No-op"},
    }
    assert list(reg.get_tools("mcp")[0]) == [
        "name",
        "title",
        "description",
        "inputSchema",
        "annotations",
    ]
    assert list(reg.get_tools("responses")[0]) == [
        "type",
        "name",
        "description",
        "parameters",
        "strict",
    ]
