"""The stream fuzzer: the same calls, streamed every way a provider may stream them.

For chat completions, the Responses API and Anthropic's Messages API, sync and async, eager
start on and off, hypothesis draws the calls (their arguments written with any key order and
white space, ids of their own, repeated, empty or missing, or ones an endpoint refuses) and
a stream of them: arguments cut into random pieces, the calls' events interleaved in any
order, heads repeated, the whole answer's arguments written again in another order (the
Responses API's final event), and the stream cut off before its terminal event at any point.
A real HTTP server (`tests/_stream_server.py`, one per test) serves it verbatim to the
official SDK.

The properties: a whole stream runs every call exactly once, with exactly its arguments,
and the history sent back has an id of its own for each call, answered once; a cut stream
raises `ConversationError`, keeps no history, runs nothing twice, runs nothing that did not
start early (each with exactly its arguments), and names every call that ran.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationError,
    ToolContext,
    ToolRegistry,
    ToolStarted,
)

MODEL = "stream-model"
PROVIDERS = ["chat", "responses", "anthropic"]

FUZZ = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""The fuzzer's profile: 20 streams per provider and driver (120 in all)."""

Json = dict[str, Any]


# -- the tools: what ran, with which arguments -------------------------------------------------


class Ran:
    """`note` (read-only: it may start early) and `plain` (no flags: it waits for the whole
    answer) record each run: (call id, tool, arguments as received)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str | None, str, Json]] = []
        self.lock = threading.Lock()
        self.registry = reg = ToolRegistry()

        def record(ctx: ToolContext, name: str, key: str, n: int | None) -> str:
            arguments: Json = {"key": key} if n is None else {"key": key, "n": n}
            with self.lock:
                self.runs.append((ctx.call_id, name, arguments))
            return f"{name} {key}"

        @reg.register_tool(read_only=True)
        def note(key: str, ctx: ToolContext, n: int | None = None) -> str:
            """Note a key."""
            return record(ctx, "note", key, n)

        @reg.register_tool
        def plain(key: str, ctx: ToolContext, n: int | None = None) -> str:
            """Keep a key."""
            return record(ctx, "plain", key, n)

    def reset(self) -> None:
        with self.lock:
            self.runs.clear()


# -- what hypothesis draws ---------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """One call: its tool, arguments, the text they stream as (in `pieces`), the text the
    whole answer gives (the Responses API's final event: maybe written otherwise), the id
    the endpoint sends (None: none) and whether its head comes twice."""

    name: str
    arguments: Json
    pieces: tuple[str, ...]
    final: str
    call_id: str | None
    repeat_head: bool

    @property
    def text(self) -> str:
        return "".join(self.pieces)


KEYS = st.text(alphabet='ab{}[]",:\\ é\n', max_size=6)
ARGUMENTS = st.fixed_dictionaries({"key": KEYS}, optional={"n": st.integers(-3, 3)})
IDS = st.sampled_from(["own", "own", "own", "none", "empty", "refused", "repeat"])
SPACES = ["", " ", "\n", "  \t"]
SEPARATORS = [(", ", ": "), (",", ":"), (" ,", " : ")]
# Hypothesis draws what the calls are; the shape of their stream (key order, white space,
# pieces, interleaving, where a head repeats) comes from one `random` it draws: a strategy
# built per draw costs more than the HTTP round trip


def written(rng: random.Random, arguments: Json) -> str:
    """The arguments as JSON text: any key order, separators, indent, surrounding space."""
    items = list(arguments.items())
    rng.shuffle(items)
    text = json.dumps(
        dict(items),
        separators=rng.choice(SEPARATORS),
        indent=rng.choice([None, None, 1]),
        ensure_ascii=rng.random() < 0.5,
    )
    return rng.choice(SPACES) + text + rng.choice(SPACES)


COUNTS = st.integers(1, 3)
TOOLS = st.sampled_from(["note", "note", "plain"])
RNGS = st.randoms(use_true_random=False)


def planned_calls(draw: st.DrawFn, rng: random.Random) -> list[Planned]:
    count = draw(COUNTS)
    calls: list[Planned] = []
    for i in range(count):
        arguments = draw(ARGUMENTS)
        text = written(rng, arguments)
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 4))))
        pieces = tuple(text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)]))
        final = text if rng.random() < 0.5 else written(rng, arguments)
        earlier = [c.call_id for c in calls if c.call_id]
        kind = draw(IDS)
        call_id = {
            "own": f"call_{i}",
            "none": None,
            "empty": "",
            "refused": f"functions.note:{i}",  # Anthropic takes no ".", ":"
            "repeat": rng.choice(earlier) if earlier else f"call_{i}",
        }[kind]
        name = draw(TOOLS)
        calls.append(Planned(name, arguments, pieces, final, call_id, draw(st.booleans())))
    return calls


def interleave(rng: random.Random, sequences: list[list[Json]]) -> list[Json]:
    """The calls' own event sequences merged in a random order that keeps each in order."""
    slots = [i for i, sequence in enumerate(sequences) for _ in sequence]
    rng.shuffle(slots)
    taken = [iter(sequence) for sequence in sequences]
    return [next(taken[i]) for i in slots]


def with_repeated_head(rng: random.Random, sequence: list[Json], again: Json) -> list[Json]:
    """`again` (the head once more) somewhere after the head, before the last event."""
    at = rng.randint(1, max(1, len(sequence) - 1))
    return [*sequence[:at], again, *sequence[at:]]


# -- the streams of each API ------------------------------------------------------------------


def chat_events(rng: random.Random, calls: list[Planned]) -> tuple[list[Json], list[Json]]:
    """(events before the terminal one, terminal events) of a chat completion stream."""
    sequences = []
    for index, c in enumerate(calls):
        head: Json = {"index": index, "type": "function"}
        if c.call_id is not None:
            head["id"] = c.call_id
        pieces = list(c.pieces)
        carries = rng.random() < 0.5  # a head that brings the first piece along
        first = pieces.pop(0) if carries and pieces else ""
        head["function"] = {"name": c.name, "arguments": first}
        sequence = [head] + [{"index": index, "function": {"arguments": p}} for p in pieces]
        if c.repeat_head:
            sequence = with_repeated_head(rng, sequence, {**head, "function": {"arguments": ""}})
        sequences.append(sequence)
    start = {"role": "assistant", "content": rng.choice([None, "Let me look."])}
    events = [chat_chunk(start)]
    events += [chat_chunk({"tool_calls": [f]}) for f in interleave(rng, sequences)]
    return events, [chat_chunk({}, "tool_calls")]


def responses_events(rng: random.Random, calls: list[Planned]) -> tuple[list[Json], list[Json]]:
    sequences, final = [], []
    for index, c in enumerate(calls):
        item: Json = {"type": "function_call", "id": f"fc_{index}", "name": c.name}
        if c.call_id is not None:
            item["call_id"] = c.call_id
        numbered = rng.random() < 0.7  # deltas with their output_index, or by item_id only
        deltas = [arguments_delta(index if numbered else None, item["id"], p) for p in c.pieces]
        head = item_added(index, {**item, "arguments": "", "status": "in_progress"})
        done = item_done(index, {**item, "arguments": c.text, "status": "completed"})
        sequence = [head, *deltas, done]
        if c.repeat_head:
            sequence = with_repeated_head(rng, sequence, head)
        sequences.append(sequence)
        final.append({**item, "arguments": c.final, "status": "completed"})
    return [created(), *interleave(rng, sequences)], [completed(final)]


def anthropic_events(rng: random.Random, calls: list[Planned]) -> tuple[list[Json], list[Json]]:
    sequences = []
    for index, c in enumerate(calls):
        block: Json = {"type": "tool_use", "name": c.name, "input": {}}
        if c.call_id is not None:
            block["id"] = c.call_id
        head = block_start(index, block)
        sequence = [head, *(input_delta(index, p) for p in c.pieces), block_stop(index)]
        if c.repeat_head:
            sequence = with_repeated_head(rng, sequence, head)
        sequences.append(sequence)
    events = [message_start(), *interleave(rng, sequences)]
    return events, [message_delta(), message_stop()]


@dataclass
class Stream:
    calls: list[Planned]
    frames: list[bytes]
    cut: int | None  # the number of events kept before the stream ends, or None: whole
    eager: bool


@st.composite
def streams(draw: st.DrawFn, provider: str) -> Stream:
    rng = draw(RNGS)
    calls = planned_calls(draw, rng)
    build = {"chat": chat_events, "responses": responses_events, "anthropic": anthropic_events}
    events, terminal = build[provider](rng, calls)
    cut = rng.randrange(len(events) + 1) if draw(st.booleans()) else None
    if cut is not None:
        kept, done = events[:cut], False  # cleanly ended, without its terminal event
    else:
        kept, done = events + terminal, provider == "chat"
    written = frames(kept, named=provider != "chat", done=done)
    return Stream(calls, written, cut, draw(st.booleans()))


# -- the run ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StreamServer]:
    with StreamServer() as running:
        yield running


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async example (its clients live on it)."""
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    yield running
    running.call_soon_threadsafe(running.stop)
    thread.join()
    running.close()


@pytest.fixture(scope="module")
def clients(server: StreamServer, loop: asyncio.AbstractEventLoop) -> Iterator[dict[str, Any]]:
    options = {"api_key": "k", "max_retries": 0, "timeout": 10.0}

    async def made() -> dict[str, Any]:
        return {
            "async chat": openai.AsyncOpenAI(base_url=server.base_url, **options),
            "async anthropic": anthropic.AsyncAnthropic(base_url=server.root_url, **options),
        }

    found = asyncio.run_coroutine_threadsafe(made(), loop).result(10)
    found["chat"] = openai.OpenAI(base_url=server.base_url, **options)
    found["anthropic"] = anthropic.Anthropic(base_url=server.root_url, **options)
    yield found

    async def closed() -> None:
        await found["async chat"].close()
        await found["async anthropic"].close()

    asyncio.run_coroutine_threadsafe(closed(), loop).result(10)
    found["chat"].close()
    found["anthropic"].close()


ANSWERS = {"chat": chat_text, "responses": responses_text, "anthropic": anthropic_text}


def converse(
    provider: str,
    asynchronous: bool,
    stream: Stream,
    ran: Ran,
    clients: dict[str, Any],
    loop: Any,
    events: list[Any],
) -> tuple[Any, Any]:
    """(the reply or the error, the conversation); `events` gets the turn's events."""
    kind = "anthropic" if provider == "anthropic" else "chat"
    client = clients[f"async {kind}" if asynchronous else kind]
    options: Json = {"stream": True, "eager_tools": None if stream.eager else False}
    options["on_event"] = events.append
    if provider == "responses":
        options["dialect"] = "responses"
    made: Any = (AsyncConversation if asynchronous else Conversation)(
        client, MODEL, registry=ran.registry, context={}, **options
    )
    try:
        if asynchronous:
            future = asyncio.run_coroutine_threadsafe(made.send("note them"), loop)
            return future.result(30), made
        return made.send("note them"), made
    except ConversationError as error:
        return error, made


def canonical(name: str, arguments: Json) -> str:
    return name + json.dumps(arguments, sort_keys=True)


@pytest.mark.slow
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_every_call_runs_once_with_exactly_its_arguments(
    data: st.DataObject,
    provider: str,
    asynchronous: bool,
    server: StreamServer,
    clients: dict[str, Any],
    loop: Any,
) -> None:
    stream = data.draw(streams(provider))
    ran = Ran()
    server.script(stream.frames, ANSWERS[provider]("done"))
    events: list[Any] = []
    outcome, conversation = converse(provider, asynchronous, stream, ran, clients, loop, events)
    runs = list(ran.runs)
    ids = [call_id for call_id, _, _ in runs]
    assert len(set(ids)) == len(ids), f"a call ran twice: {runs}"
    planned = sorted(canonical(c.name, c.arguments) for c in stream.calls)
    done = sorted(canonical(name, arguments) for _, name, arguments in runs)
    if stream.cut is None:
        assert not isinstance(outcome, BaseException), outcome
        assert done == planned  # every call, once, exactly its arguments
        assert sorted(ids) == sorted(r.call_id for r in outcome.tool_results)  # type: ignore[type-var]
        assert server.refused == []  # each id its own, accepted, answered once
        assert outcome.text == "done"
        # every call that could start early did: its arguments were whole before the end
        early = {e.call.call_id for e in events if isinstance(e, ToolStarted) and e.early}
        could = {r.call_id for r in outcome.tool_results if r.tool_name == "note"}
        assert early == (could if stream.eager else set())
        return
    assert isinstance(outcome, ConversationError), outcome  # a cut stream is an error
    assert conversation.messages == []  # and keeps no history
    assert len(server.requests) == 1  # nothing was sent again
    assert all(canonical(n, a) in planned for _, n, a in runs)  # only what the model sent
    assert all(name == "note" for _, name, _ in runs)  # only calls that could start early
    if not stream.eager:
        assert runs == []
    named = {c.call_id for c in outcome.started}
    assert set(ids) <= named, f"{ids} ran, the error names {named}: {outcome}"
