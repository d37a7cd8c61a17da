"""`toolreg.compat.chatglm3`: ChatGLM3's `tool_registry` surface, and its demo, on toolreg."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from types import ModuleType
from typing import Annotated

import pytest

from toolreg import Conversation, DuplicateToolError, ToolResult
from toolreg.cli.demo import run_demo
from toolreg.compat import chatglm3
from toolreg.testing import ScriptedServer

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "chatglm3_tools.py"


@pytest.fixture
def demo(monkeypatch: pytest.MonkeyPatch, empty_chatglm3_registry: None) -> ModuleType:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TOOLREG_MODEL", raising=False)
    return fresh(SAMPLE)


def fresh(path: Path) -> ModuleType:
    """The sample run again as a new module: its tools are registered in ChatGLM3's
    module-level registry by this test, whatever earlier tests of this process did there
    (`load_file` would hand back the module a test loaded before)."""
    spec = importlib.util.spec_from_file_location("chatglm3_sample", path)  # one place
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_get_tools_is_in_chatglm3s_own_shape(demo: ModuleType) -> None:
    tools = chatglm3.get_tools()
    assert tools["random_number_generator"] == {
        "name": "random_number_generator",
        "description": "Generates a random number x, s.t. range[0] <= x < range[1].\n"
        "Use it when the user asks for a random number.",
        "params": [
            {
                "name": "seed",
                "description": "The random seed used by the generator",
                "type": "int",
                "required": True,
            },
            {
                "name": "range",
                "description": "The range of the generated numbers",
                "type": "tuple[int, int]",
                "required": True,
            },
        ],
    }
    tools["get_weather"]["params"].clear()  # a copy: the registry is not changed
    assert chatglm3.get_tools()["get_weather"]["params"][0]["name"] == "city_name"


def test_dispatch_tool_returns_the_observation_as_text(demo: ModuleType) -> None:
    assert chatglm3.dispatch_tool("get_weather", {"city_name": "北京"}) == (
        "{'temperature': '18', 'description': 'Sunny', 'humidity': '30'}"
    )
    assert chatglm3.dispatch_tool("random_number_generator", {"seed": 7, "range": [1, 10]}) == "6"
    assert chatglm3.dispatch_tool("get_wether", {}).startswith("Unknown tool 'get_wether'.")
    assert chatglm3.dispatch_tool("random_number_generator", {"seed": "x"}).startswith(
        "Invalid arguments for tool 'random_number_generator':"
    )
    failed = chatglm3.dispatch_tool("random_number_generator", {"seed": 1, "range": [5, 1]})
    assert failed == "Tool 'random_number_generator' failed: ValueError: empty range (5, 1)"


def test_str_of_a_result_is_its_content() -> None:
    result = ToolResult("t", None, True, "the content")
    assert str(result) == "the content"
    assert "ToolResult(" in repr(result)


def test_registering_again_replaces_and_a_new_function_under_a_taken_name_fails(
    demo: ModuleType,
) -> None:
    fresh(SAMPLE)  # the module run a second time registers its functions again
    assert sorted(chatglm3.get_tools()) == ["get_weather", "random_number_generator"]

    def get_weather(city_name: Annotated[str, "City", True]) -> str:
        """Another get_weather."""
        return city_name

    with pytest.raises(DuplicateToolError):
        chatglm3.register_tool(get_weather)


def test_the_demo_runs_the_chatglm3_dialect_end_to_end(demo: ModuleType) -> None:
    out = io.StringIO()
    reply = run_demo(demo.DEMO, out=out)
    assert reply.text == "北京今天晴，18°C，湿度 30%。"
    with ScriptedServer(demo.DEMO.script) as server:
        chat = Conversation(
            server.client(), server.model, registry=chatglm3.registry, dialect="chatglm3"
        )
        chat.send("北京今天天气怎么样？")
        second = server.requests[1]["messages"]
    assert second[-2]["function_call"]["name"] == "get_weather"
    assert second[-1] == {
        "role": "observation",
        "content": "{'temperature': '18', 'description': 'Sunny', 'humidity': '30'}",
    }
    assert [t["name"] for t in server.requests[0]["tools"]] == [
        "random_number_generator",
        "get_weather",
    ]
