"""Anthropic's tool search in the exported definitions (issue 20, item 2): `defer_loading`,
the server's search tools, and `tool_reference` results, checked key by key against the
`anthropic` SDK's own param types."""

from __future__ import annotations

from typing import Any

import pytest
from _sdk_shapes import conforms

from toolreg import ToolRegistry, UsageError
from toolreg.formats import anthropic

sdk = pytest.importorskip("anthropic.types")


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool(examples=[{"city": "Paris"}])
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return {"city": city}

    @reg.register_tool(defer_loading=True, strict=True)
    def create_github_issue(repository: str, title: str) -> str:
        """Open a new issue in a GitHub repository."""
        return "#42"

    @reg.register_tool(defer_loading=True, name="train_ticket_cn")
    def train_ticket(出发地: str, 目的地: str) -> str:
        """查询火车票余票和票价。"""
        return "有票"

    return reg


def test_deferred_tools_carry_defer_loading(registry: ToolRegistry) -> None:
    exported = {d["name"]: d for d in registry.get_tools("anthropic")}
    assert exported["create_github_issue"]["defer_loading"] is True
    assert exported["train_ticket_cn"]["defer_loading"] is True
    assert "defer_loading" not in exported["get_weather"]
    for definition in exported.values():
        assert conforms(definition, sdk.ToolParam) == []


@pytest.mark.parametrize(
    ("kind", "sdk_type"),
    [
        ("bm25", "ToolSearchToolBm25_20251119Param"),
        ("regex", "ToolSearchToolRegex20251119Param"),
    ],
)
def test_the_server_search_tools(kind: Any, sdk_type: str) -> None:
    tool = anthropic.tool_search_tool(kind)
    assert conforms(tool, getattr(sdk, sdk_type)) == []
    assert tool["name"] == f"tool_search_tool_{kind}"
    assert tool["type"] == f"tool_search_tool_{kind}_20251119"
    assert anthropic.tool_search_tool() == anthropic.tool_search_tool("bm25")


@pytest.mark.parametrize("kind", ["BM25", "semantic", None, 3])
def test_an_unknown_search_tool_is_a_usage_error(kind: Any) -> None:
    with pytest.raises(UsageError, match="choose 'bm25' or 'regex'"):
        anthropic.tool_search_tool(kind)


def test_the_search_tools_are_copies() -> None:
    anthropic.tool_search_tool()["name"] = "changed"  # type: ignore[typeddict-item]
    assert anthropic.tool_search_tool()["name"] == "tool_search_tool_bm25"


def test_an_own_search_answers_with_tool_references(registry: ToolRegistry) -> None:
    found = [t.name for t in registry.search_tools("火车票", limit=1)]
    assert found == ["train_ticket_cn"]
    answer = anthropic.tool_references("toolu_1", found)
    assert conforms(answer, sdk.ToolResultBlockParam) == []
    assert answer["content"] == [{"type": "tool_reference", "tool_name": "train_ticket_cn"}]
    for block in answer["content"]:
        assert conforms(block, sdk.ToolReferenceBlockParam) == []


def test_an_own_search_that_found_nothing_says_so(registry: ToolRegistry) -> None:
    answer = anthropic.tool_references("toolu_1", [])
    assert conforms(answer, sdk.ToolResultBlockParam) == []
    assert answer["content"] == [{"type": "text", "text": "No tool matches. Try other words."}]


def test_every_tool_of_a_request_is_one_the_sdk_validates(registry: ToolRegistry) -> None:
    """The whole `tools=` list, validated by pydantic against the SDK's `ToolUnionParam`."""
    pydantic = pytest.importorskip("pydantic")
    union = pydantic.TypeAdapter(sdk.ToolUnionParam)
    tools: list[Any] = [*registry.get_tools("anthropic"), anthropic.tool_search_tool("regex")]
    for tool in tools:  # a tool no member of the union accepts raises ValidationError
        validated = union.validate_python(tool)
        assert {k: validated[k] for k in ("name", "type") if k in tool} == {
            k: tool[k] for k in ("name", "type") if k in tool
        }
        assert validated.get("defer_loading") == tool.get("defer_loading")
