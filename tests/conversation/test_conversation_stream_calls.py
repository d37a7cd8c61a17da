"""What a streamed answer's calls run with, on real HTTP streams read by the official SDKs.

Each test serves an exact stream (`tests/_stream_server.py`) that a provider may send: the
heads of several calls before any arguments, arguments that go on after they were complete,
a stream that stops before its terminal event, calls that share an id. The rules: a call
starts early only when its own arguments are a complete JSON object that validates; a final
call is matched to its early run by id and decoded arguments, and never runs twice; a stream
without its terminal event is an error that names the calls already started, and keeps no
history; every call has an id of its own, which goes back in the history with its answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import anthropic
import openai
import pytest
from _stream_server import (
    StreamServer,
    anthropic_text,
    arguments_delta,
    block_start,
    block_stop,
    chat_chunk,
    chat_text,
    completed,
    created,
    frames,
    input_delta,
    item_added,
    item_done,
    message_delta,
    message_start,
    message_stop,
    responses_text,
)

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationError,
    ToolCallReady,
    ToolRegistry,
)
from toolreg.testing import ScriptedServer, call, text, tool_calls

MODEL = "stream-model"


class Pings:
    """`ping(tag="default")`, read-only (so it may start early): `ran` lists the tags."""

    def __init__(self, **flags: Any) -> None:
        self.ran: list[str] = []
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.registry = reg = ToolRegistry()

        def ping(tag: str = "default") -> str:
            """Ping with a tag."""
            with self.lock:
                self.ran.append(tag)
            self.started.set()
            return f"pong {tag}"

        reg.register_tool(ping, **(flags or {"read_only": True}))


@pytest.fixture(scope="module")
def server() -> Any:
    with StreamServer() as running:
        yield running


def chat(server: StreamServer, pings: Pings, asynchronous: bool = False, **options: Any) -> Any:
    if asynchronous:
        client: Any = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        return AsyncConversation(client, MODEL, registry=pings.registry, stream=True, **options)
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    return Conversation(client, MODEL, registry=pings.registry, stream=True, **options)


def send(conversation: Any, prompt: str = "ping twice") -> Any:
    if isinstance(conversation, AsyncConversation):

        async def go() -> Any:
            try:
                return await conversation.send(prompt)
            finally:
                await conversation.client.close()

        return asyncio.run(go())
    return conversation.send(prompt)


def head(index: int, call_id: str | None, name: str = "ping") -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "type": "function"}
    fragment["function"] = {"name": name, "arguments": ""}
    if call_id is not None:
        fragment["id"] = call_id
    return {"tool_calls": [fragment]}


def args(index: int, piece: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def chat_stream(*deltas: dict[str, Any], finish: str | None = "tool_calls") -> list[bytes]:
    chunks = [chat_chunk({"role": "assistant", "content": None})]
    chunks += [chat_chunk(delta) for delta in deltas]
    if finish is not None:
        chunks.append(chat_chunk({}, finish))
    return frames(chunks, done=finish is not None)


def tool_answers(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, content) of each tool result the request sends back, any API."""
    found = []
    for m in body.get("messages") or body.get("input") or ():
        if m.get("role") == "tool":
            found.append((m["tool_call_id"], m["content"]))
        elif m.get("type") == "function_call_output":
            found.append((m["call_id"], m["output"]))
        elif isinstance(m.get("content"), list):
            found += [
                (b["tool_use_id"], b["content"]) for b in m["content"] if b["type"] == "tool_result"
            ]
    return found


# -- 1. arguments the model never sent ---------------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_chat_heads_first_then_arguments_runs_each_call_once_with_its_own(
    server: StreamServer, asynchronous: bool
) -> None:
    """Both heads, then both argument strings: call 0 is not complete when call 1's head
    arrives (its arguments are still ""): nothing runs with defaults."""
    pings = Pings()
    server.script(
        chat_stream(
            head(0, "call_a"),
            head(1, "call_b"),
            args(0, '{"tag": '),
            args(1, '{"tag": "b"}'),
            args(0, '"a"}'),
        ),
        chat_text("done"),
    )
    reply = send(chat(server, pings, asynchronous))
    assert sorted(pings.ran) == ["a", "b"]
    assert reply.text == "done"
    assert tool_answers(server.requests[1]) == [("call_a", "pong a"), ("call_b", "pong b")]


