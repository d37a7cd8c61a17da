"""`ToolRegistry.search_tools` and the index behind it: any language, kept up to date."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest

from toolreg import Tool, ToolRegistry, UsageError
from toolreg.toolsets.search import SearchIndex, identifier_terms, terms


def _catalog() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_weather(city: Annotated[str, "City name"], unit: Literal["c", "f"] = "c") -> str:
        """Current weather of a city: temperature, rain and wind."""
        return "sunny"

    @registry.register_tool
    def createGitHubIssue(repository: str, title: str, body: str = "") -> str:
        """Open a new issue in a repository."""
        return "#1"

    @registry.register_tool
    def send_email(to: Annotated[str, "Recipient address"], subject: str, text: str) -> str:
        """Send an email message."""
        return "sent"

    @registry.register_tool
    def list_files(path: Annotated[str, "Directory to list"]) -> list[str]:
        """List the files in a directory."""
        return []

    @registry.register_tool(name="weather_forecast_cn")
    def forecast_cn(城市: Annotated[str, "城市名称，例如北京"], 天数: int = 3) -> str:
        """查询未来几天的天气预报，包括气温和降雨概率。"""
        return "晴"

    @registry.register_tool(name="train_ticket_cn")
    def ticket_cn(出发地: str, 目的地: str, 日期: Annotated[str, "出发日期"]) -> str:
        """查询火车票余票和票价。"""
        return "有票"

    @registry.register_tool(name="restaurant_jp")
    def restaurant_jp(エリア: Annotated[str, "検索するエリア（例：渋谷）"]) -> str:
        """近くのレストランを検索して、営業時間と予約の空きを調べます。"""
        return "ok"

    @registry.register_tool(name="translate_jp")
    def translate_jp(テキスト: str, 言語: Annotated[str, "翻訳先の言語"]) -> str:
        """文章を別の言語に翻訳します。"""
        return "ok"

    return registry


def _names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("what's the weather in Paris?", "get_weather"),
        ("open an issue on my github repo", "createGitHubIssue"),
        ("email Bob about the meeting", "send_email"),
        ("show the files in /tmp", "list_files"),
        ("北京明天会下雨吗？", "weather_forecast_cn"),
        ("帮我查一下去上海的火车票", "train_ticket_cn"),
        ("渋谷で予約できるレストランを探して", "restaurant_jp"),
        ("この文章を英語に翻訳して", "translate_jp"),
        ("ＷＥＡＴＨＥＲ ｉｎ Ｔｏｋｙｏ", "get_weather"),  # full-width: NFKC
    ],
)
def test_the_best_tool_comes_first_in_english_chinese_and_japanese(query: str, best: str) -> None:
    found = _catalog().search_tools(query)
    assert found[0].name == best, _names(found)


def test_a_query_without_a_shared_word_finds_nothing() -> None:
    registry = _catalog()
    assert registry.search_tools("zzzz qqqq") == []
    assert registry.search_tools("") == []
    assert registry.search_tools("the of and") == []  # function words only


def test_limit_caps_the_answer_and_zero_finds_nothing() -> None:
    registry = _catalog()
    assert len(registry.search_tools("weather files email issue", limit=2)) == 2
    assert registry.search_tools("weather", limit=0) == []
    with pytest.raises(UsageError, match="limit"):
        registry.search_tools("weather", limit=-1)
    with pytest.raises(UsageError, match="limit"):
        registry.search_tools("weather", limit=True)
    with pytest.raises(UsageError, match="query string"):
        registry.search_tools(None)  # type: ignore[arg-type]


def test_among_keeps_only_those_tools() -> None:
    registry = _catalog()
    found = registry.search_tools("weather", among=["weather_forecast_cn", "send_email"])
    assert _names(found) == ["weather_forecast_cn"]  # not get_weather
    assert registry.search_tools("weather", among=["send_email"]) == []
    assert registry.search_tools("weather", among=[]) == []


def test_names_are_split_on_separators_and_camel_case() -> None:
    assert identifier_terms("get_weather-now") == ["get", "weather", "now"]
    assert identifier_terms("HTTPServer.list/v2") == ["http", "server", "httpserver", "list", "v2"]
    assert identifier_terms("getWeather") == ["get", "weather", "getweather"]
    registry = _catalog()
    assert _names(registry.search_tools("git hub"))[0] == "createGitHubIssue"
    assert _names(registry.search_tools("github"))[0] == "createGitHubIssue"


def test_text_is_normalised_and_stemmed_lightly() -> None:
    assert terms("Ｆｉｌｅｓ LISTING Created boxes") == ["file", "listing", "created", "box"]
    assert terms("repositories addresses") == ["repository", "address"]
    assert terms("status analysis") == ["status", "analysis"]  # not plurals
    assert terms("ß") == terms("ss")  # casefold, not lower


def test_cjk_runs_become_character_pairs() -> None:
    assert terms("天气预报")[:3] == ["天气", "气预", "预报"]
    assert "天气" in terms("今天天气")
    assert "气" in terms("今天天气")
    assert terms("날씨 예보") == ["날씨", "예보"]  # Hangul: pairs of each word


def test_parameter_names_and_descriptions_are_searched() -> None:
    registry = _catalog()
    assert _names(registry.search_tools("recipient"))[0] == "send_email"
    assert _names(registry.search_tools("出发日期"))[0] == "train_ticket_cn"
    assert _names(registry.search_tools("repository"))[0] == "createGitHubIssue"


def test_the_index_follows_register_and_unregister() -> None:
    registry = _catalog()
    assert registry.search_tools("invoice") == []  # builds the index

    @registry.register_tool
    def pay_invoice(invoice_id: str) -> str:
        """Pay an invoice."""
        return "paid"

    assert _names(registry.search_tools("invoice")) == ["pay_invoice"]
    registry.unregister("pay_invoice")
    assert registry.search_tools("invoice") == []
    registry.register_tool(pay_invoice, description="Settle a bill.", replace=False)
    assert registry.search_tools("invoice") != []  # the parameter name still matches
    assert _names(registry.search_tools("bill")) == ["pay_invoice"]

    def settle(invoice_id: str) -> str:
        return "paid"

    registry.register_tool(settle, name="pay_invoice", description="Wire money.", replace=True)
    assert registry.search_tools("bill") == []
    assert _names(registry.search_tools("wire money")) == ["pay_invoice"]


def test_a_registration_before_any_search_builds_no_index() -> None:
    registry = _catalog()
    assert registry._index is None
    registry.search_tools("weather")
    assert registry._index is not None
    assert len(registry._index) == len(registry)


def test_a_ranker_orders_the_candidates() -> None:
    seen: list[tuple[str, list[str]]] = []

    def reverse(query: str, candidates: list[Tool]) -> list[Tool]:
        seen.append((query, [t.name for t in candidates]))
        return list(reversed(candidates))

    registry = _catalog()
    registry.ranker = reverse
    found = registry.search_tools("weather city", limit=2)
    assert seen[0][0] == "weather city"
    assert len(seen[0][1]) >= 2
    assert seen[0][1][0] == "get_weather"
    assert _names(found) == list(reversed(seen[0][1]))[:2]


def test_a_ranker_that_answers_something_else_is_a_usage_error() -> None:
    registry = ToolRegistry(ranker=lambda q, c: ["get_weather"])
    registry.register_tool(_catalog()["get_weather"].function)
    with pytest.raises(UsageError, match="not one of its candidates"):
        registry.search_tools("weather")
    registry.ranker = lambda q, c: None
    with pytest.raises(UsageError, match="returned NoneType"):
        registry.search_tools("weather")
    with pytest.raises(UsageError, match="not callable"):
        ToolRegistry(ranker="embeddings")  # type: ignore[arg-type]


def test_a_ranker_may_drop_candidates_and_duplicates_count_once() -> None:
    registry = _catalog()
    registry.ranker = lambda q, c: [c[0], c[0]]
    assert _names(registry.search_tools("weather")) == ["get_weather"]


def test_mounted_and_schema_tools_are_searched_like_any_other() -> None:
    registry = ToolRegistry()
    registry.register_schema(
        "kv.put",
        {
            "type": "object",
            "properties": {"key": {"type": "string", "description": "Where to store it"}},
        },
        lambda **kw: "ok",
        description="Store a value.",
    )
    assert _names(registry.search_tools("store")) == ["kv.put"]
    assert _names(registry.search_tools("put where")) == ["kv.put"]


# -- hostile input --------------------------------------------------------------------------


def test_a_huge_query_is_cut_and_still_answers() -> None:
    registry = _catalog()
    found = registry.search_tools("weather " + "x" * 5_000_000)
    assert _names(found)[:1] == ["get_weather"]
    many = " ".join(f"w{i}" for i in range(100_000)) + " weather"
    assert registry.search_tools(many) == []  # only the first 64 terms are read


def test_control_characters_and_lone_surrogates_do_not_break_it() -> None:
    registry = _catalog()
    assert registry.search_tools("\x00\ud800\u200b weather\x1b[31m")[0].name == "get_weather"


def test_an_enormous_description_is_indexed_in_bounded_time() -> None:
    index = SearchIndex()
    registry = ToolRegistry()
    registry.register_schema(
        "big", {"type": "object"}, lambda: None, description="tide " * 1_000_000
    )
    index.add(registry["big"])
    assert index.search("tide") == ["big"]


def test_a_term_cache_is_dropped_when_the_index_changes() -> None:
    registry = _catalog()
    first = registry.search_tools("weather")
    for i in range(30):
        registry.register_schema(f"weather_{i}", {"type": "object"}, lambda: None)
    second = registry.search_tools("weather", limit=40)
    assert len(second) == 32
    assert len(first) < len(second)
