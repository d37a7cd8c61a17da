"""Dispatch step 5: injecting the caller's context; the model can never set it.

Injection hidden inside another type (`Optional[ToolContext]`, ...) is refused at
registration.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any, Optional

import pytest

from toolreg import Injected, ToolContext, ToolDefinitionError, ToolRegistry


@dataclass
class Session:
    user_id: int
    roles: tuple[str, ...] = ()


def make_registry() -> tuple[ToolRegistry, list[Any]]:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool
    def whoami(ctx: ToolContext[Session], greeting: str = "hi") -> str:
        """Greets the current user."""
        seen.append(ctx)
        return f"{greeting} {ctx.deps.user_id}"

    @reg.register_tool
    def raw(session: Annotated[Session, Injected], x: int = 0) -> str:
        """Gets the context as it is."""
        seen.append(session)
        return "ok"

    @reg.register_tool
    def open_ended(ctx: ToolContext, **extra: Any) -> str:
        """Takes any keys."""
        seen.append((ctx, extra))
        return "ok"

    @reg.register_tool
    def raw_open(session: Annotated[Any, Injected], **extra: Any) -> str:
        """Takes any keys, and the raw context."""
        seen.append((session, extra))
        return "ok"

    @reg.register_tool
    async def awhoami(ctx: ToolContext[Session]) -> str:
        """Async tool with a context."""
        seen.append(ctx)
        return str(ctx.deps.user_id)

    return reg, seen


def test_tool_context_carries_deps_tool_name_and_call_id() -> None:
    reg, seen = make_registry()
    session = Session(7, ("admin",))
    result = reg.dispatch_tool("whoami", '{"greeting": "hello"}', context=session, call_id="c1")
    assert result.content == "hello 7"
    assert seen == [ToolContext(deps=session, tool_name="whoami", call_id="c1")]
    assert seen[0].deps is session


def test_a_context_that_admits_none_is_none_when_dispatch_gets_none() -> None:
    from toolreg import MissingContextError

    reg, seen = make_registry()
    assert reg.dispatch_tool("raw_open", "{}").ok  # Annotated[Any, Injected]
    assert seen == [(None, {})]
    for name in ("raw", "open_ended", "whoami"):  # Session, bare ToolContext, ToolContext[...]
        with pytest.raises(MissingContextError):
            reg.dispatch_tool(name, "{}")


def test_a_tool_context_passed_in_is_filled_with_this_call() -> None:
    reg, seen = make_registry()
    given = ToolContext(deps=Session(1), tool_name="other", call_id="old")
    assert reg.dispatch_tool("whoami", "{}", context=given, call_id="new").ok
    assert seen == [ToolContext(deps=Session(1), tool_name="whoami", call_id="new")]
    assert given.tool_name == "other"  # the caller's object is left alone


def test_injected_parameter_gets_the_raw_context() -> None:
    reg, seen = make_registry()
    session = Session(3)
    assert reg.dispatch_tool("raw", {"x": 1}, context=session).ok
    assert seen == [session]
    assert seen[0] is session


def test_context_parameters_are_not_in_the_schema() -> None:
    reg, _ = make_registry()
    assert set(reg["whoami"].parameters["properties"]) == {"greeting"}
    assert set(reg["raw"].parameters["properties"]) == {"x"}
    assert reg["open_ended"].parameters["properties"] == {}


@pytest.mark.parametrize(
    ("tool", "key"),
    [("whoami", "ctx"), ("raw", "session"), ("open_ended", "ctx"), ("raw_open", "session")],
)
def test_the_model_cannot_set_the_context(tool: str, key: str) -> None:
    reg, seen = make_registry()
    forged = {key: {"deps": {"user_id": 0}, "tool_name": tool}}
    result = reg.dispatch_tool(tool, forged, context=Session(5))
    assert result.error_kind == "invalid_arguments"
    assert result.content == f"Invalid arguments for tool '{tool}': unexpected property '{key}'."
    assert seen == []


def test_forged_context_is_named_among_other_problems_with_kwargs() -> None:
    reg, seen = make_registry()
    result = reg.dispatch_tool("open_ended", '{"ctx": null, "a": 1}', context=Session(5))
    assert result.content == "Invalid arguments for tool 'open_ended': unexpected property 'ctx'."
    result = reg.dispatch_tool("whoami", '{"ctx": 1, "greeting": 5}', context=Session(5))
    assert result.content == (
        "Invalid arguments for tool 'whoami':\n"
        "- unexpected property 'ctx'\n"
        "- greeting: expected string, got integer"
    )
    assert seen == []


def test_kwargs_tools_still_receive_other_keys() -> None:
    reg, seen = make_registry()
    assert reg.dispatch_tool("raw_open", {"a": 1, "b": [2]}, context="deps").ok
    assert seen == [("deps", {"a": 1, "b": [2]})]


def test_context_in_async_dispatch_and_async_tools() -> None:
    reg, seen = make_registry()

    async def run() -> list[str]:
        first = await reg.adispatch_tool("awhoami", "{}", context=Session(8), call_id="a1")
        second = await reg.adispatch_tool("whoami", "{}", context=Session(9), call_id="a2")
        forged = await reg.adispatch_tool("awhoami", {"ctx": 1}, context=Session(9))
        return [first.content, second.content, forged.content]

    assert asyncio.run(run()) == [
        "8",
        "hi 9",
        "Invalid arguments for tool 'awhoami': unexpected property 'ctx'.",
    ]
    assert seen == [
        ToolContext(deps=Session(8), tool_name="awhoami", call_id="a1"),
        ToolContext(deps=Session(9), tool_name="whoami", call_id="a2"),
    ]


def test_context_is_not_part_of_result_arguments() -> None:
    reg, _ = make_registry()
    result = reg.dispatch_tool("whoami", '{"greeting": "yo"}', context=Session(1))
    assert result.arguments == {"greeting": "yo"}


def test_dispatch_many_shares_the_context_and_gives_each_call_its_id() -> None:
    reg, seen = make_registry()
    results = reg.dispatch_many(
        [("whoami", "{}", "x1"), ("whoami", "{}", "x2")], context=Session(4)
    )
    assert [r.content for r in results] == ["hi 4", "hi 4"]
    assert sorted(c.call_id for c in seen) == ["x1", "x2"]


@pytest.mark.parametrize(
    "annotation",
    [
        Optional[Annotated[dict, Injected]],
        Optional[ToolContext[dict]],
        list[Annotated[int, Injected]],
    ],
)
def test_injection_hidden_inside_another_type_is_refused(annotation: Any) -> None:
    def orders(ctx=None):  # type: ignore[no-untyped-def]
        """List orders."""
        return str(ctx)

    orders.__annotations__ = {"ctx": annotation}  # a local type: set the real object
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry().register_tool(orders)
    assert info.value.parameter == "ctx"
    assert "Annotated[T | None, Injected]" in (info.value.fix or "")


def test_injection_on_the_outside_of_an_optional_works() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def orders(ctx: Annotated[Optional[dict], Injected] = None) -> str:
        """List orders."""
        return str(ctx)

    assert reg.dispatch_tool("orders", "{}", context={"user": "u1"}).content == "{'user': 'u1'}"
    assert not reg.dispatch_tool("orders", '{"ctx": {"user": "u2"}}', context={}).ok


# -- a tool that needs a context and gets none --------------------------------------------------


def context_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def my_orders(ctx: ToolContext[dict[str, str]]) -> str:
        """The user's orders."""
        return ctx.deps["user"]

    @reg.register_tool
    def greet(name: str, user: Annotated[str | None, Injected] = None) -> str:
        """Greet, maybe personally."""
        return f"hi {name} from {user}"

    return reg