def test_chat_a_call_whose_arguments_never_complete_does_not_start_early(
    server: StreamServer,
) -> None:
    """Arguments that are not a JSON object when the answer ends: dispatch refuses them in
    the round; nothing ran with defaults."""
    pings = Pings()
    server.script(chat_stream(head(0, "call_a"), args(0, '{"tag": "a"')), chat_text("done"))
    reply = send(chat(server, pings))
    assert pings.ran == []
    assert reply.tool_results[0].error_kind == "invalid_json"


def test_chat_arguments_that_do_not_validate_do_not_start_early(server: StreamServer) -> None:
    pings = Pings()
    events: list[str] = []
    server.script(
        chat_stream(head(0, "call_a"), args(0, '{"tag": 5, "extra": 1}')), chat_text("done")
    )
    conversation = chat(server, pings, on_event=lambda e: events.append(e))
    reply = send(conversation)
    assert pings.ran == []
    assert reply.tool_results[0].error_kind == "invalid_arguments"
    assert not [e for e in events if getattr(e, "early", False)]


def test_responses_interleaved_calls_each_run_once_with_their_own_arguments(
    server: StreamServer,
) -> None:
    pings = Pings()
    items = [
        {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "ping"}
        for n in range(2)
    ]
    final = [{**items[0], "arguments": '{"tag": "a"}'}, {**items[1], "arguments": '{"tag": "b"}'}]
    events = [
        created(),
        item_added(0, {**items[0], "arguments": ""}),
        item_added(1, {**items[1], "arguments": ""}),
        arguments_delta(1, "fc_1", '{"tag": "b"}'),
        arguments_delta(0, "fc_0", '{"tag": "a"}'),
        item_done(1, final[1]),
        item_done(0, final[0]),
        completed(final),
    ]
    server.script(frames(events, named=True), responses_text("done"))
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    conversation = Conversation(
        client, MODEL, registry=pings.registry, stream=True, dialect="responses"
    )
    reply = conversation.send("ping twice")
    assert sorted(pings.ran) == ["a", "b"]
    assert reply.text == "done"


# -- 2. run twice --------------------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_chat_white_space_after_complete_arguments_does_not_run_the_call_again(
    server: StreamServer, asynchronous: bool
) -> None:
    pings = Pings()
    server.script(
        chat_stream(
            head(0, "call_a"),
            args(0, '{"tag": "a"}'),
            head(1, "call_b"),
            args(0, " "),  # call 0 goes on after it was complete (and had started)
            args(1, '{"tag": "b"}'),
        ),
        chat_text("done"),
    )
    reply = send(chat(server, pings, asynchronous))
    assert sorted(pings.ran) == ["a", "b"]
    assert [r.content for r in reply.tool_results] == ["pong a", "pong b"]


def test_chat_arguments_one_character_at_a_time_start_once_they_are_whole(
    server: StreamServer,
) -> None:
    """Braces, quotes and escapes inside the strings, each piece one character: the call
    is complete only at its real end (and the stream reads in linear time)."""
    pings = Pings()
    text = json.dumps({"tag": 'a}"{\\"}' + "}" * 1100})  # long: read by ObjectEnd
    seen: list[Any] = []
    server.script(chat_stream(head(0, "call_a"), *(args(0, c) for c in text)), chat_text("done"))
    reply = send(chat(server, pings, on_event=seen.append))
    assert pings.ran == [json.loads(text)["tag"]]
    assert [e.early for e in seen if isinstance(e, ToolCallReady)] == [True]
    assert reply.text == "done"


