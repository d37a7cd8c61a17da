"""The "responses" dialect: the loop over OpenAI's Responses API, client and server state."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationError,
    Hooks,
    ModelCallEvent,
    ModelResponseEvent,
    ToolRegistry,
    UsageError,
    trim_history,
)
from toolreg.conversation.providers.openai_responses import (
    ResponseStreamAssembler,
    normalize_response,
)
from toolreg.testing import (
    ScriptedServer,
    call,
    empty,
    error,
    last_tool_result,
    raw,
    text,
    tool_call,
    tool_calls,
)

MODEL = "scripted-model"
WEATHER = '{"city": "Paris", "temp": 18}'
LONG_CITY = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"
DEFINITION = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": False,
}


def converse(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=registry, dialect="responses", **options)


def items_of(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("type") == kind]


# -- the round trip ------------------------------------------------------------------------


def test_function_calls_are_answered_with_outputs_in_order(registry: ToolRegistry) -> None:
    turn = tool_calls(call("get_weather", city="Paris"), call("get_weather", city="Rome"))
    with ScriptedServer([turn, text("Sunny in both.")]) as server:
        reply = converse(server, registry, system="Be brief.").send("Paris and Rome?")
        server.assert_all_consumed()
        first = server.assert_request(0, path="/v1/responses", tool_choice="auto")
        second = server.assert_request(1, path="/v1/responses", contains_tool_result="call_2")
    assert first["tools"] == [DEFINITION]
    assert first["store"] is False  # client state: the whole input goes every time
    assert "previous_response_id" not in first
    assert first["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Paris and Rome?"},
    ]
    calls = items_of(second["input"], "function_call")
    outputs = items_of(second["input"], "function_call_output")
    assert [c["call_id"] for c in calls] == ["call_1", "call_2"]
    assert outputs == [
        {"type": "function_call_output", "call_id": "call_1", "output": WEATHER},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": WEATHER.replace("Paris", "Rome"),
        },
    ]
    assert reply.text == "Sunny in both."
    assert reply.stop_reason == "answer"
    assert [r.call_id for r in reply.tool_results] == ["call_1", "call_2"]
    # Reply.messages is the input item list, ready to send again
    assert reply.messages[: len(second["input"])] == second["input"]
    assert reply.messages[-1]["type"] == "message"
    assert reply.messages[-1]["content"][0]["text"] == "Sunny in both."


def test_output_items_go_back_exactly_as_received(registry: ToolRegistry) -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
        "encrypted_content": "opaque-blob",
    }
    searched = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    fc = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_a",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    }
    with ScriptedServer([raw([reasoning, searched, fc]), text("Sunny.")]) as server:
        reply = converse(server, registry).send("Weather?")
        second = server.requests[1]
    assert second["input"][1:4] == [reasoning, searched, fc]
    assert second["input"][4] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": WEATHER,
    }
    assert reply.tool_results[0].call_id == "call_a"


def test_parallel_calls_run_concurrently(registry: ToolRegistry) -> None:
    both_running = threading.Barrier(2, timeout=5)

    @registry.register_tool
    def meet(who: str) -> str:
        """Wait until the other call runs too."""
        both_running.wait()
        return f"met {who}"

    turn = tool_calls(call("meet", who="a"), call("meet", who="b"))
    with ScriptedServer([turn, text("Both met.")]) as server:
        reply = converse(server, registry).send("go")
    assert [r.content for r in reply.tool_results] == ["met a", "met b"]


def test_tool_choice_and_request_options(registry: ToolRegistry) -> None:
    script = [tool_call("get_weather", city="Paris"), text("Sunny.")]
    with ScriptedServer(script) as server:
        converse(
            server, registry, tool_choice="get_weather", parallel_tool_calls=False, temperature=0
        ).send("go")
        first, second = server.requests
    assert first["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert second["tool_choice"] == "auto"  # forced on the first call only
    assert first["parallel_tool_calls"] is False
    assert second["parallel_tool_calls"] is False
    assert first["temperature"] == 0


def test_tool_choice_required(registry: ToolRegistry) -> None:
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        converse(server, registry, tool_choice="required").send("go")
        server.assert_request(0, tool_choice="required")
        server.assert_request(1, tool_choice="auto")


@pytest.mark.parametrize("final_call", ["tool_choice_none", "drop_tools"])
def test_max_rounds_ends_with_a_tool_less_call(registry: ToolRegistry, final_call: str) -> None:
    script = [tool_call("get_weather", city="Paris"), text("It is sunny.")]
    with ScriptedServer(script) as server:
        reply = converse(server, registry, max_rounds=1, final_call=final_call).send("go")
        final = server.requests[1]
    assert reply.stop_reason == "max_rounds"
    if final_call == "drop_tools":
        assert "tools" not in final
        assert "tool_choice" not in final
    else:
        assert final["tool_choice"] == "none"
        assert final["tools"] == [DEFINITION]


def test_a_call_in_the_final_answer_is_dropped_not_run(registry: ToolRegistry) -> None:
    with ScriptedServer([tool_call("get_weather", city="Paris")]) as server:
        reply = converse(server, registry, max_rounds=0).send("go")
    assert reply.tool_results == []
    assert items_of(reply.messages, "function_call") == []  # no call left unanswered


def test_return_direct(registry: ToolRegistry) -> None:
    @registry.register_tool(return_direct=True)
    def lookup(key: str) -> str:
        """Look a key up; the result is the answer."""
        return f"value of {key}"

    with ScriptedServer([tool_call("lookup", key="k")]) as server:
        reply = converse(server, registry).send("go")
    assert reply.stop_reason == "return_direct"
    assert reply.text == "value of k"
    assert reply.messages[-1]["type"] == "function_call_output"


def test_a_call_repeated_three_rounds_in_a_row_is_not_run_again() -> None:
    reg = ToolRegistry()
    runs: list[str] = []

    @reg.register_tool
    def ping(host: str) -> str:
        """Ping a host."""
        runs.append(host)
        return "pong"

    script = [tool_call("ping", host="h")] * 3 + [text("It answers.")]
    with ScriptedServer(script) as server:
        reply = converse(server, reg).send("go")
        final = server.requests[3]
    assert runs == ["h", "h"]
    assert reply.tool_results[-1].error_kind == "repeated"
    assert reply.stop_reason == "repeated_calls"
    assert final["tool_choice"] == "none"


def test_hooks_see_the_request_and_the_response(registry: ToolRegistry) -> None:
    requests: list[dict[str, Any]] = []
    responses: list[ModelResponseEvent] = []
    hooks = Hooks(
        before_model_call=lambda e: requests.append(e.request),
        after_model_call=responses.append,
    )
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        converse(server, registry, hooks=hooks).send("go")
    assert [r["input"][-1].get("type", "message") for r in requests] == [
        "message",
        "function_call_output",
    ]
    assert responses[0].message["output"][0]["type"] == "function_call"
    assert responses[0].message["id"] == "resp_scripted_1"
    assert [r.finish_reason for r in responses] == ["stop", "stop"]


def test_a_hook_can_veto_a_call(registry: ToolRegistry) -> None:
    def veto(event: Any) -> str:
        return "Not now."

    hooks = Hooks(before_tool_call=veto)
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Ok.")]) as server:
        reply = converse(server, registry, hooks=hooks).send("go")
        server.assert_request(1, tool_result_contains="Not now.")
    assert reply.tool_results[0].error_kind == "denied"


def test_usage_is_summed_from_input_and_output_tokens(registry: ToolRegistry) -> None:
    script = [
        tool_calls(call("get_weather", city="Paris"), usage=(30, 12)),
        text("Sunny.", usage=(50, 9)),
    ]
    with ScriptedServer(script) as server:
        reply = converse(server, registry).send("go")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (80, 21)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (80, 21)
    assert reply.usage.total_tokens == 101


@pytest.mark.parametrize(
    ("reason", "stop"), [("length", "length"), ("content_filter", "content_filter")]
)
def test_incomplete_responses_stop_with_their_reason(
    registry: ToolRegistry, reason: str, stop: str
) -> None:
    with ScriptedServer([text("cut", finish_reason=reason)]) as server:
        reply = converse(server, registry).send("go")
    assert reply.stop_reason == stop
    assert reply.text == "cut"


def test_an_empty_answer_after_outputs_gets_one_final_call(registry: ToolRegistry) -> None:
    script = [tool_call("get_weather", city="Paris"), empty(), text("Sunny.")]
    with ScriptedServer(script) as server:
        reply = converse(server, registry).send("go")
        server.assert_request(2, tool_choice="none")
    assert reply.text == "Sunny."


# -- streaming ------------------------------------------------------------------------------


def test_streaming_gives_the_same_reply_as_not_streaming(registry: ToolRegistry) -> None:
    def script() -> list[Any]:
        return [
            tool_calls(
                call("get_weather", city=LONG_CITY),
                call("get_weather", city="Paris"),
                content="Let me check both.",
                usage=(30, 12),
            ),
            text("Wet in Wales, sunny in Paris: an answer in many pieces.", usage=(50, 9)),
        ]

    pieces: list[str] = []
    replies = []
    for stream in (False, True):
        with ScriptedServer(script()) as server:
            chat = converse(server, registry, stream=stream, on_text=pieces.append)
            replies.append(chat.send("go"))
            if stream:
                server.assert_request(0, stream=True)
                assert "stream_options" not in server.requests[0]
    plain, streamed = replies
    assert streamed.text == plain.text
    assert streamed.usage == plain.usage == plain.usage.add(None)
    assert [r.content for r in streamed.tool_results] == [r.content for r in plain.tool_results]
    assert json.loads(streamed.tool_results[0].content)["city"] == LONG_CITY
    assert streamed.messages == plain.messages
    assert "".join(pieces) == "Let me check both." + plain.text
    assert len(pieces) > 4  # delivered piece by piece, not at the end


def test_a_stream_is_assembled_from_deltas_when_the_final_event_has_no_items() -> None:
    seen: list[str] = []
    assembler = ResponseStreamAssembler(seen.append)
    events = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "m", "role": "assistant", "content": []},
        },
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "content_index": 0,
            "delta": "Hi ",
        },
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "content_index": 0,
            "delta": "you",
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"x"'},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": ": 1}"},
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "output": []},
        },
    ]
    for event in events:
        assembler.feed(event)
    result = assembler.result()
    assert seen == ["Hi ", "you"]
    assert result["text"] == "Hi you"
    assert result["entries"][1]["arguments"] == '{"x": 1}'
    assert result["entries"][1]["call_id"] == "c1"


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "no events"),
        ([{"type": "response.created", "response": {}}], "before the response was complete"),
        ([{"type": "error", "code": "overloaded", "message": "busy"}], "overloaded: busy"),
        (
            [
                {
                    "type": "response.failed",
                    "response": {"status": "failed", "error": {"message": "x"}},
                }
            ],
            "failed: x",
        ),
    ],
)
def test_broken_streams_are_conversation_errors(events: list[Any], message: str) -> None:
    def read() -> Any:
        assembler = ResponseStreamAssembler()
        for event in events:
            assembler.feed(event)
        return assembler.result()

    with pytest.raises(ConversationError, match=message):
        read()


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"status": "failed", "error": {"code": "server_error", "message": "boom"}}, "boom"),
        ({"status": "queued", "output": []}, "not finished"),
        ({"status": "completed", "output": "nope"}, "without a list of output items"),
        ([], "not a response"),
    ],
)
def test_unusable_responses_are_conversation_errors(response: Any, message: str) -> None:
    with pytest.raises(ConversationError, match=message):
        normalize_response(response)


# -- structured output ---------------------------------------------------------------------


@dataclass
class Forecast:
    city: str
    temperature: float


def test_structured_output_goes_through_text_format_with_retries(registry: ToolRegistry) -> None:
    script = [text('{"city": "Paris"}'), text('{"city": "Paris", "temperature": 18}')]
    with ScriptedServer(script) as server:
        chat = converse(server, registry, text={"verbosity": "low"})
        reply = chat.send("As JSON.", output_type=Forecast)
        first, retry = server.requests
    assert "response_format" not in first
    assert first["text"]["verbosity"] == "low"  # the other text options are kept
    fmt = first["text"]["format"]
    assert (fmt["type"], fmt["name"]) == ("json_schema", "Forecast")
    assert fmt["schema"]["required"] == ["city", "temperature"]
    assert retry["text"] == first["text"]
    assert "does not match the required JSON schema" in retry["input"][-1]["content"]
    assert reply.output == Forecast("Paris", 18.0)


# -- history ------------------------------------------------------------------------------


def fc(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def out(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def test_trim_history_keeps_function_call_items_with_their_outputs() -> None:
    reasoning = {"type": "reasoning", "id": "rs", "summary": []}
    history = [
        {"role": "system", "content": "S"},
        user("one"),
        reasoning,
        fc("a"),
        fc("b"),
        out("a"),
        out("b"),
        user("two"),
    ]
    # reasoning, both calls and both outputs are kept or dropped together
    assert trim_history(history, max_messages=7) == [history[0], *history[2:]]
    assert trim_history(history, max_messages=6) == [history[0], history[-1]]
    # never an output without its call at the start
    assert trim_history([fc("a"), out("a"), user("x")], max_messages=2) == [user("x")]


def test_max_history_trims_what_is_sent(registry: ToolRegistry) -> None:
    script = [text("one"), tool_call("get_weather", city="Paris"), text("two")]
    with ScriptedServer(script) as server:
        chat = converse(server, registry, max_history_messages=3)
        chat.send("first")
        chat.send("second")
        sent = server.requests[2]["input"]
    assert items_of(sent, "function_call")[0]["call_id"] == "call_1"
    assert items_of(sent, "function_call_output")[0]["call_id"] == "call_1"
    assert len(sent) == 3  # the older turn is gone, the call stays with its output


def test_endpoint_failures_leave_the_history_alone_but_for_calls_that_ran(
    registry: ToolRegistry,
) -> None:
    script = [text("Hello."), error(503, "Overloaded"), tool_call("get_weather", city="Paris")]
    script.append(error(503, "Overloaded"))
    with ScriptedServer(script) as server:
        chat = converse(server, registry)
        chat.send("hi")
        before = list(chat.messages)
        with pytest.raises(ConversationError, match="Overloaded") as caught:
            chat.send("Weather?")
        assert caught.value.status_code == 503
        assert chat.messages == before  # nothing ran: nothing kept
        with pytest.raises(ConversationError, match="Overloaded"):
            chat.send("Weather?")
        kept = [m.get("type", m.get("role")) for m in chat.messages[len(before) :]]
        assert kept == ["user", "function_call", "function_call_output"]  # it ran: kept


def test_reply_messages_can_be_sent_again(registry: ToolRegistry) -> None:
    with ScriptedServer(
        [tool_call("get_weather", city="Paris"), text("Sunny."), text("Bye.")]
    ) as server:
        reply = converse(server, registry).send("go")
        again = converse(server, registry).run([*reply.messages, user("thanks")])
        server.assert_all_consumed()  # the server refuses a history with an unanswered call
    assert again.text == "Bye."


# -- server state ----------------------------------------------------------------------------


def test_server_state_sends_only_the_new_items(registry: ToolRegistry) -> None:
    script = [tool_call("get_weather", city="Paris"), text("Sunny."), text("Bye.")]
    with ScriptedServer(script) as server:
        chat = converse(server, registry, state="server", system="S")
        first = chat.send("Weather?")
        second = chat.send("Thanks!")
        server.assert_all_consumed()
        requests = server.requests
        whole = server.history(2)
    assert "previous_response_id" not in requests[0]
    assert "store" not in requests[0]  # the server keeps what it answers
    assert requests[1]["previous_response_id"] == "resp_scripted_1"
    assert requests[1]["input"] == [
        {"type": "function_call_output", "call_id": "call_1", "output": WEATHER}
    ]
    assert requests[2]["previous_response_id"] == "resp_scripted_2"
    assert requests[2]["input"] == [user("Thanks!")]
    # the model saw the whole conversation, and the local history is the same list
    assert whole == chat.messages[: len(whole)]
    assert (first.text, second.text) == ("Sunny.", "Bye.")


def test_server_state_sends_everything_after_a_dropped_call(registry: ToolRegistry) -> None:
    # The final answer came with a call that was dropped: the server's copy is no longer
    # the history, so the next request sends the whole history without previous_response_id.
    turn = tool_calls(call("get_weather", city="Paris"), content="Sunny, I think.")
    with ScriptedServer([turn, text("Bye.")]) as server:
        chat = converse(server, registry, state="server", max_rounds=0)
        assert chat.send("Weather?").text == "Sunny, I think."
        chat.send("Thanks!")
        second = server.requests[1]
    assert "previous_response_id" not in second
    assert second["input"] == chat.messages[:-1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dialect": "tools", "state": "server"}, "needs a dialect whose endpoint keeps"),
        ({"state": "server", "max_history_messages": 5}, "the server keeps the whole history"),
        ({"state": "server", "store": False}, "drop store=False"),
        ({"state": "cloud"}, 'state must be "client" or "server"'),
    ],
)
def test_server_state_option_misuse(
    registry: ToolRegistry, options: dict[str, Any], message: str
) -> None:
    options = {"dialect": "responses", **options}
    with pytest.raises(UsageError, match=message):
        Conversation(object(), MODEL, registry=registry, **options)


def test_dynamic_turns_read_function_call_outputs(registry: ToolRegistry) -> None:
    script = [
        tool_call("get_weather", city="Paris"),
        lambda request: text(f"It is {last_tool_result(request)['temp']} degrees."),
    ]
    with ScriptedServer(script) as server:
        reply = converse(server, registry, state="server").send("go")
    assert reply.text == "It is 18 degrees."


# -- async -----------------------------------------------------------------------------------


def test_async_conversation_speaks_the_responses_api(registry: ToolRegistry) -> None:
    async def main(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            chat = AsyncConversation(
                client, MODEL, registry=registry, dialect="responses", state="server", stream=True
            )
            first = await chat.send("Weather?")
            return first, await chat.send("Thanks")

    script = [tool_call("get_weather", city="Paris"), text("Sunny."), text("Bye.")]
    with ScriptedServer(script) as server:
        first, second = asyncio.run(main(server))
        server.assert_all_consumed()
        assert server.requests[2]["previous_response_id"] == "resp_scripted_2"
    assert (first.text, second.text) == ("Sunny.", "Bye.")
    assert first.tool_results[0].value == {"city": "Paris", "temp": 18}


def test_model_call_events_carry_the_input(registry: ToolRegistry) -> None:
    events: list[ModelCallEvent] = []
    with ScriptedServer([text("Hi.")]) as server:
        converse(server, registry, hooks=Hooks(before_model_call=events.append)).send("hello")
    assert events[0].request["input"] == [user("hello")]
