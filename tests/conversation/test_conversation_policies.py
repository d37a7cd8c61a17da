"""Policies around a turn's calls: retry budgets (ToolRetry, ToolFailed, invalid arguments),
on both drivers, with streaming, across export/resume, and dispatch outside a conversation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationStateError,
    ToolDefinitionError,
    ToolFailed,
    ToolFailedError,
    ToolRegistry,
    ToolRetry,
    UsageError,
)
from toolreg.conversation import STOP_REASONS
from toolreg.testing import ScriptedServer, call, history_problems, text, tool_call, tool_calls

MODEL = "scripted-model"
DRIVERS = ["sync", "async"]


class Shop:
    """`search` asks for a retry until its query is long enough; `lookup` fails for good on
    an unknown id; `count` counts its runs; `transfer` needs approval."""

    def __init__(self, **search_options: Any) -> None:
        self.ran: list[str] = []
        self.registry = reg = ToolRegistry()

        @reg.register_tool(**search_options)
        def search(query: str) -> str:
            """Search the catalog."""
            self.ran.append(f"search {query}")
            if len(query) < 3:
                raise ToolRetry(f"The query {query!r} is too short: give at least 3 letters.")
            return f"3 results for {query}"

        @reg.register_tool
        def lookup(item: int) -> str:
            """Look an item up by id."""
            self.ran.append(f"lookup {item}")
            if item > 100:
                raise ToolFailed(f"Item {item} does not exist.")
            return f"item {item}"

        @reg.register_tool(destructive=True)
        def transfer(amount: int) -> str:
            """Send money."""
            self.ran.append(f"transfer {amount}")
            return f"sent {amount}"


def run(driver: str, server: ScriptedServer, shop: Shop, prompt: str, **options: Any) -> Any:
    """One `send` on the driver, against the scripted server; the conversation and reply."""
    if driver == "sync":
        chat = Conversation(server.client(), MODEL, registry=shop.registry, **options)
        return chat, chat.send(prompt)

    async def main() -> Any:
        async with server.async_client() as client:
            chat = AsyncConversation(client, MODEL, registry=shop.registry, **options)
            return chat, await chat.send(prompt)

    return asyncio.run(main())


# -- dispatch outside a conversation -------------------------------------------------------


def test_dispatch_maps_tool_retry_and_tool_failed_to_results_the_model_can_read() -> None:
    shop = Shop()
    retry = shop.registry.dispatch_tool("search", {"query": "ab"})
    assert (retry.ok, retry.error_kind) == (False, "retry")
    assert retry.content == "The query 'ab' is too short: give at least 3 letters."
    failed = shop.registry.dispatch_tool("lookup", {"item": 500})
    assert (failed.ok, failed.error_kind) == (False, "failed")
    assert isinstance(failed.error, ToolFailedError)
    assert failed.content == (
        "Item 500 does not exist.\nThis failure is final: do not call the tool again for it."
    )
    assert "Traceback" not in retry.content + failed.content


def test_async_dispatch_maps_them_the_same_way() -> None:
    shop = Shop()
    retry = asyncio.run(shop.registry.adispatch_tool("search", {"query": "x"}))
    failed = asyncio.run(shop.registry.adispatch_tool("lookup", {"item": 101}))
    assert (retry.error_kind, failed.error_kind) == ("retry", "failed")


def test_a_retry_whose_message_cannot_be_read_still_asks_for_a_retry() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    reg = ToolRegistry()

    @reg.register_tool
    def flaky() -> str:
        """Always asks again."""
        raise ToolRetry(Broken())  # type: ignore[arg-type]

    result = reg.dispatch_tool("flaky", {})
    assert result.error_kind == "retry"
    assert result.content == "Tool 'flaky' asked for the call to be made again, corrected."


# -- retry budgets in the loop -------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_retries_within_the_budget_let_the_model_correct_its_call(driver: str) -> None:
    shop = Shop(retries=2)
    script = [
        tool_call("search", query="a"),
        tool_call("search", query="ab"),
        tool_call("search", query="abc"),
        text("Found 3."),
    ]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "find abc")
        server.assert_all_consumed()
    assert (reply.stop_reason, reply.text) == ("answer", "Found 3.")
    assert [r.error_kind for r in reply.tool_results] == ["retry", "retry", None]


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_raising_tool_retry_forever_stops_the_turn_at_its_budget(
    driver: str, stream: bool
) -> None:
    shop = Shop(retries=2)
    script = [tool_call("search", query="a") for _ in range(10)]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "find", max_rounds=20, max_repeats=None, stream=stream)
        assert server.remaining == 7  # three calls, then no model call at all
    assert reply.stop_reason == "retry_limit"
    assert reply.text == (
        "Stopped: 3 calls to tool 'search' in this turn had to be retried, more than its "
        "limit of 2 (retries=2)."
    )
    assert shop.ran == ["search a"] * 3
    assert history_problems(reply.messages) == []  # every call is answered


@pytest.mark.parametrize("driver", DRIVERS)
def test_invalid_arguments_from_the_model_count_as_retries_of_that_tool(driver: str) -> None:
    shop = Shop()
    script = [tool_call("search"), tool_call("search", query=7), text("never asked")]
    with ScriptedServer(script) as server:
        chat, reply = run(driver, server, shop, "find", tool_retries=1, max_repeats=None)
        assert server.remaining == 1
    assert [r.error_kind for r in reply.tool_results] == ["invalid_arguments"] * 2
    assert reply.stop_reason == "retry_limit"
    assert "tool 'search'" in reply.text
    assert "(retries=1)" in reply.text
    assert shop.ran == []
    assert chat.messages == reply.messages  # the turn is kept: the next send goes on from it


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_model_retrying_forever_is_stopped_by_the_default_budget(driver: str) -> None:
    shop = Shop()
    script = [tool_calls(call("search", query=n)) for n in range(50)]  # never a str
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "find", max_rounds=100)
        assert server.remaining == 47
    assert reply.stop_reason == "retry_limit"  # the default: tool_retries=2
    assert "limit of 2" in reply.text


@pytest.mark.parametrize("driver", DRIVERS)
def test_tool_failed_costs_no_retry_and_tells_the_model_not_to_retry(driver: str) -> None:
    shop = Shop()
    script = [
        tool_calls(call("lookup", item=101), call("lookup", item=102), call("lookup", item=103)),
        text("None of them exist."),
    ]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "look them up", tool_retries=0)
        server.assert_all_consumed()
        sent = server.assert_request(1, tool_result_contains="do not call the tool again")
    assert sent
    assert reply.stop_reason == "answer"
    assert [r.error_kind for r in reply.tool_results] == ["failed"] * 3


@pytest.mark.parametrize("driver", DRIVERS)
def test_retries_0_stops_at_the_first_retry_and_other_tools_keep_their_own_budget(
    driver: str,
) -> None:
    shop = Shop(retries=0)
    script = [tool_calls(call("lookup"), call("lookup"), call("lookup")), text("done")]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "go", tool_retries=3)
        server.assert_all_consumed()
    assert reply.stop_reason == "answer"  # lookup: 3 bad calls, budget 3
    script = [tool_call("search", query="a"), text("never asked")]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "go", tool_retries=3)
        assert server.remaining == 1
    assert reply.stop_reason == "retry_limit"
    assert "limit of 0 (retries=0)" in reply.text


def test_tool_retries_none_means_no_budget() -> None:
    shop = Shop()
    script = [tool_call("search", query="a") for _ in range(4)] + [text("gave up")]
    with ScriptedServer(script) as server:
        _, reply = run("sync", server, shop, "find", tool_retries=None, max_repeats=None)
        server.assert_all_consumed()
    assert reply.stop_reason == "answer"


@pytest.mark.parametrize("value", [-1, True, 1.5, "2"])
def test_a_bad_budget_is_refused_when_built(value: Any) -> None:
    with pytest.raises(UsageError, match=r"tool_retries=.*whole number >= 0"):
        Conversation(object(), MODEL, registry=ToolRegistry(), tool_retries=value)
    with pytest.raises(UsageError, match=r"tool_retries="):
        AsyncConversation(object(), MODEL, registry=ToolRegistry(), tool_retries=value)
    with pytest.raises(ToolDefinitionError, match=r"retries=.*whole number >= 0"):
        ToolRegistry().register_tool(name="noop", retries=value)(lambda: None)


def test_the_stop_reason_is_declared() -> None:
    assert "retry_limit" in STOP_REASONS


# -- across export/resume ------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_budget_spent_before_a_pause_stays_spent_after_export_and_resume(driver: str) -> None:
    shop = Shop(retries=1)
    script = [
        tool_calls(call("search", query="a"), call("transfer", amount=5)),
        tool_call("search", query="b"),  # the second retry: over the budget of 1
        text("never asked"),
    ]
    with ScriptedServer(script) as server:
        first = Conversation(server.client(), MODEL, registry=shop.registry, confirm="defer")
        paused = first.send("find and pay")
        assert paused.stop_reason == "approval_required"
        state = first.export_state()
        assert state["options"]["tool_retries"] == 2
        if driver == "sync":
            again = Conversation.from_state(state, server.client(), registry=shop.registry)
            reply = again.resume({paused.pending[0].call_id: True})
        else:

            async def main() -> Any:
                async with server.async_client() as client:
                    chat = AsyncConversation.from_state(state, client, registry=shop.registry)
                    return await chat.resume({paused.pending[0].call_id: True})

            reply = asyncio.run(main())
        assert server.remaining == 1
    assert reply.stop_reason == "retry_limit"
    assert "2 calls to tool 'search'" in reply.text
    assert shop.ran == ["search a", "transfer 5", "search b"]


def test_a_saved_budget_only_narrows_the_one_given_to_from_state() -> None:
    shop = Shop()
    with ScriptedServer([]) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry, tool_retries=1)
        state = chat.export_state()
        wider = Conversation.from_state(
            state, server.client(), registry=shop.registry, tool_retries=5
        )
        assert wider.export_state()["options"]["tool_retries"] == 1
        state["options"]["tool_retries"] = -3
        with pytest.raises(ConversationStateError, match="tool_retries"):
            Conversation.from_state(state, server.client(), registry=shop.registry)


def test_a_state_saved_before_the_budgets_existed_gets_the_defaults() -> None:
    shop = Shop()
    with ScriptedServer([]) as server:
        state = Conversation(server.client(), MODEL, registry=shop.registry).export_state()
        del state["options"]["tool_retries"]
        chat = Conversation.from_state(state, server.client(), registry=shop.registry)
        assert chat.export_state()["options"]["tool_retries"] == 2


# -- call limits ---------------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_call_past_a_tools_limit_is_answered_with_the_limit_and_the_turn_goes_on(
    driver: str,
) -> None:
    shop = Shop()
    script = [
        tool_call("search", query="red"),
        tool_call("search", query="blue"),
        tool_calls(call("search", query="green"), call("lookup", item=1)),
        text("Here is what I found."),
    ]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, shop, "find", max_calls={"search": 2})
        server.assert_all_consumed()
    assert (reply.stop_reason, reply.text) == ("answer", "Here is what I found.")
    refused = reply.tool_results[2]
    assert (refused.ok, refused.error_kind) == (False, "call_limit")
    assert refused.content == (
        "Tool 'search' was not run: this turn's limit of 2 calls to it is reached "
        "(max_calls). Answer with what you have."
    )
    assert shop.ran == ["search red", "search blue", "lookup 1"]  # other tools still run


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("stream", [False, True])
def test_on_call_limit_stop_ends_the_turn_keeping_the_results_so_far(
    driver: str, stream: bool
) -> None:
    shop = Shop()
    script = [
        tool_call("lookup", item=1),
        tool_calls(call("lookup", item=2), call("lookup", item=3)),
        text("never asked"),
    ]
    with ScriptedServer(script) as server:
        chat, reply = run(
            driver, server, shop, "go", max_tool_calls=2, on_call_limit="stop", stream=stream
        )
        assert server.remaining == 1
    assert reply.stop_reason == "call_limit"
    assert reply.text == (
        "Stopped: Tool 'lookup' was not run: this turn's limit of 2 tool calls is reached "
        "(max_tool_calls=2)."
    )
    assert [r.content for r in reply.tool_results[:2]] == ["item 1", "item 2"]
    assert reply.tool_results[2].error_kind == "call_limit"
    assert shop.ran == ["lookup 1", "lookup 2"]
    assert history_problems(reply.messages) == []
    assert chat.messages == reply.messages


@pytest.mark.parametrize("driver", DRIVERS)
def test_limits_of_zero_run_nothing(driver: str) -> None:
    shop = Shop()
    script = [tool_call("search", query="red"), text("I may not search.")]
    with ScriptedServer(script) as server:
        _, told = run(driver, server, shop, "find", max_calls={"search": 0})
        server.assert_all_consumed()
    assert (told.stop_reason, told.tool_results[0].error_kind) == ("answer", "call_limit")
    with ScriptedServer([tool_call("lookup", item=1), text("never asked")]) as server:
        _, stopped = run(driver, server, shop, "go", max_tool_calls=0, on_call_limit="stop")
        assert server.remaining == 1
    assert stopped.stop_reason == "call_limit"
    assert shop.ran == []


def test_a_model_calling_past_the_limit_forever_is_ended_by_max_rounds() -> None:
    shop = Shop()
    script = [tool_call("lookup", item=n) for n in range(30)]
    with ScriptedServer([*script[:5], text("done")]) as server:
        _, reply = run("sync", server, shop, "go", max_tool_calls=1, max_rounds=5)
        server.assert_all_consumed()
    assert reply.stop_reason == "max_rounds"
    assert shop.ran == ["lookup 0"]  # refused calls do not count, and never run
    assert [r.error_kind for r in reply.tool_results] == [None] + ["call_limit"] * 4


def test_a_limit_for_a_tool_the_registry_does_not_have_names_the_known_tools() -> None:
    shop = Shop()
    with pytest.raises(UsageError) as caught:
        Conversation(object(), MODEL, registry=shop.registry, max_calls={"serach": 5})
    assert str(caught.value) == (
        "max_calls: 'serach' is not a registered tool; registered: search, lookup, transfer"
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_calls": {"search": -1}}, "max_calls['search']=-1"),
        ({"max_calls": {"search": True}}, "max_calls['search']=True"),
        ({"max_calls": ["search"]}, "max_calls=['search']"),
        ({"max_tool_calls": -1}, "max_tool_calls=-1"),
        ({"max_tool_calls": 2.5}, "max_tool_calls=2.5"),
        ({"on_call_limit": "ask"}, "on_call_limit='ask'"),
    ],
)
def test_bad_limits_are_refused_when_built(options: dict[str, Any], named: str) -> None:
    shop = Shop()
    for cls in (Conversation, AsyncConversation):
        with pytest.raises(UsageError) as caught:
            cls(object(), MODEL, registry=shop.registry, **options)
        assert str(caught.value).startswith(named)


@pytest.mark.parametrize("driver", DRIVERS)
def test_calls_made_before_a_pause_count_after_export_and_resume(driver: str) -> None:
    shop = Shop()
    script = [
        tool_calls(call("search", query="red"), call("transfer", amount=5)),
        tool_calls(call("search", query="blue"), call("transfer", amount=6)),
        text("Done."),
    ]
    options = {"max_calls": {"search": 1, "transfer": 1}}
    with ScriptedServer(script) as server:
        first = Conversation(
            server.client(), MODEL, registry=shop.registry, confirm="defer", **options
        )
        paused = first.send("find and pay")
        state = first.export_state()
        assert state["options"]["max_calls"] == {"search": 1, "transfer": 1}
        if driver == "sync":
            again = Conversation.from_state(state, server.client(), registry=shop.registry)
            reply = again.resume({paused.pending[0].call_id: True})
        else:

            async def main() -> Any:
                async with server.async_client() as client:
                    chat = AsyncConversation.from_state(state, client, registry=shop.registry)
                    return await chat.resume({paused.pending[0].call_id: True})

            reply = asyncio.run(main())
        server.assert_all_consumed()
    assert reply.stop_reason == "answer"  # the second transfer never waits for approval
    assert [r.error_kind for r in reply.tool_results] == [None, None, "call_limit", "call_limit"]
    assert shop.ran == ["search red", "transfer 5"]


def test_from_state_narrows_saved_call_limits() -> None:
    shop = Shop()
    with ScriptedServer([]) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=shop.registry,
            max_calls={"search": 2},
            max_tool_calls=10,
            on_call_limit="stop",
        )
        state = chat.export_state()
        wider = Conversation.from_state(
            state,
            server.client(),
            registry=shop.registry,
            max_calls={"search": 9, "lookup": 3},
            max_tool_calls=50,
        )
        options = wider.export_state()["options"]
    assert options["max_calls"] == {"search": 2, "lookup": 3}
    assert (options["max_tool_calls"], options["on_call_limit"]) == (10, "stop")
