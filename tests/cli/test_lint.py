"""`toolreg lint` on descriptions that are not in English (ChatGLM3's users write Chinese)."""

from __future__ import annotations

from typing import Annotated

from toolreg import Param, ToolRegistry
from toolreg.cli.lint import lint_registry


def codes(reg: ToolRegistry) -> list[tuple[str, str]]:
    return [(f.tool, f.code) for f in lint_registry(reg)]


def test_a_chinese_description_with_a_usage_hint_passes() -> None:
    reg = ToolRegistry()

    @reg.register_tool(description="查询城市的实时天气。当用户询问天气、气温或是否下雨时使用。")
    def get_weather(city: str) -> str:
        return city

    @reg.register_tool(description="记录一笔支出，用于用户说花了多少钱的时候。")
    def record_expense(amount: float) -> str:
        return str(amount)

    @reg.register_tool(description="天气。")
    def lookup(city: str) -> str:
        return city

    found = codes(reg)
    assert ("get_weather", "no-usage-hint") not in found
    assert ("record_expense", "no-usage-hint") not in found
    assert ("lookup", "no-usage-hint") in found  # two characters say nothing about when


def test_a_chinese_description_without_a_usage_hint_is_flagged() -> None:
    reg = ToolRegistry()

    @reg.register_tool(description="获取当前的日期和时间，精确到秒，包括时区信息。")
    def now() -> str:
        return ""

    assert ("now", "no-usage-hint") in codes(reg)


def test_near_identical_chinese_descriptions_overlap() -> None:
    reg = ToolRegistry()

    @reg.register_tool(description="查询订单的状态和物流信息。当用户询问订单时使用。")
    def order_status(order_id: str) -> str:
        return order_id

    @reg.register_tool(description="查询订单的状态与物流信息。当用户询问订单时使用。")
    def order_info(order_id: str) -> str:
        return order_id

    @reg.register_tool(description="取消用户的会员订阅并退款。当用户明确要求退订时使用。")
    def cancel_subscription(user_id: str) -> str:
        return user_id

    overlaps = [(f.tool, f.message) for f in lint_registry(reg) if f.code == "overlap"]
    assert len(overlaps) == 1
    assert overlaps[0][0] == "order_status"
    assert "'order_info'" in overlaps[0][1]


def test_english_still_works_the_same() -> None:
    reg = ToolRegistry()

    @reg.register_tool(description="Get the weather of a city. Use it when the user asks.")
    def get_weather(city: str) -> str:
        return city

    @reg.register_tool(description="Weather.")
    def weather(city: str) -> str:
        return city

    found = codes(reg)
    assert ("get_weather", "no-usage-hint") not in found
    assert ("weather", "no-usage-hint") in found


def test_an_open_schema_is_not_blamed_on_kwargs_it_does_not_have() -> None:
    """A tool given as a schema (register_schema, a mounted tool) has no Python signature."""
    reg = ToolRegistry()
    reg.register_schema(
        "lookup",
        {"type": "object", "properties": {"q": {"type": "string"}}},
        lambda **kwargs: kwargs,
        description="Look a word up. Use it when the user asks what a word means.",
    )
    (message,) = [m for code, m in codes_and_messages(reg) if code == "not-strict"]
    assert "**kwargs" not in message
    assert message == (
        "cannot be strict: the arguments object is open (its schema does not set "
        "additionalProperties: false), which lets the model send undeclared keys (at (root))"
    )


def test_a_function_with_kwargs_is_still_named_for_them() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def lookup(q: str, **extra: str) -> str:
        """Look a word up. Use it when the user asks what a word means."""
        return q

    (message,) = [m for code, m in codes_and_messages(reg) if code == "not-strict"]
    assert "the function takes **kwargs" in message


def codes_and_messages(reg: ToolRegistry) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in lint_registry(reg)]


def _catalog(*tools: tuple[str, str]) -> ToolRegistry:
    reg = ToolRegistry()
    for name, description in tools:
        reg.register_schema(name, {"type": "object"}, lambda: "ok", description=description)
    return reg


def test_tools_a_search_cannot_tell_apart_are_flagged_in_any_language() -> None:
    reg = _catalog(
        ("fetch_page", "Download a web page and return its text."),
        ("get_page", "Download a web page and return its text, with links."),
        ("send_mail", "Send an email message to a person."),
        ("天气", "查询城市的天气预报和气温。"),
        ("天气预报", "查询城市的天气预报和气温，以及降雨。"),
        ("予約", "レストランの予約を取ります。"),
        ("予約確認", "レストランの予約を取ります。確認も。"),
    )
    flagged = {f.tool: f.message for f in lint_registry(reg) if f.code == "indistinct"}
    assert set(flagged) == {"fetch_page", "天气", "予約"}
    assert "'天气预报' first" in flagged["天气"]
    assert flagged["fetch_page"] == (
        "a search for its description finds 'get_page' almost as well; say what makes each "
        "tool different"
    )


def test_distinct_tools_and_a_lone_tool_are_not_flagged() -> None:
    reg = _catalog(
        ("fetch_page", "Download a web page and return its text."),
        ("send_mail", "Send an email message to a person."),
        ("天气", "查询城市的天气预报和气温。"),
    )
    assert not [f for f in lint_registry(reg) if f.code == "indistinct"]
    lone = _catalog(("fetch_page", "Download a web page."))
    assert not [f for f in lint_registry(lone) if f.code == "indistinct"]


def test_a_pattern_re_could_backtrack_on_is_flagged_on_its_parameter() -> None:
    """`toolreg serve` puts a tool's patterns in front of any client: one that `re` can take
    minutes on is a way to freeze the server with one call."""
    reg = ToolRegistry()

    @reg.register_tool
    def find(
        code: Annotated[str, Param("The order code, e.g. ab-12.", pattern=r"^([a-z]+)+-\d+$")],
        zone: Annotated[str, Param("The zone, e.g. eu-1.", pattern=r"^[a-z]+-\d$")],
        amount: Annotated[str, Param("An amount.", pattern=r"^-?(\d+(\.\d*)?|\.\d+)$")],
    ) -> str:
        """Find an order by its code. Use it when the user gives an order code."""
        return code

    found = [f for f in lint_registry(reg) if f.code == "backtracking-pattern"]
    assert [(f.tool, f.parameter, f.severity) for f in found] == [("find", "code", "warning")]
    assert found[0].message.startswith('the pattern "^([a-z]+)+-\\\\d+$" could backtrack')
    assert "a model or an MCP client can make one call take minutes" in found[0].message
