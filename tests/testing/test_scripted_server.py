"""ScriptedServer, exercised through the real openai SDK over a loopback socket."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import json
import re
import subprocess
import sys
import threading
import weakref
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from toolreg import UsageError
from toolreg.testing.server import ScriptedServer
from toolreg.testing.turns import (
    Turn,
    call,
    empty,
    error,
    function_call,
    raw,
    text,
    tool_call,
    tool_calls,
)

HI = [{"role": "user", "content": "hi"}]
CHAT_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


_clients: weakref.WeakKeyDictionary[ScriptedServer, openai.OpenAI] = weakref.WeakKeyDictionary()


def ask(server: ScriptedServer, **kw: Any) -> Any:
    """One chat completion, through one client per server (clients are slowish to make)."""
    if server not in _clients:
        _clients[server] = server.client()
    kw.setdefault("messages", HI)
    return _clients[server].chat.completions.create(model="m", **kw)


# -- plain answers ---------------------------------------------------------------------------


def test_text_round_trip() -> None:
    with ScriptedServer([text("Sunny, 18 °C")], model="fake-1") as server:
        resp = ask(server)
    assert resp.object == "chat.completion"
    assert resp.model == "fake-1"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].message.content == "Sunny, 18 °C"
    assert resp.choices[0].message.tool_calls is None
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (10, 5)
    assert resp.usage.total_tokens == 15


def test_usage_forms() -> None:
    turns = [
        text("a", usage=(3, 4)),
        text("b", usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 9}),
        text("c", usage=False),
        text("d", finish_reason="length"),
    ]
    with ScriptedServer(turns) as server:
        first, second, third, fourth = (ask(server) for _ in range(4))
    assert first.usage.total_tokens == 7
    assert second.usage.total_tokens == 9
    assert third.usage is None
    assert fourth.choices[0].finish_reason == "length"


def test_single_tool_call_with_auto_and_explicit_ids() -> None:
    turns = [
        tool_call("get_weather", city="Paris"),
        tool_call("get_weather", {"city": "Rome"}, id="call_rome"),
        tool_call("get_weather", city="Oslo"),
    ]
    with ScriptedServer(turns) as server:
        messages = [ask(server, tools=TOOLS).choices[0] for _ in range(3)]
    first = messages[0]
    assert first.finish_reason == "tool_calls"
    assert first.message.content is None
    (tc,) = first.message.tool_calls
    assert (tc.id, tc.type, tc.function.name) == ("call_1", "function", "get_weather")
    assert json.loads(tc.function.arguments) == {"city": "Paris"}
    assert messages[1].message.tool_calls[0].id == "call_rome"
    assert messages[2].message.tool_calls[0].id == "call_2"


def test_parallel_tool_calls_in_one_message() -> None:
    turn = tool_calls(
        call("get_weather", city="Paris"),
        call("get_time", {"tz": "Europe/Paris"}, id="t1"),
        content="Checking both.",
    )
    with ScriptedServer([turn]) as server:
        choice = ask(server).choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking both."
    calls = [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls
    ]
    assert calls == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("t1", "get_time", {"tz": "Europe/Paris"}),
    ]


def test_bad_json_arguments_are_sent_verbatim() -> None:
    with ScriptedServer([tool_call("get_weather", '{"city": "Par')]) as server:
        tc = ask(server).choices[0].message.tool_calls[0]
    assert tc.function.arguments == '{"city": "Par'


def test_legacy_function_call() -> None:
    with ScriptedServer([function_call("get_weather", city="Paris")]) as server:
        choice = ask(server, functions=[TOOLS[0]["function"]]).choices[0]
        server.assert_request(0, has_tools=True, tool_names=["get_weather"])
    assert choice.finish_reason == "function_call"
    assert choice.message.tool_calls is None
    assert choice.message.function_call.name == "get_weather"
    assert json.loads(choice.message.function_call.arguments) == {"city": "Paris"}


def test_raw_message_is_verbatim() -> None:
    glm = {"role": "assistant", "content": "get_weather\n```python\ntool_call(city='Paris')\n```"}
    odd = {"role": "assistant", "content": None, "metadata": "get_weather"}
    with ScriptedServer([raw(glm), raw(odd, finish_reason=None)]) as server:
        first, second = ask(server), ask(server)
    assert first.choices[0].message.content == glm["content"]
    assert second.choices[0].message.content is None
    assert second.choices[0].message.tool_calls is None
    assert second.choices[0].finish_reason is None


def test_empty_answers() -> None:
    with ScriptedServer([empty(), empty(None)]) as server:
        first, second = ask(server), ask(server)
    assert first.choices[0].message.content == ""
    assert second.choices[0].message.content is None
    assert second.choices[0].message.tool_calls is None


# -- errors ----------------------------------------------------------------------------------


def test_scripted_errors_raise_the_sdk_exceptions() -> None:
    turns = [error(500, "the model fell over"), error(400, "bad tools", code="invalid_tools")]
    turns.append(error(429, "slow down"))
    with ScriptedServer(turns) as server:
        with pytest.raises(openai.InternalServerError, match="the model fell over") as crash:
            ask(server)
        with pytest.raises(openai.BadRequestError, match="bad tools") as bad:
            ask(server)
        with pytest.raises(openai.RateLimitError, match="slow down"):
            ask(server)
        server.assert_all_consumed()  # scripted errors are answers, not server problems
    assert crash.value.status_code == 500
    assert bad.value.code == "invalid_tools"
    assert bad.value.type == "invalid_request_error"


def test_running_out_of_turns_is_a_500_and_is_reported() -> None:
    with ScriptedServer([text("only one")]) as server:
        ask(server)
        with pytest.raises(
            openai.InternalServerError, match=r"no scripted turn left for request #2"
        ):
            ask(server)
        with pytest.raises(AssertionError, match=r"no scripted turn left for request #2"):
            server.assert_all_consumed()
        assert len(server.requests) == 2  # the unanswered request is still recorded


def test_unknown_path_is_404() -> None:
    with ScriptedServer([text("unused")]) as server:
        with pytest.raises(openai.NotFoundError, match="no endpoint POST /v1/embeddings"):
            server.client().embeddings.create(model="m", input="x")
        assert server.remaining == 1
        assert server.requests == []
        assert server.errors


def test_bad_json_body_is_400() -> None:
    # The SDK cannot send a broken body, so this one robustness check uses http.client.
    with ScriptedServer([text("unused")]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", urlsplit(server.base_url).port)
        conn.request("POST", "/v1/chat/completions", body=b"{nope", headers={"Content-Length": "5"})
        reply = conn.getresponse()
        body = json.loads(reply.read())
        conn.close()
        assert server.remaining == 1
    assert reply.status == 400
    assert "not valid JSON" in body["error"]["message"]


def test_builders_fail_loud_and_turns_are_immutable() -> None:
    with pytest.raises(ValueError, match="400-599"):
        error(200)
    with pytest.raises(TypeError, match="not both"):
        tool_call("f", "{}", x=1)
    with pytest.raises(TypeError):
        tool_calls()
    with pytest.raises(TypeError):
        raw({"content": object()})
    turn = text("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.content = "changed"  # type: ignore[misc]
    assert repr(turn) == "text('hi')"
    assert repr(tool_call("f", x=1, id="c")) == """tool_calls(call('f', '{"x": 1}', id='c'))"""


# -- streaming -------------------------------------------------------------------------------


def test_streaming_text_comes_in_several_deltas() -> None:
    content = "The weather in Paris is sunny and 18 degrees, with a light breeze."
    with ScriptedServer([text(content)]) as server:
        chunks = list(ask(server, stream=True))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert "".join(pieces) == content
    assert len(pieces) > 5
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks][-2:] == [None, "stop"]
    assert all(c.usage is None for c in chunks)


def test_streaming_tool_calls_reassemble_per_index() -> None:
    turn = tool_calls(
        call("get_weather", city="Paris, France"),
        call("get_time", {"tz": "Europe/Paris", "format": "24h"}),
    )
    with ScriptedServer([turn]) as server:
        chunks = list(ask(server, stream=True))
    fragments: dict[int, list[Any]] = defaultdict(list)
    for chunk in chunks:
        for tc in chunk.choices[0].delta.tool_calls or []:
            fragments[tc.index].append(tc)
    assert sorted(fragments) == [0, 1]
    for index, (name, call_id) in enumerate([("get_weather", "call_1"), ("get_time", "call_2")]):
        head, *rest = fragments[index]
        assert (head.id, head.type, head.function.name) == (call_id, "function", name)
        assert rest
        assert all(f.id is None and f.function.name is None for f in rest)
        arguments = "".join(f.function.arguments or "" for f in fragments[index])
        assert json.loads(arguments) == json.loads(turn.calls[index].arguments)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_streaming_include_usage_sends_a_final_usage_chunk() -> None:
    with ScriptedServer([text("hello there", usage=(7, 2))]) as server:
        chunks = list(ask(server, stream=True, stream_options={"include_usage": True}))
    *body, last = chunks
    assert last.choices == []
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (7, 2)
    assert all(c.usage is None for c in body)
    assert body[-1].choices[0].finish_reason == "stop"


def test_streaming_legacy_function_call() -> None:
    with ScriptedServer([function_call("get_weather", city="Paris")]) as server:
        chunks = list(ask(server, stream=True))
    parts = [c.choices[0].delta.function_call for c in chunks if c.choices[0].delta.function_call]
    assert parts[0].name == "get_weather"
    assert all(p.name is None for p in parts[1:])
    assert json.loads("".join(p.arguments for p in parts)) == {"city": "Paris"}
    assert chunks[-1].choices[0].finish_reason == "function_call"


# -- Responses API ---------------------------------------------------------------------------


needs_responses_api = pytest.mark.skipif(
    not hasattr(openai.OpenAI, "responses"), reason="this openai SDK has no Responses API"
)


@needs_responses_api
def test_responses_api_text_and_function_call() -> None:
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny")]) as server:
        client = server.client()
        flat_tools = [{"type": "function", **TOOLS[0]["function"]}]
        first = client.responses.create(model="m", input="Weather?", tools=flat_tools)
        (item,) = first.output
        assert item.type == "function_call"
        assert (item.call_id, item.name) == ("call_1", "get_weather")
        assert json.loads(item.arguments) == {"city": "Paris"}
        followup = [
            {
                "type": "function_call",
                "call_id": item.call_id,
                "name": item.name,
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": item.call_id, "output": "18 degrees"},
        ]
        second = client.responses.create(model="m", input=followup, instructions="Be brief.")
        server.assert_request(0, path="/v1/responses", tool_names=["get_weather"])
        server.assert_request(
            1, contains_tool_result="call_1", tool_result_contains="18", contains_text="brief"
        )
    assert first.status == "completed"
    assert second.output_text == "Sunny"
    assert second.instructions == "Be brief."
    assert (second.usage.input_tokens, second.usage.output_tokens) == (10, 5)
    assert second.usage.total_tokens == 15
    assert server.paths == ["/v1/responses", "/v1/responses"]


@needs_responses_api
def test_responses_api_streaming() -> None:
    with ScriptedServer([text("Sunny and warm today"), tool_call("f", x=1)]) as server:
        client = server.client()
        events = list(client.responses.create(model="m", input="hi", stream=True))
        with client.responses.stream(model="m", input="hi") as stream:
            final = stream.get_final_response()
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "Sunny and warm today"
    assert len(deltas) > 1
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Sunny and warm today"
    assert [(i.type, i.name, i.arguments) for i in final.output] == [
        ("function_call", "f", '{"x": 1}')
    ]


@needs_responses_api
def test_responses_api_incomplete_on_length() -> None:
    with ScriptedServer([text("cut", finish_reason="length")]) as server:
        resp = server.client().responses.create(model="m", input="hi")
    assert resp.status == "incomplete"
    assert resp.incomplete_details.reason == "max_output_tokens"


def fc_item(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def fc_output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


@needs_responses_api
@pytest.mark.parametrize(
    ("items", "problem"),
    [
        ([fc_item("c1")], "the call 'c1' is never answered"),
        ([fc_output("c9")], "a function_call_output answers no call ('c9')"),
        ([fc_item("c1"), fc_output("c1"), fc_output("c1")], "the call 'c1' is answered twice"),
    ],
)
def test_responses_api_refuses_an_invalid_history(items: list[Any], problem: str) -> None:
    with ScriptedServer([text("never sent")]) as server:
        with pytest.raises(openai.BadRequestError, match=re.escape(problem)):
            server.client().responses.create(model="m", input=[*HI, *items])
        assert server.remaining == 1  # no turn used
        assert problem in server.errors[0]


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        (
            [{"role": "assistant", "content": "", "tool_calls": [CHAT_CALL]}, *HI],
            "the tool call 'c1' is not answered before the next message",
        ),
        ([{"role": "tool", "tool_call_id": "c7", "content": "x"}], "answers no call ('c7')"),
    ],
)
def test_chat_completions_refuse_an_invalid_history(messages: list[Any], problem: str) -> None:
    with ScriptedServer([text("never sent")]) as server:
        with pytest.raises(openai.BadRequestError, match=re.escape(problem)):
            server.client().chat.completions.create(model="m", messages=[*HI, *messages])
        assert server.remaining == 1


def test_legacy_answers_without_ids_answer_the_calls_in_order() -> None:
    history = [
        *HI,
        {"role": "assistant", "content": "", "tool_calls": [CHAT_CALL]},
        {"role": "observation", "content": "sunny"},  # ChatGLM3: no id
        *HI,
    ]
    with ScriptedServer([text("ok")]) as server:
        server.client().chat.completions.create(model="m", messages=history)
        server.assert_all_consumed()


@needs_responses_api
def test_responses_api_continues_from_a_stored_response() -> None:
    script = [tool_call("f", x=1), text("done"), text("again")]
    with ScriptedServer(script) as server:
        client = server.client()
        first = client.responses.create(model="m", input="hi")
        second = client.responses.create(
            model="m", input=[fc_output(first.output[0].call_id)], previous_response_id=first.id
        )
        assert second.output_text == "done"
        history = server.history(1)
        assert [i.get("type", i.get("role")) for i in history] == [
            "user",
            "function_call",
            "function_call_output",
        ]
        with pytest.raises(openai.BadRequestError, match="previous response 'resp_nope' not found"):
            client.responses.create(model="m", input="x", previous_response_id="resp_nope")
        unstored = client.responses.create(model="m", input="x", store=False)
        with pytest.raises(openai.BadRequestError, match="not found"):
            client.responses.create(model="m", input="x", previous_response_id=unstored.id)
        assert server.history(0) == [{"role": "user", "content": "hi"}]


@needs_responses_api
def test_raw_output_items_answer_the_responses_api_only() -> None:
    items = [{"type": "reasoning", "id": "rs_1", "summary": []}, fc_item("c1")]
    with ScriptedServer([raw(items), raw(items)]) as server:
        client = server.client()
        response = client.responses.create(model="m", input="hi")
        assert [i.type for i in response.output] == ["reasoning", "function_call"]
        with pytest.raises(openai.InternalServerError, match="answers /v1/responses only"):
            client.chat.completions.create(model="m", messages=HI)


@needs_responses_api
def test_responses_api_streams_call_arguments_in_pieces_and_usage() -> None:
    arguments = {"city": "Llanfairpwllgwyngyll", "unit": "celsius"}
    with ScriptedServer([tool_call("get_weather", arguments)]) as server:
        events = list(server.client().responses.create(model="m", input="hi", stream=True))
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(pieces) > 3
    assert json.loads("".join(pieces)) == arguments
    assert events[-1].response.usage.output_tokens == 5


# -- async, models, dynamic turns ------------------------------------------------------------


def test_async_client() -> None:
    async def run(server: ScriptedServer) -> tuple[str, str]:
        async with server.async_client() as client:
            plain = await client.chat.completions.create(model="m", messages=HI)
            stream = await client.chat.completions.create(model="m", messages=HI, stream=True)
            streamed = "".join([c.choices[0].delta.content or "" async for c in stream])
        return plain.choices[0].message.content or "", streamed

    with ScriptedServer([text("one"), text("two words")]) as server:
        assert asyncio.run(run(server)) == ("one", "two words")


def test_models_list() -> None:
    with ScriptedServer(model="fake-2") as server:
        assert [m.id for m in server.client().models.list()] == ["fake-2"]


def test_dynamic_turn_echoes_the_request() -> None:
    def echo(body: dict[str, Any]) -> Turn:
        return text("echo: " + body["messages"][-1]["content"])

    def broken(body: dict[str, Any]) -> Turn:
        raise ValueError("oops")

    with ScriptedServer([echo, broken]) as server:
        resp = ask(server, messages=[{"role": "user", "content": "ping"}])
        with pytest.raises(openai.InternalServerError, match="raised ValueError: oops"):
            ask(server)
    assert resp.choices[0].message.content == "echo: ping"


# -- recording and assertions ----------------------------------------------------------------


def test_requests_recorded_in_order_and_add() -> None:
    with ScriptedServer([text("a")]) as server:
        assert server.remaining == 1
        server.add(text("b"), text("c"))
        assert server.remaining == 3
        for word in ("x", "y", "z"):
            ask(server, messages=[{"role": "user", "content": word}])
        server.assert_all_consumed()
    assert [r["messages"][0]["content"] for r in server.requests] == ["x", "y", "z"]
    assert server.paths == ["/v1/chat/completions"] * 3
    assert server.remaining == 0


def test_assert_request_passes_and_fails_readably() -> None:
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny")]) as server:
        first = ask(server, tools=TOOLS, tool_choice="auto")
        tc = first.choices[0].message.tool_calls[0]
        history = [
            {"role": "system", "content": "You are terse."},
            *HI,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": tc.id, "content": '{"temp": 18}'},
        ]
        ask(server, messages=history)

        body = server.assert_request(
            0, has_tools=True, tool_names=["get_weather"], tool_choice="auto", stream=False
        )
        assert body["model"] == "m"
        server.assert_request(-1, contains_tool_result="call_1", tool_result_contains='"temp"')
        server.assert_request(1, has_tools=False, tool_choice=None, message_count=4)
        server.assert_request(1, contains_text="terse", path="/v1/chat/completions", model="m")

        with pytest.raises(AssertionError) as missing:
            server.assert_request(1, contains_tool_result="call_9", has_tools=True)
        message = str(missing.value)
        assert "requests[1] has no tools; contains no tool result for 'call_9'" in message
        assert "messages=[system, user, assistant['call_1'], tool(call_1)]" in message

        with pytest.raises(AssertionError, match=r"requests\[0\] has tool_choice 'auto', expected"):
            server.assert_request(0, tool_choice="required")
        with pytest.raises(AssertionError, match="has tools \\['get_weather'\\]"):
            server.assert_request(0, has_tools=False)
        with pytest.raises(AssertionError, match="no tool result containing 'rain'"):
            server.assert_request(1, tool_result_contains="rain")
        with pytest.raises(AssertionError, match=r"no requests\[5\]: 2 request\(s\) received"):
            server.assert_request(5)


def test_assert_all_consumed_names_the_leftover_turns() -> None:
    with ScriptedServer([text("used"), text("unused"), tool_call("f", id="c")]) as server:
        ask(server)
        with pytest.raises(AssertionError, match=r"2 scripted turn\(s\) never requested: text"):
            server.assert_all_consumed()


# -- concurrency and lifecycle ---------------------------------------------------------------


def test_concurrent_requests_are_all_answered() -> None:
    answers = [f"answer {n}" for n in range(8)]
    with ScriptedServer([text(a) for a in answers]) as server:
        client = server.client()
        barrier = threading.Barrier(8)
        got: list[str] = []

        def worker() -> None:
            barrier.wait()
            resp = client.chat.completions.create(model="m", messages=HI)
            got.append(resp.choices[0].message.content or "")

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        server.assert_all_consumed()
    assert sorted(got) == answers
    assert len(server.requests) == 8


def test_lifecycle() -> None:
    server = ScriptedServer([text("x")])
    with pytest.raises(UsageError, match="not running"):
        server.base_url
    server.start()
    server.start()  # idempotent
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")
    assert ask(server).choices[0].message.content == "x"
    server.close()
    server.close()  # idempotent
    with pytest.raises(UsageError, match="closed"):
        server.start()


def test_importing_the_module_does_not_import_openai() -> None:
    code = (
        "import sys, toolreg.testing.server; assert 'openai' not in sys.modules, 'openai imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_history_problems_is_public_and_reads_both_shapes() -> None:
    from toolreg.testing import history_problems

    chat = [*HI, {"role": "assistant", "content": "", "tool_calls": [CHAT_CALL]}]
    assert history_problems([*chat, {"role": "tool", "tool_call_id": "c1", "content": "x"}]) == []
    assert history_problems(chat) == ["the call 'c1' is never answered"]
    items = [*HI, fc_item("a"), fc_item("b"), fc_output("b"), fc_output("a")]
    assert history_problems(items) == []  # Responses API outputs may come in any order


# -- before_send: pacing and cutting answers ---------------------------------------------------


def test_before_send_sees_every_chunk_in_order_before_it_is_sent() -> None:
    seen: list[tuple[int, Any]] = []
    client_saw_call = threading.Event()
    order: list[str] = []

    def before_send(index: int, chunk: dict[str, Any]) -> None:
        seen.append((index, chunk))
        if index == 0 and chunk["choices"] and chunk["choices"][0]["finish_reason"]:
            # the stream is held here until the client has read the call's chunks
            order.append("client read the call" if client_saw_call.wait(5) else "timed out")
            order.append("finish sent")

    turn = tool_calls(call("f", {"x": 1}), call("g"))
    with ScriptedServer([turn, text("ok")], before_send=before_send) as server:
        chunks = []
        for chunk in ask(server, stream=True):
            chunks.append(chunk.model_dump(exclude_unset=True))
            if chunk.choices and chunk.choices[0].delta.tool_calls:
                client_saw_call.set()
        plain = ask(server)
    assert order == ["client read the call", "finish sent"]
    assert [i for i, _ in seen] == [0] * len(chunks) + [1]  # one call for the plain answer
    assert [c for _, c in seen[:-1]] == chunks
    assert seen[-1][1]["object"] == "chat.completion"
    assert plain.choices[0].message.content == "ok"


def test_before_send_paces_responses_events() -> None:
    kinds: list[str] = []
    with ScriptedServer(
        [tool_call("f", x=1)], before_send=lambda i, e: kinds.append(e["type"])
    ) as s:
        events = [e.type for e in s.client().responses.create(model="m", input="hi", stream=True)]
    assert kinds == events
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"


def test_before_send_raising_cuts_the_stream_off() -> None:
    def cut(index: int, chunk: dict[str, Any]) -> None:
        if chunk["choices"] and chunk["choices"][0]["finish_reason"]:
            raise RuntimeError("cut here")

    with ScriptedServer([tool_call("f", x=1)], before_send=cut) as server:
        received: list[Any] = []
        stream = ask(server, stream=True)
        with pytest.raises(Exception) as failed:  # httpx's or openai's, by SDK version
            received.extend(stream)
        assert type(failed.value).__module__.split(".")[0] in ("httpx", "openai", "httpcore")
        assert received
        assert all(not c.choices[0].finish_reason for c in received if c.choices)
        server.assert_all_consumed()  # a cut answer is scripted, not a server error


def test_before_send_raising_drops_a_plain_answer() -> None:
    def cut(index: int, body: dict[str, Any]) -> None:
        raise RuntimeError("gone")

    with (
        ScriptedServer([text("never")], before_send=cut) as server,
        pytest.raises(openai.APIConnectionError),
    ):
        ask(server)


def test_before_send_must_be_callable() -> None:
    with pytest.raises(UsageError, match="before_send must be a callable"):
        ScriptedServer([], before_send=0.5)  # type: ignore[arg-type]