def test_chat_key_order_and_spacing_do_not_make_another_call(server: StreamServer) -> None:
    """The early run is matched by decoded arguments: the same object in other text."""
    pings = Pings()
    server.script(chat_stream(head(0, "call_a"), args(0, '{ "tag" :"a" }\n')), chat_text("done"))
    reply = send(chat(server, pings))
    assert pings.ran == ["a"]
    assert reply.tool_results[0].content == "pong a"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_responses_final_arguments_that_differ_never_run_again_and_the_model_is_told(
    server: StreamServer, asynchronous: bool
) -> None:
    """The item's `done` event starts the call with {"tag": "a"}; the completed response
    says {"tag": "z"}: the call ran once, and its observation says with which arguments."""
    pings = Pings()
    item = {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "ping"}
    events = [
        created(),
        item_added(0, {**item, "arguments": ""}),
        item_done(0, {**item, "arguments": '{"tag": "a"}'}),
        completed([{**item, "arguments": '{"tag": "z"}'}]),
    ]
    server.script(frames(events, named=True), responses_text("done"))
    if asynchronous:
        client: Any = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        conversation: Any = AsyncConversation(
            client, MODEL, registry=pings.registry, stream=True, dialect="responses"
        )
    else:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        conversation = Conversation(
            client, MODEL, registry=pings.registry, stream=True, dialect="responses"
        )
    reply = send(conversation)
    assert pings.ran == ["a"]
    content = reply.tool_results[0].content
    assert content.startswith('(This call ran with the arguments {"tag": "a"}')
    assert content.endswith("pong a")
    assert tool_answers(server.requests[1]) == [("call_0", content)]


def test_anthropic_a_repeated_block_stop_does_not_start_the_call_twice(
    server: StreamServer,
) -> None:
    pings = Pings()
    block = {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}
    events = [
        message_start(),
        block_start(0, block),
        input_delta(0, '{"tag": "a"}'),
        block_stop(0),
        block_stop(0),
        message_delta(),
        message_stop(),
    ]
    server.script(frames(events, named=True), anthropic_text("done"))
    client = anthropic.Anthropic(base_url=server.root_url, api_key="k", max_retries=0)
    seen: list[Any] = []
    conversation = Conversation(
        client, MODEL, registry=pings.registry, stream=True, on_event=seen.append
    )
    reply = conversation.send("ping")
    assert pings.ran == ["a"]
    assert [e.call.call_id for e in seen if isinstance(e, ToolCallReady)] == ["toolu_1"]
    assert reply.text == "done"


# -- 3. a truncated stream -----------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_chat_a_stream_that_ends_without_finish_reason_is_an_error(
    server: StreamServer, asynchronous: bool
) -> None:
    """What a proxy closing an idle stream produces: no finish_reason, no [DONE]."""
    pings = Pings()
    cut = frames([chat_chunk({"role": "assistant", "content": "The answer is"})])
    server.script(cut)
    conversation = chat(server, pings, asynchronous)
    with pytest.raises(ConversationError, match="stream ended before") as raised:
        send(conversation)
    assert server.base_url in str(raised.value)  # it names the endpoint
    assert conversation.messages == []


def test_chat_a_cut_stream_never_runs_a_call_without_its_arguments(server: StreamServer) -> None:
    pings = Pings()
    server.script(chat_stream(head(0, "call_a"), finish=None))
    conversation = chat(server, pings)
    with pytest.raises(ConversationError, match="stream ended before"):
        send(conversation)
    assert pings.ran == []
    assert conversation.messages == []


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_cut_stream_names_the_calls_it_had_started(
    server: StreamServer, asynchronous: bool
) -> None:
    """The stream is held until `ping` has run, then ends without its finish_reason."""
    pings = Pings()
    stream = chat_stream(head(0, "call_a"), args(0, '{"tag": "a"}'), head(1, "call_b"), finish=None)
    server.script([*stream[:3], pings.started, *stream[3:]])
    conversation = chat(server, pings, asynchronous)
    with pytest.raises(ConversationError) as raised:
        send(conversation)
    message = str(raised.value)
    assert "stream ended before" in message
    assert "ping (call_a)" in message
    assert "call_b" not in message
    assert [c.call_id for c in raised.value.started] == ["call_a"]
    assert pings.ran == ["a"]  # it ran (started early), once
    assert conversation.messages == []


