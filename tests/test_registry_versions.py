"""Versions of one tool side by side: `register_tool(version=...)`, the latest as the default,
`pinned(...)` views, and what each export and dispatch sees."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolreg import (
    DuplicateToolError,
    ToolDefinitionError,
    ToolRegistry,
    UsageError,
    combined,
    filtered,
    prefixed,
)
from toolreg.definition.versions import version_key
from toolreg.errors import ToolNotFoundError
from toolreg.toolsets import pinned, searchable, versions_of


def search_v1(q: str) -> str:
    """Search the catalog by words. Use it when the user asks for a product."""
    return f"v1:{q}"


def search_v2(q: str, limit: int = 5) -> str:
    """Search the catalog by words, `limit` hits at most. Use it when the user asks."""
    return f"v2:{q}:{limit}"


def search_v3(query: str) -> str:
    """Search the catalog (v3). Use it when the user asks for a product."""
    return f"v3:{query}"


def registry_of(*versions: tuple[Any, str]) -> ToolRegistry:
    registry = ToolRegistry()
    for function, version in versions:
        registry.register_tool(function, name="search", version=version)
    return registry


def test_versions_sit_side_by_side_and_the_latest_is_the_default() -> None:
    registry = registry_of((search_v2, "2"), (search_v1, "1"))  # registered out of order
    assert [t.version for t in registry.versions("search")] == ["2", "1"]
    assert registry.get("search").version == "2"  # type: ignore[union-attr]
    assert [t.name for t in registry.tools()] == ["search"]  # listed once
    assert registry.dispatch_tool("search", {"q": "x"}).content == "v2:x:5"
    assert registry.get("search", version="1").function is search_v1  # type: ignore[union-attr]
    assert registry.get("search", version="1.0") is registry.get("search", version="1")
    assert registry.get("search", version="7") is None
    # the exports are the default's: v2 has `limit`
    (exported,) = registry.get_tools()
    assert set(exported["function"]["parameters"]["properties"]) == {"q", "limit"}


def test_a_later_version_becomes_the_default_and_exports_follow() -> None:
    registry = registry_of((search_v1, "1"))
    before = registry.get_tools()
    revision = registry.revision
    registry.register_tool(search_v2, name="search", version="1.1")
    assert registry.revision > revision
    assert registry.get_tools() != before
    assert registry.dispatch_tool("search", {"q": "x"}).content == "v2:x:5"


def test_the_same_version_twice_is_a_duplicate_naming_the_version() -> None:
    registry = registry_of((search_v1, "1"))
    with pytest.raises(DuplicateToolError, match=r"version '1\.0' of the tool 'search'") as caught:
        registry.register_tool(search_v2, name="search", version="1.0")  # 1.0 is 1
    assert caught.value.version == "1.0"
    assert "later version" in str(caught.value)
    registry.register_tool(search_v2, name="search", version="1", replace=True)
    assert registry.dispatch_tool("search", {"q": "x"}).content == "v2:x:5"
    assert len(registry.versions("search")) == 1


@pytest.mark.parametrize(
    ("first", "second", "words"),
    [
        (None, "2", "registered without a version"),
        ("1", None, r"registered with versions \(1\); this one has none"),
    ],
)
def test_a_name_has_versions_or_none(first: str | None, second: str | None, words: str) -> None:
    registry = ToolRegistry()
    registry.register_tool(search_v1, name="search", version=first)
    with pytest.raises(ToolDefinitionError, match=words) as caught:
        registry.register_tool(search_v2, name="search", version=second)
    assert "search_v2" in str(caught.value)  # names the function
    assert caught.value.fix
    # replace=True replaces the name's tools, whichever they were
    registry.register_tool(search_v2, name="search", version=second, replace=True)
    assert [t.version for t in registry.versions("search")] == [second]


@pytest.mark.parametrize("bad", ["beta", "2.0rc1", "1-2", "", "v", "1..2", "2025-13-01", True, 1.5])
def test_a_version_that_is_none_of_the_rules_is_refused(bad: object) -> None:
    with pytest.raises(ToolDefinitionError, match="is not a version") as caught:
        ToolRegistry().register_tool(search_v1, version=bad)  # type: ignore[arg-type]
    assert "2025-01-31" in str(caught.value)  # the rule, in words


def test_a_whole_number_is_a_version() -> None:
    registry = ToolRegistry()
    registry.register_tool(search_v1, name="search", version=3)
    assert registry.get("search").version == "3"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("1", "2"),
        ("1.9", "1.10"),
        ("v2", "3"),
        ("2", "2.0.1"),
        ("99", "2024-01-01"),
        ("2024-12-31", "2025-01-01"),
    ],
)
def test_the_order_of_versions(older: str, newer: str) -> None:
    registry = ToolRegistry()
    registry.register_tool(search_v2, name="search", version=newer)
    registry.register_tool(search_v1, name="search", version=older)
    assert registry.get("search").version == newer  # type: ignore[union-attr]


@given(st.lists(st.integers(0, 50), min_size=1, max_size=4), st.integers(0, 3))
def test_trailing_zeros_and_a_v_name_the_same_version(numbers: list[int], zeros: int) -> None:
    text = ".".join(map(str, numbers))
    padded = "v" + text + ".0" * zeros
    assert version_key(text) == version_key(padded)


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=3),
    st.lists(st.integers(0, 30), min_size=1, max_size=3),
)
def test_numbers_compare_number_by_number(a: list[int], b: list[int]) -> None:
    def trimmed(numbers: list[int]) -> list[int]:
        out = list(numbers)
        while len(out) > 1 and out[-1] == 0:
            out.pop()
        return out

    key_a, key_b = version_key(".".join(map(str, a))), version_key(".".join(map(str, b)))
    assert key_a is not None
    assert key_b is not None
    assert (key_a < key_b) == (trimmed(a) < trimmed(b))


def test_unregister_one_version_or_all() -> None:
    registry = registry_of((search_v1, "1"), (search_v2, "2"), (search_v3, "3"))
    assert registry.unregister("search", version="3").function is search_v3
    assert registry.get("search").version == "2"  # type: ignore[union-attr]
    with pytest.raises(ToolNotFoundError, match=r"no version '9' \(its versions: 2, 1\)"):
        registry.unregister("search", version="9")
    assert registry.unregister("search").version == "2"  # all of them; the latest returned
    assert "search" not in registry
    assert registry.versions("search") == []


def test_versions_without_a_name_lists_every_version_of_every_tool() -> None:
    registry = registry_of((search_v1, "1"), (search_v2, "2"))
    registry.register_tool(search_v3, name="other")
    assert [(t.name, t.version) for t in registry.versions()] == [
        ("search", "2"),
        ("search", "1"),
        ("other", None),
    ]


def test_search_finds_the_default_version() -> None:
    registry = registry_of((search_v1, "1"))
    registry.search_tools("catalog")  # the index exists now: it must follow the change
    registry.register_tool(search_v3, name="search", version="2")
    (found,) = registry.search_tools("catalog")
    assert found.version == "2"


# -- pinned views -------------------------------------------------------------------------------


def test_pinned_offers_exports_and_runs_the_pinned_version() -> None:
    registry = registry_of((search_v1, "1"), (search_v2, "2"))
    registry.register_tool(search_v3, name="other")
    view = pinned(registry, {"search": "1"})
    assert [(t.name, t.version) for t in view.tools()] == [("search", "1"), ("other", None)]
    assert view.dispatcher.dispatch_tool("search", {"q": "x"}).content == "v1:x"
    refused = view.dispatcher.dispatch_tool("search", {"q": "x", "limit": 2})
    assert refused.error_kind == "invalid_arguments"  # v1 has no limit
    assert [t.version for t in versions_of(view, "search")] == ["1"]
    assert registry.dispatch_tool("search", {"q": "x"}).content == "v2:x:5"  # unchanged


def test_pinned_composes_with_every_view() -> None:
    registry = registry_of((search_v1, "1"), (search_v2, "2"))
    shop = prefixed(registry, "shop")
    assert [t.version for t in versions_of(shop, "shop_search")] == ["2", "1"]
    view = pinned(shop, {"shop_search": "1"})
    assert view.dispatcher.dispatch_tool("shop_search", {"q": "x"}).content == "v1:x"
    assert view.get("shop_search") is view.get("shop_search")  # one object, not one per call
    for other in (
        filtered(registry, names=["search"]),
        combined(registry),
        searchable(registry, 2),
    ):
        assert [t.version for t in versions_of(other, "search")] == ["2", "1"]
        one = pinned(other, {"search": "1"})
        assert one.dispatcher.dispatch_tool("search", {"q": "y"}).content == "v1:y"


@pytest.mark.parametrize(
    ("pins", "words"),
    [
        ({"nope": "1"}, "has no tool 'nope'"),
        ({"search": "7"}, r"no version '7' \(its versions: 2, 1\)"),
        ({"search": "beta"}, "is not a version"),
        ({}, "maps tool names to versions"),
    ],
)
def test_pinned_refuses_what_is_not_there(pins: dict[str, str], words: str) -> None:
    registry = registry_of((search_v1, "1"), (search_v2, "2"))
    with pytest.raises(UsageError, match=words):
        pinned(registry, pins)


def test_a_pinned_version_that_goes_away_is_not_replaced(caplog: pytest.LogCaptureFixture) -> None:
    registry = registry_of((search_v1, "1"), (search_v2, "2"))
    view = pinned(registry, {"search": "1"})
    registry.unregister("search", version="1")
    with caplog.at_level(logging.WARNING, "toolreg.toolsets"):
        assert view.tools() == []
        assert view.get("search") is None
        answer = view.dispatcher.dispatch_tool("search", {"q": "x"})
    assert answer.error_kind == "unknown_tool"  # never version 2 in its place
    assert sum("is gone" in r.getMessage() for r in caplog.records) == 1  # said once
    registry.register_tool(search_v1, name="search", version="1")
    assert view.dispatcher.dispatch_tool("search", {"q": "x"}).content == "v1:x"