def test_a_missing_context_is_raised_to_the_caller_not_sent_to_the_model() -> None:
    import asyncio

    from toolreg import Conversation, MissingContextError, ToolregError
    from toolreg.testing import ScriptedServer, tool_call

    reg = context_registry()
    expected = (
        "tool 'my_orders' needs a context for its parameter 'ctx' and none was given. "
        "Fix: pass context=... to dispatch_tool, dispatch_many or Conversation "
        "(toolreg call: --context JSON)"
    )
    with pytest.raises(MissingContextError) as info:
        reg.dispatch_tool("my_orders", "{}")
    assert str(info.value) == expected
    assert (info.value.tool_name, info.value.parameter) == ("my_orders", "ctx")
    assert isinstance(info.value, ToolregError)
    with pytest.raises(MissingContextError):
        asyncio.run(reg.adispatch_tool("my_orders", "{}"))
    with pytest.raises(MissingContextError):
        reg.dispatch_many([("my_orders", "{}"), ("greet", '{"name": "x"}')])
    with ScriptedServer([tool_call("my_orders")]) as server:
        chat = Conversation(server.client(), server.model, registry=reg)
        with pytest.raises(MissingContextError):
            chat.send("my orders?")
        assert chat.messages == []  # the history stays as it was
    assert reg.dispatch_tool("my_orders", "{}", context={"user": "ada"}).content == "ada"


def test_a_context_that_may_be_none_is_not_required() -> None:
    reg = context_registry()
    assert reg.dispatch_tool("greet", '{"name": "x"}').content == "hi x from None"