def test_responses_a_stream_without_completed_names_the_started_call(
    server: StreamServer,
) -> None:
    pings = Pings()
    item = {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "ping"}
    events = [
        created(),
        item_done(0, {**item, "arguments": '{"tag": "a"}'}),
    ]
    server.script(frames(events, named=True))
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    conversation = Conversation(
        client, MODEL, registry=pings.registry, stream=True, dialect="responses"
    )
    with pytest.raises(ConversationError, match=r"stream ended before.*ping \(call_0\)"):
        conversation.send("ping")
    assert pings.ran == ["a"]
    assert conversation.messages == []


def test_anthropic_a_stream_without_message_stop_is_an_error(server: StreamServer) -> None:
    pings = Pings()
    block = {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}
    events = [
        message_start(),
        block_start(0, block),
        input_delta(0, '{"tag": "a"}'),
        block_stop(0),
    ]
    server.script(frames(events, named=True))
    client = anthropic.Anthropic(base_url=server.root_url, api_key="k", max_retries=0)
    conversation = Conversation(client, MODEL, registry=pings.registry, stream=True)
    with pytest.raises(ConversationError, match=r"stream ended before.*ping \(toolu_1\)"):
        conversation.send("ping")
    assert pings.ran == ["a"]
    assert conversation.messages == []


# -- 4. repeated ids -------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_calls_that_share_an_id_get_ids_of_their_own_before_they_run(
    dialect: str, stream: bool
) -> None:
    pings = Pings(read_only=False)  # not eager: both run in the round
    turns = [tool_calls(call("ping", tag="a", id="dup"), call("ping", tag="b", id="dup"))]
    with ScriptedServer([*turns, text("done")]) as scripted:
        client: Any = scripted.anthropic_client() if dialect == "anthropic" else scripted.client()
        options = {} if dialect == "anthropic" else {"dialect": dialect}
        conversation = Conversation(
            client, MODEL, registry=pings.registry, stream=stream, **options
        )
        reply = conversation.send("ping twice")
        scripted.assert_all_consumed()  # the endpoint took the history: ids answered once
        answers = tool_answers(scripted.requests[1])
    ids = [r.call_id for r in reply.tool_results]
    assert pings.ran == ["a", "b"]
    assert ids[0] == "dup"
    assert ids[1] != "dup"
    assert ids[1]
    assert answers == [(ids[0], "pong a"), (ids[1], "pong b")]


@pytest.mark.parametrize("given", ["", None, "functions.ping:0", "x" * 80])
def test_an_id_the_endpoint_does_not_take_is_replaced_in_history_and_answer(
    server: StreamServer, given: str | None
) -> None:
    """Missing, empty, with characters Anthropic refuses, or too long: a new id, the same
    in the assistant's call and in its answer."""
    pings = Pings()
    block: dict[str, Any] = {"type": "tool_use", "name": "ping", "input": {}}
    if given is not None:
        block["id"] = given
    events = [
        message_start(),
        block_start(0, block),
        input_delta(0, '{"tag": "a"}'),
        block_stop(0),
        message_delta(),
        message_stop(),
    ]
    server.script(frames(events, named=True), anthropic_text("done"))
    client = anthropic.Anthropic(base_url=server.root_url, api_key="k", max_retries=0)
    reply = Conversation(client, MODEL, registry=pings.registry, stream=True).send("ping")
    assert server.refused == []
    assert pings.ran == ["a"]
    new_id = reply.tool_results[0].call_id
    assert new_id
    assert new_id != given
    sent = server.requests[1]["messages"]
    assert sent[1]["content"][0]["id"] == new_id
    assert tool_answers(server.requests[1]) == [(new_id, "pong a")]


