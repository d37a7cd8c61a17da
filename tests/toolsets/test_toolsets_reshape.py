"""`reshaped(toolset, {name: Reshape(...)})`: a tool renamed, described, with arguments renamed,
hidden behind fixed or context-supplied values, narrowed. Every export format shows the
reshaped tool; dispatch validates against the reshaped schema, maps the call back and runs
the original's own checks; a narrowing that is not one fails at construction."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Annotated, Any

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolreg import (
    Arg,
    MissingContextError,
    Reshape,
    ToolContext,
    ToolDefinitionError,
    ToolRegistry,
    UsageError,
    pinned,
    prefixed,
    reshaped,
)
from toolreg.formats import FORMATS, export_tools
from toolreg.toolsets import versions_of
from toolreg.validation.narrowing import narrowing_problem


@dataclass
class Window:
    days: int

    def __post_init__(self) -> None:
        if self.days == 13:
            raise ValueError("13 days is not a window we keep")


def crm() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(read_only=True, examples=[{"cust_id": "c9", "rgn": "eu", "max": 3}])
    def get_orders_v2(
        cust_id: Annotated[str, "Customer id"],
        rgn: Annotated[str, "Region code"],
        max: Annotated[int, "Rows at most"] = 100,
        debug: bool = False,
    ) -> dict[str, Any]:
        """Get orders (internal)."""
        return {"cust_id": cust_id, "rgn": rgn, "max": max, "debug": debug}

    @registry.register_tool
    def ping() -> str:
        """Ping."""
        return "pong"

    @registry.register_tool
    def report(window: Window, title: str = "report") -> str:
        """Make a report."""
        return f"{title}: {window.days} days"

    return registry


ORDERS = Reshape(
    name="list_orders",
    description="The signed-in customer's orders. Use it when the user asks about orders.",
    args={
        "cust_id": Arg(from_context=lambda deps: deps["customer"]),
        "rgn": Arg(name="region", narrow={"enum": ["eu", "us"]}, description="Sales region"),
        "max": Arg(name="limit", narrow={"maximum": 50}, default=10, examples=[5, 20]),
        "debug": Arg(value=False),
    },
)


def view() -> Any:
    return reshaped(crm(), {"get_orders_v2": ORDERS})


def test_every_format_shows_the_reshaped_tool() -> None:
    tools = view()
    assert [t.name for t in tools.tools()] == ["list_orders", "ping", "report"]
    for name in FORMATS:
        text = json.dumps(export_tools(tools.tools(), name))
        assert "list_orders" in text, name
        assert "get_orders_v2" not in text, name
        for hidden in ("cust_id", "debug", '"rgn"', '"max"'):
            assert hidden not in text, (name, hidden)
        assert "signed-in customer" in text, name
        assert "Sales region" in text, name
    (openai,) = export_tools([tools.get("list_orders")], "openai")
    parameters = openai["function"]["parameters"]
    assert parameters["properties"]["region"]["enum"] == ["eu", "us"]
    assert parameters["properties"]["limit"] == {
        "type": "integer",
        "description": "Rows at most",
        "maximum": 50,
        "examples": [5, 20],
        "default": 10,
    }
    assert parameters["required"] == ["region"]
    # the original's examples, renamed, the hidden argument dropped
    assert tools.get("list_orders").examples == ({"region": "eu", "limit": 3},)
    (anthropic,) = export_tools([tools.get("list_orders")], "anthropic")
    assert anthropic["input_examples"] == [{"region": "eu", "limit": 3}]


def test_a_call_is_mapped_back_and_runs_the_original() -> None:
    dispatcher = view().dispatcher
    done = dispatcher.dispatch_tool("list_orders", {"region": "eu"}, context={"customer": "c1"})
    assert done.ok
    assert done.value == {"cust_id": "c1", "rgn": "eu", "max": 10, "debug": False}
    assert done.tool_name == "list_orders"
    assert done.arguments == {"region": "eu"}  # what the model sent, as it was checked
    more = dispatcher.dispatch_tool(
        "list_orders", '{"region": "us", "limit": "7"}', context={"customer": "c2"}
    )
    assert more.value == {"cust_id": "c2", "rgn": "us", "max": 7, "debug": False}  # coerced


@pytest.mark.parametrize(
    ("arguments", "answer"),
    [
        ({"region": "mars"}, "region: 'mars' is not one of 'eu', 'us'"),
        ({"region": "eu", "limit": 60}, "limit: must be <= 50"),
        ({}, "missing required property 'region'"),
        ({"region": "eu", "cust_id": "c666"}, "unexpected property 'cust_id'"),
        ({"region": "eu", "rgn": "us"}, "unexpected property 'rgn'"),
        ({"region": "eu", "debug": True}, "unexpected property 'debug'"),
    ],
)
def test_the_reshaped_schema_is_what_dispatch_holds_the_model_to(
    arguments: dict[str, Any], answer: str
) -> None:
    result = view().dispatcher.dispatch_tool("list_orders", arguments, context={"customer": "c1"})
    assert result.error_kind == "invalid_arguments"
    assert result.content.startswith("Invalid arguments for tool 'list_orders'")
    assert answer in result.content


def test_the_original_is_not_reachable_under_its_own_name() -> None:
    tools = view()
    assert tools.get("get_orders_v2") is None
    answer = tools.dispatcher.dispatch_tool("get_orders_v2", {"cust_id": "x", "rgn": "eu"})
    assert answer.error_kind == "unknown_tool"
    assert "get_orders_v2" not in [t.name for t in tools.tools()]
    assert versions_of(tools, "get_orders_v2") == []
    assert [t.name for t in versions_of(tools, "list_orders")] == ["list_orders"]


def test_the_originals_own_refusal_is_said_in_the_reshaped_terms() -> None:
    tools = reshaped(crm(), {"report": Reshape(args={"window": Arg(name="period")})})
    answer = tools.dispatcher.dispatch_tool("report", {"period": {"days": 13}})
    assert answer.error_kind == "invalid_arguments"
    assert answer.content.startswith("Invalid arguments for tool 'report': period")
    assert "13 days is not a window we keep" in answer.content
    assert "window:" not in answer.content
    assert tools.dispatcher.dispatch_tool("report", {"period": {"days": 3}}).content == (
        "report: 3 days"
    )


def test_a_hidden_value_the_tool_refuses_is_not_the_models_to_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dispatcher = view().dispatcher
    with caplog.at_level(logging.WARNING, "toolreg.toolsets"):
        answer = dispatcher.dispatch_tool("list_orders", {"region": "eu"}, context={"customer": 5})
    assert answer.content == (
        "Tool 'list_orders' was not run: a value the application supplies for it is not valid."
    )
    assert "cust_id" not in answer.content
    (record,) = [r for r in caplog.records if "hidden argument" in r.getMessage()]
    assert "'cust_id'" in record.getMessage()

    broken = dispatcher.dispatch_tool("list_orders", {"region": "eu"}, context={})  # KeyError
    assert broken.content == (
        "Tool 'list_orders' was not run: a value the application supplies for it could not be made."
    )
    assert isinstance(broken.exception, KeyError)  # kept for the application, never shown


def test_a_value_from_the_context_needs_a_context() -> None:
    with pytest.raises(MissingContextError, match="'list_orders' needs a context"):
        view().dispatcher.dispatch_tool("list_orders", {"region": "eu"})


def test_the_original_options_carry_over() -> None:
    registry = ToolRegistry()
    asked: list[tuple[str, dict[str, Any]]] = []

    @registry.register_tool(destructive=True, timeout=5, tags=["admin"], version="3")
    def drop_table(table: str, cascade: bool = False) -> str:
        """Drop a table."""
        return f"dropped {table} cascade={cascade}"

    tools = reshaped(
        registry,
        {
            "drop_table": Reshape(
                name="drop", args={"table": Arg(name="name"), "cascade": Arg(value=True)}
            )
        },
    )
    tool = tools.get("drop")
    assert (tool.destructive, tool.timeout, tool.tags, tool.version) == (True, 5, {"admin"}, "3")

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append((tool.name, arguments))
        return True

    done = tools.dispatcher.dispatch_tool("drop", {"name": "users"}, confirm=confirm)
    assert done.content == "dropped users cascade=True"
    assert asked == [("drop", {"name": "users"})]  # confirm sees the call as the model made it
    assert tools.dispatcher.dispatch_tool("drop", {"name": "x"}).error_kind == "denied"


def test_strict_mode_null_means_the_reshaped_default() -> None:
    registry = ToolRegistry()

    @registry.register_tool(strict=True)
    def search(q: str, max: int = 100) -> str:
        """Search."""
        return f"{q}:{max}"

    tools = reshaped(registry, {"search": Reshape(args={"max": Arg(name="limit", default=5)})})
    (exported,) = export_tools(tools.tools(), "openai")
    function = exported["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["q", "limit"]
    assert function["parameters"]["properties"]["limit"] == {
        "description": "Default: 5 (send null for the default).",
        "anyOf": [{"type": "integer"}, {"type": "null"}],
    }
    answer = tools.dispatcher.dispatch_tool("search", {"q": "tea", "limit": None})
    assert answer.content == "tea:5"


def test_async_tools_and_the_tool_context_go_through() -> None:
    registry = ToolRegistry()
    seen: list[Any] = []

    @registry.register_tool
    async def fetch(url: str, user: str, ctx: ToolContext[dict[str, str]]) -> str:
        """Fetch a page."""
        ctx.report_progress(1, 2, "half")
        seen.append((ctx.deps, ctx.call_id))
        return f"{user}@{url}"

    tools = reshaped(
        registry, {"fetch": Reshape(args={"user": Arg(from_context=lambda deps: deps["user"])})}
    )
    assert tools.get("fetch").is_async
    result = asyncio.run(
        tools.dispatcher.adispatch_tool(
            "fetch", {"url": "x.org"}, context={"user": "ada"}, call_id="call-1"
        )
    )
    assert result.content == "ada@x.org"
    assert seen == [({"user": "ada"}, "call-1")]
    sync = tools.dispatcher.dispatch_tool("fetch", {"url": "y.org"}, context={"user": "bo"})
    assert sync.content == "bo@y.org"


def test_the_key_and_the_lock_see_the_original_call() -> None:
    registry = ToolRegistry()
    keys: list[Any] = []
    locked: list[dict[str, Any]] = []

    def account_of(arguments: dict[str, Any]) -> str:
        locked.append(arguments)
        return str(arguments["account"])

    @registry.register_tool(lock=account_of)
    def pay(account: str, amount: int, ctx: ToolContext[None], memo: str = "") -> str:
        """Pay an amount from an account."""
        keys.append(ctx.idempotency_key)
        return f"paid {amount} from {account} ({memo})"

    tools = reshaped(
        registry,
        {"pay": Reshape(args={"account": Arg(name="acct"), "memo": Arg(value="via bot")})},
    )
    done = tools.dispatcher.dispatch_tool(
        "pay", {"acct": "A1", "amount": 5}, idempotency_key="key-1"
    )
    assert done.content == "paid 5 from A1 (via bot)"
    assert keys == ["key-1"]  # the call's key reaches the tool it reshapes
    assert locked == [{"account": "A1", "amount": 5, "memo": "via bot"}]  # the original's names


def test_reshape_composes_with_versions_and_prefixes() -> None:
    registry = ToolRegistry()

    @registry.register_tool(name="search", version="1")
    def search_v1(q: str) -> str:
        """Search (v1)."""
        return f"v1:{q}"

    @registry.register_tool(name="search", version="2")
    def search_v2(q: str) -> str:
        """Search (v2)."""
        return f"v2:{q}"

    old = reshaped(
        pinned(registry, {"search": "1"}), {"search": Reshape(args={"q": Arg(name="query")})}
    )
    assert old.dispatcher.dispatch_tool("search", {"query": "a"}).content == "v1:a"
    assert old.get("search").version == "1"
    shop = reshaped(prefixed(registry, "shop"), {"shop_search": Reshape(name="find")})
    assert shop.dispatcher.dispatch_tool("find", {"q": "b"}).content == "v2:b"


# -- construction errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "parameter", "words"),
    [
        ({"rgn": Arg(narrow={"type": "integer"})}, "rgn", "admits integer"),
        ({"max": Arg(narrow={"type": "number"})}, "max", "admits number"),
        ({"rgn": Arg(narrow={"enum": ["eu", 3]})}, "rgn", "the value 3 is one the tool refuses"),
        ({"rgn": Arg(narrow={"minLength": -1})}, "rgn", "a whole number >= 0"),
        ({"rgn": Arg(narrow={"properties": {}})}, "rgn", "cannot be shown to narrow"),
        ({"debug": Arg(value="yes")}, "debug", "value='yes' is refused by the tool"),
        ({"debug": Arg(value=object())}, "debug", "is not a JSON value"),
        ({"cust_id": Arg(hidden=True)}, "cust_id", "it is required"),
        ({"rgn": Arg(name="bad name")}, "rgn", "is not an argument name"),
        ({"rgn": Arg(name="max")}, "max", "two arguments would be named 'max'"),
        ({"rgn": Arg(value="eu", name="region")}, "rgn", "would never be read"),
        ({"rgn": Arg(value="eu", hidden=True)}, "rgn", "both hide it"),
        ({"max": Arg(default=3, required=True)}, "max", "contradict"),
        ({"max": Arg(default="x")}, "max", "default='x' is refused"),
        ({"max": Arg(examples=["x"])}, "max", "example='x' is refused"),
        ({"nope": Arg()}, "nope", "it has no argument 'nope' (it has: cust_id, rgn, max, debug)"),
    ],
)
def test_a_reshape_that_does_not_fit_fails_at_construction(
    args: dict[str, Arg], parameter: str, words: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        reshaped(crm(), {"get_orders_v2": Reshape(args=args)})
    error = caught.value
    assert "the tool 'get_orders_v2'" in str(error)
    assert error.parameter == parameter
    assert words in error.problem
    assert error.fix


def test_a_bound_wider_than_the_tools_is_refused() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def page(size: Annotated[int, "Page size"] = 10) -> str:
        """A page of results."""
        return str(size)

    base = reshaped(registry, {"page": Reshape(args={"size": Arg(narrow={"maximum": 50})})})
    with pytest.raises(ToolDefinitionError, match="maximum 80 is wider than the tool's maximum 50"):
        reshaped(base, {"page": Reshape(args={"size": Arg(narrow={"maximum": 80})})})
    assert reshaped(base, {"page": Reshape(args={"size": Arg(narrow={"maximum": 20})})})


@pytest.mark.parametrize(
    ("shapes", "words"),
    [
        ({"nope": Reshape()}, "has no tool 'nope'"),
        ({"ping": Reshape(name="report")}, "the name of another tool"),
        ({"ping": Reshape(name="x"), "report": Reshape(name="x")}, "would both be named 'x'"),
        ({"ping": "x"}, "not a Reshape"),
        ({}, "maps tool names to Reshape"),
    ],
)
def test_names_are_checked_at_construction(shapes: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        reshaped(crm(), shapes)


def test_two_tools_may_swap_names() -> None:
    tools = reshaped(crm(), {"ping": Reshape(name="report"), "report": Reshape(name="ping")})
    assert tools.dispatcher.dispatch_tool("report", {}).content == "pong"


def test_a_tool_that_changes_under_the_view_is_rebuilt_or_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = crm()
    tools = reshaped(registry, {"ping": Reshape(name="hello", args={})})
    first = tools.get("hello")
    assert tools.get("hello") is first  # built once per inner tool

    @registry.register_tool(replace=True)
    def ping(extra: str) -> str:
        """Ping with something."""
        return extra

    assert tools.get("hello") is not first
    assert tools.dispatcher.dispatch_tool("hello", {"extra": "e"}).content == "e"
    narrow = reshaped(registry, {"ping": Reshape(args={"extra": Arg(narrow={"enum": ["a"]})})})

    def ping_number(extra: int) -> str:
        """Ping with a number."""
        return str(extra)

    registry.register_tool(ping_number, name="ping", replace=True)

    with caplog.at_level(logging.WARNING, "toolreg.toolsets"):
        assert "ping" not in [t.name for t in narrow.tools()]
    assert any("no longer fits" in r.getMessage() for r in caplog.records)


# -- narrowing, as a property --------------------------------------------------------------------

_NUMBER = st.one_of(st.integers(-20, 20), st.sampled_from([0.5, 1.5, -2.5]))
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


@st.composite
def numeric_schema(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": draw(st.sampled_from(["integer", "number"]))}
    for key in draw(st.sets(st.sampled_from(_BOUNDS), max_size=3)):
        value = draw(_NUMBER)
        if key == "multipleOf":
            value = draw(st.sampled_from([1, 2, 3, 0.5]))
        schema[key] = value
    return schema


@st.composite
def string_schema(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if draw(st.booleans()):
        schema["maxLength"] = draw(st.integers(0, 6))
    if draw(st.booleans()):
        schema["minLength"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        schema["enum"] = draw(
            st.lists(st.text("ab", max_size=4), min_size=1, max_size=4, unique=True)
        )
    return schema


_VALUES = st.one_of(
    st.integers(-30, 30),
    st.floats(-30, 30, allow_nan=False).map(lambda x: round(x * 2) / 2),
    st.text("abc", max_size=8),
    st.none(),
    st.booleans(),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.one_of(numeric_schema(), string_schema()),
    st.one_of(numeric_schema(), string_schema()),
    st.lists(_VALUES, min_size=1, max_size=12),
)
def test_an_accepted_narrowing_admits_nothing_the_original_refuses(
    original: dict[str, Any], candidate: dict[str, Any], values: list[Any]
) -> None:
    """Whatever keywords are laid over a schema, if `narrowing_problem` accepts them, every
    value the merged schema admits is one the original admits (jsonschema is the judge)."""
    narrow = dict(candidate)

    def refusal(value: Any) -> str | None:
        errors = list(jsonschema.Draft202012Validator(original).iter_errors(value))
        return errors[0].message if errors else None

    assume(narrowing_problem(original, narrow, refusal) is None)
    merged = jsonschema.Draft202012Validator({**original, **narrow})
    before = jsonschema.Draft202012Validator(original)
    for value in [*values, *narrow.get("enum", [])]:
        if merged.is_valid(value):
            assert before.is_valid(value), (original, narrow, value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-100, 100) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_KEYS = st.sampled_from(["region", "limit", "cust_id", "rgn", "max", "debug", "x", "_toolreg_raw"])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_KEYS, _JSON, max_size=5), st.sampled_from([None, {"customer": "c1"}, {}]))
def test_whatever_the_model_sends_the_original_gets_only_what_it_accepts(
    arguments: dict[str, Any], context: Any
) -> None:
    registry = crm()
    original = registry.get("get_orders_v2")
    assert original is not None
    tools = reshaped(registry, {"get_orders_v2": ORDERS})
    try:
        result = tools.dispatcher.dispatch_tool("list_orders", arguments, context=context)
    except MissingContextError:
        assert context is None  # the application's mistake, raised only then
        return
    if result.ok:
        assert not original.plan.validator.validate(result.value)
        assert result.value["cust_id"] == "c1"
        assert result.value["debug"] is False
        assert result.value["rgn"] in ("eu", "us")
        assert result.value["max"] <= 50
    else:
        assert result.error_kind in ("invalid_arguments", "execution_error")
        assert "Traceback" not in result.content
        for hidden in ("cust_id", "debug"):
            assert hidden not in result.content or f"'{hidden}'" in result.content  # named only
            # when the model itself sent it (an unexpected property)
