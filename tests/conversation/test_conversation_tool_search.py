"""`Conversation(tool_search=...)`: each model call is offered the tools its question needs,
checked on the wire (the real openai SDK against ScriptedServer on 127.0.0.1)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from toolreg import Conversation, ConversationStateError, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, text, tool_call
from toolreg.testing.inspection import tool_names
from toolreg.toolsets.search import ToolSearch

MODEL = "scripted-model"


def catalog() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_weather(city: Annotated[str, "City name"]) -> str:
        """Current weather of a city: temperature, rain and wind."""
        return f"sunny in {city}"

    @registry.register_tool
    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email message to someone."""
        return "sent"

    @registry.register_tool
    def list_files(path: str) -> list[str]:
        """List the files in a directory."""
        return ["a.txt"]

    @registry.register_tool(tags=["meta"])
    def help_desk(question: str) -> str:
        """Ask a human for help."""
        return "on it"

    @registry.register_tool(name="train_ticket_cn")
    def train_ticket(出发地: str, 目的地: str) -> str:
        """查询火车票余票和票价。"""
        return "有票"

    @registry.register_tool(name="restaurant_jp")
    def restaurant(エリア: str) -> str:
        """近くのレストランを検索して、予約の空きを調べます。"""
        return "空きあり"

    for i in range(30):  # a catalog big enough that "all of it" would show
        registry.register_schema(
            f"crm_record_{i}",
            {"type": "object", "properties": {"record_id": {"type": "string"}}},
            lambda **kw: "ok",
            description=f"Update CRM record number {i} for the sales team.",
        )
    return registry


def chat(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=registry, **options)


def sent(server: ScriptedServer, index: int) -> list[str]:
    return tool_names(server.requests[index])


def test_each_model_call_is_offered_the_best_tools_for_its_question() -> None:
    with ScriptedServer([text("Sunny."), text("Sent.")]) as server:
        conversation = chat(server, catalog(), tool_search=2)
        conversation.send("What's the weather in Paris?")
        conversation.send("Now email the forecast to Ann")
    assert sent(server, 0)[0] == "get_weather"
    assert len(sent(server, 0)) <= 2
    assert "send_email" in sent(server, 1)  # the newest message counts
    assert len(sent(server, 1)) <= 2


def test_chinese_and_japanese_questions_pick_their_tools() -> None:
    with ScriptedServer([text("有票"), text("空きあり")]) as server:
        chat(server, catalog(), tool_search=1).send("帮我查一下去上海的火车票")
        chat(server, catalog(), tool_search=1).send("渋谷で予約できるレストランを探して")
    assert sent(server, 0) == ["train_ticket_cn"]
    assert sent(server, 1) == ["restaurant_jp"]


def test_always_visible_tools_are_sent_with_every_call() -> None:
    option = ToolSearch(limit=1, always=["meta", "list_files"])
    with ScriptedServer([text("Sunny.")]) as server:
        chat(server, catalog(), tool_search=option).send("weather in Rome")
    assert sorted(sent(server, 0)) == ["get_weather", "help_desk", "list_files"]


def test_a_tool_called_in_the_turn_stays_offered_in_its_next_rounds() -> None:
    registry = catalog()
    script = [tool_call("get_weather", city="Rome"), text("Sunny in Rome.")]
    with ScriptedServer(script) as server:
        reply = chat(server, registry, tool_search=1).send("weather in Rome")
    assert reply.text == "Sunny in Rome."
    assert sent(server, 0) == ["get_weather"]
    assert "get_weather" in sent(server, 1)


def test_a_question_that_matches_nothing_sends_only_the_always_tools() -> None:
    with ScriptedServer([text("Hello!")]) as server:
        chat(server, catalog(), tool_search=ToolSearch(always=["help_desk"])).send("hi")
    assert sent(server, 0) == ["help_desk"]
    with ScriptedServer([text("Hello!")]) as server:
        chat(server, catalog(), tool_search=3).send("hi")
    assert "tools" not in server.requests[0]  # nothing to offer: no tools key at all


def test_a_tool_that_is_allowed_but_not_selected_still_runs() -> None:
    script = [tool_call("list_files", path="/tmp"), text("One file.")]
    with ScriptedServer(script) as server:
        reply = chat(server, catalog(), tool_search=1).send("weather in Rome")
    assert reply.tool_results[0].ok
    assert reply.tool_results[0].content == '["a.txt"]'


def test_the_tools_filter_still_bounds_what_is_searched() -> None:
    with ScriptedServer([text("ok")]) as server:
        chat(server, catalog(), tools=["send_email"], tool_search=3).send("weather in Rome")
    assert "tools" not in server.requests[0]


def test_the_recent_user_messages_are_read_newest_first() -> None:
    registry = catalog()
    with ScriptedServer([text("a"), text("b")]) as server:
        conversation = chat(server, registry, tool_search=ToolSearch(limit=2, messages=2))
        conversation.send("list the files in my home directory")
        conversation.send("and the weather?")
    assert set(sent(server, 1)) == {"get_weather", "list_files"}


def test_the_option_is_checked_when_given() -> None:
    registry = catalog()
    for bad in (0, -1, True, "5", 2.5):
        with pytest.raises(UsageError, match=r"tool_search|ToolSearch"):
            Conversation(None, MODEL, registry=registry, tool_search=bad)
    with pytest.raises(UsageError, match="neither a registered tool nor a tag"):
        Conversation(None, MODEL, registry=registry, tool_search=ToolSearch(always=["nope"]))
    with pytest.raises(UsageError, match="list of tool names"):
        ToolSearch(always="help_desk")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="messages"):
        ToolSearch(messages=0)


def test_the_option_is_saved_and_restored_with_the_state() -> None:
    registry = catalog()
    option = ToolSearch(limit=1, always=["help_desk"], messages=1)
    with ScriptedServer([text("Sunny."), text("Sent.")]) as server:
        first = chat(server, registry, tool_search=option)
        first.send("weather in Rome")
        state = first.export_state()
        assert state["options"]["tool_search"] == {
            "limit": 1,
            "always": ["help_desk"],
            "messages": 1,
        }
        again = Conversation.from_state(state, server.client(), registry=registry)
        assert again.options.tool_search == option
        again.send("email Ann")
    assert sorted(sent(server, 1)) == ["help_desk", "send_email"]


def test_a_version_2_state_from_before_the_option_still_loads() -> None:
    registry = catalog()
    state = Conversation(None, MODEL, registry=registry).export_state()
    assert state["version"] == 3
    del state["options"]["tool_search"], state["discovered"]
    state["version"] = 2
    assert Conversation.from_state(state, None, registry=registry).options.tool_search is None
    state["version"], state["discovered"] = 3, []  # a version 3 state must have the option
    with pytest.raises(ConversationStateError, match="options"):
        Conversation.from_state(state, None, registry=registry)


@pytest.mark.parametrize(
    "saved", [{"limit": 0, "always": [], "messages": 1}, {"limit": 1}, "five", [1]]
)
def test_a_tampered_option_in_a_state_is_refused(saved: Any) -> None:
    registry = catalog()
    state = Conversation(None, MODEL, registry=registry).export_state()
    state["options"]["tool_search"] = saved
    with pytest.raises(ConversationStateError):
        Conversation.from_state(state, None, registry=registry)


def test_a_huge_message_is_read_in_bounded_time() -> None:
    with ScriptedServer([text("Sunny.")]) as server:
        chat(server, catalog(), tool_search=1).send("weather " + "blah " * 200_000)
    assert sent(server, 0) == ["get_weather"]