def test_a_later_round_that_repeats_an_earlier_rounds_id_gets_a_new_one() -> None:
    """A server that numbers calls per answer (call_0 in every round)."""
    pings = Pings(read_only=False)
    script = [
        tool_calls(call("ping", tag="a", id="call_0")),
        tool_calls(call("ping", tag="b", id="call_0")),
        text("done"),
    ]
    with ScriptedServer(script) as scripted:
        conversation = Conversation(scripted.client(), MODEL, registry=pings.registry)
        reply = conversation.send("ping twice")
        scripted.assert_all_consumed()
    ids = [r.call_id for r in reply.tool_results]
    assert pings.ran == ["a", "b"]
    assert ids[0] == "call_0"
    assert ids[1] not in ("call_0", None)


def test_chat_heads_that_share_an_id_stream_into_two_calls_with_ids_of_their_own(
    server: StreamServer,
) -> None:
    pings = Pings()
    server.script(
        chat_stream(
            head(0, "dup"), args(0, '{"tag": "a"}'), head(1, "dup"), args(1, '{"tag": "b"}')
        ),
        chat_text("done"),
    )
    reply = send(chat(server, pings))
    assert server.refused == []
    assert sorted(pings.ran) == ["a", "b"]
    ids = [r.call_id for r in reply.tool_results]
    assert ids[0] == "dup"
    assert ids[1] not in ("dup", None)
    assert tool_answers(server.requests[1]) == [(ids[0], "pong a"), (ids[1], "pong b")]
    assert json.loads(
        server.requests[1]["messages"][1]["tool_calls"][1]["function"]["arguments"]
    ) == {"tag": "b"}


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_calls_that_share_an_id_pause_and_resume_by_ids_of_their_own(dialect: str) -> None:
    """The approval path names pending calls by the same ids: the paused turn's history,
    its saved state and the resumed turn's answers all agree, and the endpoint takes them."""
    pings = Pings(requires_confirmation=True)
    turns = [tool_calls(call("ping", tag="a", id="dup"), call("ping", tag="b", id="dup"))]
    with ScriptedServer([*turns, text("done")]) as scripted:
        client: Any = scripted.anthropic_client() if dialect == "anthropic" else scripted.client()
        options = {} if dialect == "anthropic" else {"dialect": dialect}
        first = Conversation(client, MODEL, registry=pings.registry, confirm="defer", **options)
        paused = first.send("ping twice")
        ids = [p.call_id for p in paused.pending]
        assert ids[0] == "dup"
        assert ids[1] not in ("dup", "")
        state = json.loads(json.dumps(first.export_state()))
        later = Conversation.from_state(state, client, registry=pings.registry)
        done = later.resume(dict.fromkeys(ids, True))
        scripted.assert_all_consumed()
        answers = tool_answers(scripted.requests[1])
    assert pings.ran == ["a", "b"]
    assert answers == [(ids[0], "pong a"), (ids[1], "pong b")]
    assert done.text == "done"


def test_responses_server_state_sends_the_whole_history_after_an_id_was_replaced() -> None:
    """The server keeps the calls under the ids it sent: after toolreg gave one a new id,
    the next request sends the whole history (no `previous_response_id`), which it takes."""
    pings = Pings(read_only=False)
    script = [
        tool_calls(call("ping", tag="a", id="dup"), call("ping", tag="b", id="dup")),
        tool_calls(call("ping", tag="c", id="fresh")),
        text("done"),
    ]
    with ScriptedServer(script) as scripted:
        conversation = Conversation(
            scripted.client(), MODEL, registry=pings.registry, dialect="responses", state="server"
        )
        reply = conversation.send("ping")
        scripted.assert_all_consumed()
        second, third = scripted.requests[1], scripted.requests[2]
    assert pings.ran == ["a", "b", "c"]
    assert reply.text == "done"
    assert "previous_response_id" not in second  # renamed: the whole history goes
    assert third.get("previous_response_id") == "resp_scripted_2"  # none renamed: continued
