"""The conversation loop through the real openai SDK against ScriptedServer (loopback only)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from toolreg import Conversation, ToolContext, ToolRegistry, run_conversation
from toolreg.testing import ScriptedServer, call, empty, text, tool_call, tool_calls

MODEL = "scripted-model"


def conversation(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=registry, **options)


def assistant_calls(message: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]
    ]


# -- one call, then an answer ------------------------------------------------------------------


def test_single_call_round_trip(registry: ToolRegistry) -> None:
    script = [tool_call("get_weather", city="Paris"), text("Sunny, 18 °C in Paris.")]
    with ScriptedServer(script) as server:
        conv = conversation(server, registry, system="Be brief.")
        reply = conv.send("Weather in Paris?")
        server.assert_all_consumed()
        first = server.assert_request(
            0, model=MODEL, tool_names=["get_weather"], tool_choice="auto", message_count=2
        )
        second = server.assert_request(
            1, contains_tool_result="call_1", tool_result_contains='"temp": 18'
        )

    assert first["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert first["tools"][0]["function"]["name"] == "get_weather"
    # The assistant message goes back as received (tool_calls intact), then its answer.
    echoed, answer = second["messages"][2], second["messages"][3]
    assert echoed["role"] == "assistant"
    assert echoed["content"] == ""
    assert assistant_calls(echoed) == [("call_1", "get_weather", '{"city": "Paris"}')]
    assert answer == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"city": "Paris", "temp": 18}',
    }

    assert reply.text == "Sunny, 18 °C in Paris."
    assert reply.stop_reason == "answer"
    assert reply.rounds == 2
    assert [r.ok for r in reply.tool_results] == [True]
    assert reply.tool_results[0].value == {"city": "Paris", "temp": 18}
    assert reply.tool_results[0].call_id == "call_1"
    assert reply.messages == [
        *second["messages"],
        {"role": "assistant", "content": "Sunny, 18 °C in Paris."},
    ]
    assert conv.messages == reply.messages


def test_history_carries_over_to_the_next_send(registry: ToolRegistry) -> None:
    script = [tool_call("get_weather", city="Paris"), text("Sunny."), text("You're welcome.")]
    with ScriptedServer(script) as server:
        conv = conversation(server, registry)
        first = conv.send("Weather in Paris?")
        second = conv.send("Thanks!")
        body = server.assert_request(2, message_count=5)
    assert body["messages"] == [*first.messages, {"role": "user", "content": "Thanks!"}]
    assert second.text == "You're welcome."
    assert second.rounds == 1
    assert second.tool_results == []  # per reply, not per conversation


def test_run_leaves_its_input_and_the_conversation_alone(registry: ToolRegistry) -> None:
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    snapshot = json.loads(json.dumps(messages))
    with ScriptedServer([tool_call("get_weather", city="Oslo"), text("Cold.")]) as server:
        conv = conversation(server, registry)
        reply = conv.run(messages)
    assert messages == snapshot
    assert conv.messages == []
    assert reply.messages[0] == messages[0]
    assert len(reply.messages) == 4


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_finish_reasons_become_stop_reasons(registry: ToolRegistry, reason: str) -> None:
    with ScriptedServer([text("Cut off mid", finish_reason=reason)]) as server:
        reply = conversation(server, registry).send("Tell me everything.")
    assert (reply.text, reply.stop_reason) == ("Cut off mid", reason)


def test_answer_without_tools(registry: ToolRegistry) -> None:
    with ScriptedServer([text("Hello!")]) as server:
        reply = conversation(server, registry).send("Hi")
    assert (reply.text, reply.rounds, reply.tool_results) == ("Hello!", 1, [])


# -- parallel calls --------------------------------------------------------------------------


def test_parallel_calls_are_paired_in_order_and_run_concurrently() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def slow(n: int) -> str:
        """Sleep a little, then echo."""
        time.sleep(0.3)
        return f"done {n}"

    script = [
        tool_calls(
            call("slow", n=1, id="call_c"), call("slow", n=2, id="call_a"), call("slow", n=3)
        ),
        text("All done."),
    ]
    with ScriptedServer(script) as server:
        conv = conversation(server, registry)
        started = time.perf_counter()
        reply = conv.send("Run three.")
        elapsed = time.perf_counter() - started
        body = server.requests[1]
    assert elapsed < 0.8, f"three 0.3 s tools took {elapsed:.2f} s: not concurrent"
    answers = [m for m in body["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in answers] == [
        ("call_c", "done 1"),
        ("call_a", "done 2"),
        ("call_1", "done 3"),
    ]
    assert [r.call_id for r in reply.tool_results] == ["call_c", "call_a", "call_1"]
    assert body["messages"][-4]["role"] == "assistant"  # the calls, then their answers


def test_parallel_false_runs_calls_one_by_one_in_order() -> None:
    registry = ToolRegistry()
    seen: list[tuple[int, str]] = []

    @registry.register_tool
    def record(n: int) -> int:
        seen.append((n, threading.current_thread().name))
        return n

    script = [tool_calls(call("record", n=1), call("record", n=2)), text("ok")]
    with ScriptedServer(script) as server:
        reply = conversation(server, registry, parallel=False).send("go")
    main = threading.current_thread().name
    assert seen == [(1, main), (2, main)]
    assert [r.content for r in reply.tool_results] == ["1", "2"]


# -- mistakes become observations ----------------------------------------------------------


def test_tool_errors_are_fed_back_and_the_loop_continues() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def divide(a: float, b: float) -> float:
        return a / b

    script = [
        tool_calls(
            call("divide", a=1, b=0), call("divide", '{"a": 1, "b": '), call("divide", a=6, b=3)
        ),
        text("6 / 3 = 2; the others failed."),
    ]
    with ScriptedServer(script) as server:
        reply = conversation(server, registry).send("Divide.")
        body = server.assert_request(1, contains_tool_result="call_1")
    tool_messages = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == "Tool 'divide' failed: ZeroDivisionError: float division by zero"
    assert "JSON" in tool_messages[1]
    assert tool_messages[2] == "2.0"
    assert [r.error_kind for r in reply.tool_results] == ["execution_error", "invalid_json", None]
    assert reply.text == "6 / 3 = 2; the others failed."
    assert reply.stop_reason == "answer"


def test_deeply_nested_call_arguments_do_not_crash_the_loop(adder: ToolRegistry) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with ScriptedServer([tool_call("add", deep), text("done")]) as server:
        reply = Conversation(server.client(), "m", registry=adder).send("go")
    assert reply.text == "done"
    assert reply.tool_results[0].error_kind in ("invalid_json", "invalid_arguments")


def test_unknown_tool_is_an_observation(registry: ToolRegistry) -> None:
    with ScriptedServer([tool_call("get_wether", city="Rome"), text("Sorry.")]) as server:
        reply = conversation(server, registry).send("Weather in Rome?")
        server.assert_request(1, tool_result_contains="Unknown tool 'get_wether'")
    result = reply.tool_results[0]
    assert (result.ok, result.error_kind) == (False, "unknown_tool")
    assert "Did you mean 'get_weather'?" in result.content
    assert reply.text == "Sorry."


def test_tools_not_offered_are_refused_like_unknown_ones(registry: ToolRegistry) -> None:
    ran: list[str] = []

    @registry.register_tool(tags=["admin"])
    def delete_everything() -> str:
        ran.append("delete")
        return "deleted"

    @registry.register_tool(tags=["math"])
    def add(a: int, b: int) -> int:
        return a + b

    script = [tool_calls(call("delete_everything"), call("add", a=1, b=2)), text("3")]
    with ScriptedServer(script) as server:
        reply = conversation(server, registry, tools=["get_weather", "math"]).send("go")
        server.assert_request(0, tool_names=["get_weather", "add"])
    refused, added = reply.tool_results
    assert ran == []
    assert refused.error_kind == "unknown_tool"
    assert refused.content.startswith("Unknown tool 'delete_everything'.")
    assert "delete_everything" not in refused.content.split("Available:")[1]
    assert added.content == "3"


def test_a_single_name_is_not_split_into_letters(registry: ToolRegistry) -> None:
    with ScriptedServer([text("ok")]) as server:
        conversation(server, registry, tools="get_weather").send("hi")
        server.assert_request(0, tool_names=["get_weather"])


def test_an_unknown_tool_filter_entry_fails_at_construction(registry: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="get_wether"):
        Conversation(object(), MODEL, registry=registry, tools=["get_wether"])


# -- max_rounds and the final call -----------------------------------------------------------


def weather_rounds(n: int) -> list[Any]:
    return [tool_call("get_weather", city=f"City {i}") for i in range(n)]


def test_max_rounds_makes_a_final_call_with_tool_choice_none(registry: ToolRegistry) -> None:
    with ScriptedServer([*weather_rounds(2), text("Here is what I found.")]) as server:
        reply = conversation(server, registry, max_rounds=2).send("Weather everywhere?")
        server.assert_all_consumed()
        server.assert_request(1, tool_choice="auto", has_tools=True)
        server.assert_request(2, tool_choice="none", tool_names=["get_weather"])
    assert reply.stop_reason == "max_rounds"
    assert reply.text == "Here is what I found."
    assert reply.rounds == 3
    assert len(reply.tool_results) == 2


def test_final_call_drop_tools_sends_neither_tools_nor_tool_choice(
    registry: ToolRegistry,
) -> None:
    with ScriptedServer([*weather_rounds(1), text("Done.")]) as server:
        reply = conversation(server, registry, max_rounds=1, final_call="drop_tools").send("go")
        body = server.requests[1]
    assert "tools" not in body
    assert "tool_choice" not in body
    assert reply.stop_reason == "max_rounds"


def test_max_rounds_zero_answers_without_tools(registry: ToolRegistry) -> None:
    with ScriptedServer([text("No tools for me.")]) as server:
        reply = conversation(server, registry, max_rounds=0).send("go")
        server.assert_request(0, tool_choice="none", has_tools=True)
    assert reply.stop_reason == "max_rounds"
    assert reply.text == "No tools for me."


def test_a_call_in_the_final_answer_is_dropped_not_run(registry: ToolRegistry) -> None:
    ignored = tool_calls(call("get_weather", city="Rome"), content="Partial answer.")
    with ScriptedServer([*weather_rounds(1), ignored]) as server:
        reply = conversation(server, registry, max_rounds=1).send("go")
    assert reply.text == "Partial answer."
    assert len(reply.tool_results) == 1
    assert reply.messages[-1] == {"role": "assistant", "content": "Partial answer."}


def test_never_tool_choice_without_tools() -> None:
    empty_registry = ToolRegistry()
    with ScriptedServer([text("Hi.")]) as server:
        reply = conversation(server, empty_registry, tool_choice="required").send("hi")
        body = server.requests[0]
    assert "tools" not in body
    assert "tool_choice" not in body
    assert reply.text == "Hi."


def test_bad_options_fail_at_construction(registry: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        Conversation(object(), MODEL, registry=registry, max_rounds=-1)
    with pytest.raises(ValueError, match="dialect"):
        Conversation(object(), MODEL, registry=registry, dialect="anthropic")
    with pytest.raises(ValueError, match="final_call"):
        Conversation(object(), MODEL, registry=registry, final_call="none")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="assistant_content"):
        Conversation(object(), MODEL, registry=registry, assistant_content="")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="get_wether"):
        Conversation(object(), MODEL, registry=registry, tool_choice="get_wether")
    with pytest.raises(ValueError, match="get_weather"):
        Conversation(object(), MODEL, registry=registry, tools=[], tool_choice="get_weather")
    with pytest.raises(ValueError, match="output_retries"):
        Conversation(object(), MODEL, registry=registry, output_retries=-1)
    with pytest.raises(ValueError, match="required"):
        Conversation(
            object(), MODEL, registry=registry, dialect="functions", tool_choice="required"
        )


# -- tool_choice -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "first"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_tool_choice_is_sent_explicitly_and_forced_only_once(
    registry: ToolRegistry, choice: str, first: Any
) -> None:
    with ScriptedServer([*weather_rounds(2), text("ok")]) as server:
        conversation(server, registry, tool_choice=choice).send("go")
        server.assert_request(0, tool_choice=first)
        server.assert_request(1, tool_choice="auto")
        server.assert_request(2, tool_choice="auto")


def test_tool_choice_none_stays_none(registry: ToolRegistry) -> None:
    with ScriptedServer([text("not json"), text('{"result": 1}')]) as server:
        reply = conversation(server, registry, tool_choice="none").send("go", output_type=int)
        server.assert_request(0, tool_choice="none")
        server.assert_request(1, tool_choice="none")
    assert reply.output == 1


# -- the echo of an assistant message with calls and no text -------------------------------


@pytest.mark.parametrize(
    ("option", "expected"), [("empty", {"content": ""}), ("null", {"content": None}), ("omit", {})]
)
def test_assistant_content_option(registry: ToolRegistry, option: Any, expected: Any) -> None:
    with ScriptedServer([*weather_rounds(1), text("ok")]) as server:
        reply = conversation(server, registry, assistant_content=option).send("go")
        echoed = server.requests[1]["messages"][1]
    assert {k: v for k, v in echoed.items() if k == "content"} == expected
    assert echoed["tool_calls"][0]["id"] == "call_1"
    assert reply.messages[1] == echoed


def test_text_next_to_calls_is_kept(registry: ToolRegistry) -> None:
    turn = tool_calls(call("get_weather", city="Paris"), content="Let me check.")
    with ScriptedServer([turn, text("Sunny.")]) as server:
        conversation(server, registry, assistant_content="null").send("go")
        echoed = server.requests[1]["messages"][1]
    assert echoed["content"] == "Let me check."


# -- return_direct, usage ------------------------------------------------------------------


def test_return_direct_ends_without_another_model_call() -> None:
    registry = ToolRegistry()

    @registry.register_tool(return_direct=True)
    def lookup(key: str) -> str:
        return f"value of {key}"

    with ScriptedServer([tool_call("lookup", key="k1")]) as server:
        reply = conversation(server, registry).send("What is k1?")
        server.assert_all_consumed()
        assert len(server.requests) == 1
    assert reply.stop_reason == "return_direct"
    assert reply.text == "value of k1"
    assert reply.rounds == 1
    assert reply.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "value of k1",
    }


def test_return_direct_needs_every_call_of_the_round(registry: ToolRegistry) -> None:
    @registry.register_tool(return_direct=True)
    def lookup(key: str) -> str:
        return key

    both = tool_calls(call("lookup", key="k"), call("get_weather", city="Paris"))
    failed = tool_call("lookup", '{"key": 1')
    with ScriptedServer([both, failed, text("done")]) as server:
        reply = conversation(server, registry).send("go")
        server.assert_all_consumed()
    assert reply.stop_reason == "answer"  # a failed return_direct call goes back to the model


def test_usage_is_summed_over_every_model_call(registry: ToolRegistry) -> None:
    script = [
        tool_calls(call("get_weather", city="Paris"), usage=(100, 20)),
        tool_calls(call("get_weather", city="Oslo"), usage=False),
        text("Done.", usage={"prompt_tokens": 150, "completion_tokens": 7, "total_tokens": 157}),
    ]
    with ScriptedServer(script) as server:
        reply = conversation(server, registry).send("go")
    assert reply.usage.prompt_tokens == 250
    assert reply.usage.completion_tokens == 27
    assert reply.usage.total_tokens == 277


# -- empty answers, repeated calls -------------------------------------------------------------


def test_empty_answer_after_observations_gets_one_final_call(registry: ToolRegistry) -> None:
    with ScriptedServer([*weather_rounds(1), empty(None), text("Sunny.")]) as server:
        reply = conversation(server, registry).send("go")
        server.assert_request(2, tool_choice="none", has_tools=True, message_count=3)
    assert reply.text == "Sunny."
    assert reply.stop_reason == "answer"
    assert reply.rounds == 3
    assert [m["role"] for m in reply.messages] == ["user", "assistant", "tool", "assistant"]


def test_empty_final_answer_ends_the_loop(registry: ToolRegistry) -> None:
    with ScriptedServer([*weather_rounds(1), empty(), empty()]) as server:
        reply = conversation(server, registry).send("go")
        server.assert_all_consumed()
    assert reply.text == ""
    assert reply.rounds == 3


def test_empty_answer_without_observations_is_returned_as_is(registry: ToolRegistry) -> None:
    with ScriptedServer([empty()]) as server:
        reply = conversation(server, registry).send("go")
    assert (reply.text, reply.rounds) == ("", 1)
    assert reply.messages[-1] == {"role": "assistant", "content": ""}


def test_a_call_repeated_three_rounds_in_a_row_is_not_run_again() -> None:
    registry = ToolRegistry()
    runs: list[dict[str, int]] = []

    @registry.register_tool
    def search(query: str, page: int = 1) -> str:
        runs.append({"page": page})
        return f"nothing new for {query}"

    same = [
        tool_call("search", '{"query": "x", "page": 1}'),
        tool_call("search", '{"page": 1, "query": "x"}'),  # same call, keys reordered
        tool_call("search", '{"query":"x","page":1}'),
    ]
    with ScriptedServer([*same, text("I could not find it.")]) as server:
        reply = conversation(server, registry).send("find x")
        server.assert_all_consumed()
        server.assert_request(3, tool_choice="none", has_tools=True)
    assert len(runs) == 2
    third = reply.tool_results[2]
    assert (third.ok, third.error_kind) == (False, "repeated")
    assert "was not run again" in third.content
    assert "nothing new for x" in third.content
    assert reply.text == "I could not find it."
    assert reply.stop_reason == "repeated_calls"


def test_calls_that_are_not_repeated_back_to_back_keep_running() -> None:
    registry = ToolRegistry()
    runs: list[str] = []

    @registry.register_tool
    def search(query: str) -> str:
        runs.append(query)
        return "..."

    queries = ["a", "a", "b", "a", "a"]
    script = [*(tool_call("search", query=q) for q in queries), text("done")]
    with ScriptedServer(script) as server:
        reply = conversation(server, registry).send("go")
    assert runs == queries
    assert reply.stop_reason == "answer"


# -- context and confirm reach dispatch --------------------------------------------------------


def test_context_reaches_the_tool() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def whoami(ctx: ToolContext[dict[str, str]]) -> str:
        return f"{ctx.deps['user']} ({ctx.tool_name}, {ctx.call_id})"

    with ScriptedServer([tool_call("whoami"), text("You are ann.")]) as server:
        reply = conversation(server, registry, context={"user": "ann"}).send("Who am I?")
        tools = server.requests[0]["tools"]
    assert reply.tool_results[0].content == "ann (whoami, call_1)"
    assert tools[0]["function"]["parameters"]["properties"] == {}


def destructive_registry(deleted: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(destructive=True)
    def delete_file(path: str) -> str:
        deleted.append(path)
        return "deleted"

    return registry


def test_a_destructive_tool_is_denied_without_confirm() -> None:
    deleted: list[str] = []
    registry = destructive_registry(deleted)
    with ScriptedServer([tool_call("delete_file", path="/tmp/x"), text("I could not.")]) as server:
        reply = conversation(server, registry).send("delete /tmp/x")
        server.assert_request(1, tool_result_contains="was not run")
    assert deleted == []
    assert reply.tool_results[0].error_kind == "denied"


def test_a_destructive_tool_runs_when_confirm_approves() -> None:
    deleted: list[str] = []
    asked: list[tuple[str, dict[str, Any]]] = []
    registry = destructive_registry(deleted)

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append((tool.name, arguments))
        return str(arguments["path"]).startswith("/tmp/")

    script = [
        tool_calls(call("delete_file", path="/tmp/x"), call("delete_file", path="/etc/passwd")),
        text("Deleted /tmp/x only."),
    ]
    with ScriptedServer(script) as server:
        reply = conversation(server, registry, confirm=confirm).send("delete both")
    assert deleted == ["/tmp/x"]
    assert sorted(asked, key=repr) == [
        ("delete_file", {"path": "/etc/passwd"}),
        ("delete_file", {"path": "/tmp/x"}),
    ]
    assert [r.error_kind for r in reply.tool_results] == [None, "denied"]


# -- request options, one-shot -----------------------------------------------------------------


def test_request_options_are_sent_with_every_call(registry: ToolRegistry) -> None:
    with ScriptedServer([*weather_rounds(1), text("ok")]) as server:
        conversation(server, registry, temperature=0.2, max_tokens=64).send("go")
        bodies = list(server.requests)
    for body in bodies:
        assert (body["temperature"], body["max_tokens"]) == (0.2, 64)


def test_strict_sends_strict_definitions() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def f(a: int, b: int = 2) -> int:
        return a + b

    with ScriptedServer([text("ok")]) as server:
        conversation(server, registry, strict=True).send("go")
        function = server.requests[0]["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["a", "b"]


def test_run_conversation_one_shot(registry: ToolRegistry) -> None:
    with ScriptedServer([*weather_rounds(1), text("Sunny."), text("Again.")]) as server:
        client = server.client()
        reply = run_conversation(client, MODEL, "Weather?", registry=registry, system="S")
        again = run_conversation(client, MODEL, reply.messages, registry=registry)
        server.assert_request(0, message_count=2, contains_text="S")
        server.assert_request(2, message_count=5)
    assert reply.text == "Sunny."
    assert reply.messages[0] == {"role": "system", "content": "S"}
    assert again.text == "Again."


def test_run_conversation_puts_system_before_a_message_list(registry: ToolRegistry) -> None:
    with ScriptedServer([text("ok")]) as server:
        messages = [{"role": "user", "content": "hi"}]
        run_conversation(server.client(), MODEL, messages, registry=registry, system="S")
        body = server.assert_request(0, message_count=2)
    assert body["messages"] == [{"role": "system", "content": "S"}, *messages]
