"""The conversation driver: the tool-calling loop over any OpenAI-compatible endpoint.

```python
client = openai.OpenAI(base_url="http://localhost:8000/v1", api_key="none")
chat = Conversation(client, "qwen2.5-7b-instruct", system="You are a helpful assistant.")
reply = chat.send("What's the weather in Beijing?")
print(reply.text, reply.stop_reason, reply.usage.total_tokens)
```

The loop itself lives in `loop` (no I/O) and each turn's order of steps in `core` (a flow
both drivers share); this module only performs them: it talks to the client, runs the
tools, calls the hooks, guardrails and `on_text`, uses the state store, and yields the
events `stream()` readers get. `Conversation` does it with sync I/O and threads,
`AsyncConversation` awaits. With `confirm="defer"` a turn can stop for approvals:
`export_state()` writes it as plain JSON, `from_state()` rebuilds it elsewhere and
`resume()` carries it on.
Transient endpoint failures are retried by the SDK's own `max_retries` (set it on the
client); toolreg adds no second retry layer. `openai` is never imported here at
module level: `import toolreg` stays light.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import queue
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractContextManager, aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..dispatch.calling import CANCEL_GRACE, arun_hook, run_hook
from ..errors import UsageError
from ..jsonvalues import safe_json
from ..observe import ModelCallTrace
from ..params import ProgressSink, progress_sink
from ..result import ToolCall, ToolResult
from .asking import Asked, asking_arun, asking_run
from .core import ConversationCore, Flow, StoreStep
from .eager import AsyncEarlyRuns, EarlyRuns, adrive_checks, cut_short, drive_checks
from .endpoints import endpoint_errors
from .events import (
    ApprovalRequired,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    TurnFinished,
)
from .guardrails import GuardStep
from .loop import (
    HookStep,
    ModelStep,
    Step,
    ToolsStep,
)
from .providers import Answer
from .providers.base import Assembler
from .reply import Reply
from .runs import AsyncTurnRuns, RunRecord, TurnRuns, progress_of
from .tracing import model_call

if TYPE_CHECKING:
    import asyncio
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["AsyncConversation", "Conversation", "run_conversation"]

Message = dict[str, Any]
T = TypeVar("T")
R = TypeVar("R")


_NOTICES = (ToolCallReady, ToolStarted, ToolProgress, ToolFinished, ApprovalRequired, TextDelta)


def _progress_sink(put: Callable[[ToolProgress], Any]) -> ProgressSink:
    """A `ProgressSink` that hands each well-formed report to `put` as a `ToolProgress`
    (a report that is not a number is dropped: `report_progress` never raises)."""

    def sink(
        tool_name: str,
        call_id: str | None,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        if not _number(progress) or (total is not None and not _number(total)):
            return
        text = None if message is None else str(message)[:_MAX_PROGRESS_MESSAGE]
        shown = None if total is None else float(total)
        with contextlib.suppress(Exception):  # a closed loop: nobody follows any more
            put(ToolProgress(call_id, tool_name, float(progress), shown, text))

    return sink


_MAX_PROGRESS_MESSAGE = 1_000


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Conversation(ConversationCore):
    """A conversation over a sync client (`openai.OpenAI`, `anthropic.Anthropic`; see the
    module docstring).

    `Conversation(client, model, *, registry=None, context=None, state_store=None,
    conversation_id=None, key=None, **options)`: `client` is the SDK client and `model` the
    model's name as the endpoint knows it; `registry` is any toolset (a `ToolRegistry`, a
    `Mount`, a `combined`, `prefixed` or `filtered` view; else `toolreg.default_registry`);
    `context` is what every tool's `ToolContext` parameter receives; `state_store`,
    `conversation_id` and `key` keep the conversation in a store, its state signed with the
    key. Every other option (`system`, `max_rounds`, `confirm`, `stream`, ...) is a field of
    `ConversationOptions`, checked when the conversation is built; any other keyword is a
    request option sent with every model call (`temperature=...`), refused when built with
    the nearest valid name if the client's create method does not take it (or, for a
    method that takes `**kwargs`, when it is a near miss of a conversation option).

    `send` runs a turn, `stream` runs one as typed events, `resume` carries on one paused
    for approval, `export_state` / `from_state` move it between processes.

    Raises:
        UsageError: an option is wrong (an unknown dialect, a `tools` entry that is neither a
            tool name nor a tag, an `async def` hook given to a sync conversation, ...),
            before anything is sent.

    Example:
        chat = Conversation(OpenAI(), "gpt-4o-mini", registry=registry, system="Be brief.")
        reply = chat.send("What's the weather in Paris?")
        print(reply.text, reply.stop_reason)
    """

    client: Any

    @overload
    def send(self, text: str, *, output_type: None = None) -> Reply[None]: ...

    @overload
    def send(self, text: str, *, output_type: type[T]) -> Reply[T]: ...

    @overload
    def send(self, text: str, *, output_type: dict[str, Any]) -> Reply[Any]: ...

    def send(self, text: str, *, output_type: Any = None) -> Reply[Any]:
        """Add a user message and run the loop; the history is kept only if it succeeds
        (with `state_store=`: loaded before, saved after)."""
        return self._complete(self._send_flow(text, output_type))

    def stream(self, text: str, *, output_type: Any = None) -> Iterator[StreamEvent]:
        """`send`, as the typed events of the turn (see `toolreg.conversation.events`):
        text deltas, each call ready, started, its progress and its result, an approval
        needed, and last `TurnFinished(reply)`. Nothing is sent until the first event is
        asked for. A reader that stops early (closes the iterator) abandons the turn: its
        history is not kept, and calls still running are abandoned."""
        return self._perform(self._send_flow(text, output_type), listening=True)

    @overload
    def run(self, messages: Iterable[Message], *, output_type: None = None) -> Reply[None]: ...

    @overload
    def run(self, messages: Iterable[Message], *, output_type: type[T]) -> Reply[T]: ...

    @overload
    def run(self, messages: Iterable[Message], *, output_type: dict[str, Any]) -> Reply[Any]: ...

    def run(self, messages: Iterable[Message], *, output_type: Any = None) -> Reply[Any]:
        """Run the loop on `messages` (not modified) and return the reply."""
        return self._complete(self._run_flow(messages, output_type))

    @overload
    def resume(self, decisions: Mapping[str, Any], *, output_type: None = None) -> Reply[None]: ...

    @overload
    def resume(self, decisions: Mapping[str, Any], *, output_type: type[T]) -> Reply[T]: ...

    @overload
    def resume(
        self, decisions: Mapping[str, Any], *, output_type: dict[str, Any]
    ) -> Reply[Any]: ...

    def resume(self, decisions: Mapping[str, Any], *, output_type: Any = None) -> Reply[Any]:
        """Carry on the turn that stopped for approvals: `decisions` maps each pending call
        id to True (run it), False or a reason (do not), or {"arguments": {...}} (run it
        with these, checked like a model's). The approved calls run once; the reply may
        stop for approvals again. With `state_store=`, the paused turn is loaded and
        claimed first: two processes resuming it run the calls once (the second gets a
        `StateConflictError`)."""
        return self._complete(self._resume_flow(decisions, output_type))

    def stream_resume(
        self, decisions: Mapping[str, Any], *, output_type: Any = None
    ) -> Iterator[StreamEvent]:
        """`resume`, as the typed events of the turn (see `stream`)."""
        return self._perform(self._resume_flow(decisions, output_type), listening=True)

    # -- the I/O ---------------------------------------------------------------------------

    def _complete(self, flow: Flow) -> Reply:
        reply: Reply | None = None
        for event in self._perform(flow, listening=False):  # only TurnFinished comes
            if isinstance(event, TurnFinished):
                reply = event.reply
        if reply is None:  # pragma: no cover - every flow ends with TurnFinished
            raise UsageError("the turn ended without a reply")
        return reply

    def _perform(self, flow: Flow, listening: bool) -> Generator[StreamEvent, None, None]:
        """Answer the flow's steps with sync I/O; yield its events (all of them when
        `listening`, else only `TurnFinished`)."""
        provider = self._settings.provider.name
        limit = self._max_concurrency()
        runs = EarlyRuns(limit)
        turn = TurnRuns(limit)  # every run of the turn: its gate and its cancel scope
        following = self._following(listening)
        notes: queue.SimpleQueue[Any] | None = queue.SimpleQueue() if following else None
        parent: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        answer: Any = None
        failure: BaseException | None = None
        try:
            while True:
                step = _advance(flow, answer, failure)
                answer = failure = None
                if step is None:
                    return
                if _passed_on(step, following):
                    self._consume(step)
                    if listening or isinstance(step, TurnFinished):
                        yield step
                    continue
                try:
                    if isinstance(step, (HookStep, GuardStep)):
                        answer = step.run()  # user code, through dispatch.calling
                    elif isinstance(step, StoreStep):
                        if self._durable is not None:  # durable seam: a recorded step
                            answer = self._durable.store(step, StoreStep.run)
                        else:
                            answer = step.run()  # through dispatch.calling
                    elif isinstance(step, ModelStep):
                        runs.discard()  # started for an earlier answer, and no round took them
                        with model_call(step.request, self.client, provider) as call:
                            if self._durable is None:
                                model = self._model(step, runs, turn, call.parent, notes)
                            else:  # durable seam: the answer is a recorded step
                                model = self._durable.model(
                                    step,
                                    functools.partial(
                                        self._model,
                                        runs=runs,
                                        turn=turn,
                                        parent=call.parent,
                                        notes=notes,
                                    ),
                                    notes is not None,
                                    self.options.on_text if self.options.stream else None,
                                )
                            watch = self._watching(call)
                            answer = yield from self._relay(model, listening, watch)
                            call.response = answer
                        parent = call.parent
                    elif isinstance(step, ToolsStep):
                        with parent():
                            ran = self._tools(step, runs, turn, notes)
                            answer = yield from self._relay(ran, listening)
                except GeneratorExit:
                    raise
                except BaseException as exc:  # the flow decides (a resume keeps what ran)
                    failure = cut_short(exc, runs) if isinstance(step, ModelStep) else exc
        except BaseException as exc:  # the turn failed, or its reader stopped
            turn.stop()  # whatever still runs is asked to stop
            self._unobserve(exc)
            raise
        finally:
            runs.discard()  # the turn failed (a cut-off stream...): abandoned, never reused
            flow.close()
            self._unobserve(None)

    def _consume(self, event: StreamEvent, model: ModelCallTrace | None = None) -> None:
        """`on_event` reads every event, in order (a sync one: see `_check_sync_hooks`);
        then the observer, if any (`model`: the trace of the model call it came from)."""
        if self.options.on_event is not None:
            run_hook("on_event", self.options.on_event, event)
        self._observe(event, model)

    def _relay(
        self,
        events: Generator[StreamEvent, None, R],
        listening: bool,
        model: ModelCallTrace | None = None,
    ) -> Generator[StreamEvent, None, R]:
        """A model call's or a round's events: to `on_event` and the observer (`model`: the
        model call's trace), and on to the reader."""
        if self.options.on_event is None and self._observed is None and model is None:
            return (yield from events)
        try:
            while True:
                event = next(events)
                self._consume(event, model)
                if listening:
                    yield event
        except StopIteration as done:
            result: R = done.value
            return result
        finally:
            events.close()  # a reader that stopped: the stream is released

    def _model(
        self,
        step: ModelStep,
        runs: EarlyRuns,
        turn: TurnRuns,
        parent: Callable[[], AbstractContextManager[Any]],
        notes: queue.SimpleQueue[Any] | None,
    ) -> Generator[StreamEvent, None, Answer]:
        provider = self._settings.provider
        with endpoint_errors():
            create = provider.create(self.client)
            response = create(**safe_json(step.request), **self._stream_kwargs())
            if not self.options.stream:
                answer = provider.decode(response, step.ids)
                if notes is not None and answer.text:
                    yield TextDelta(answer.text)
                return answer
            on_text = self.options.on_text
            deltas: list[str] = []
            assembler = provider.assembler(
                deltas.append if on_text is not None or notes is not None else None, step.ids
            )
            try:
                for chunk in response:
                    assembler.feed(chunk)
                    for text in deltas:
                        if on_text is not None:
                            run_hook("on_text", on_text, text)
                        if notes is not None:
                            yield TextDelta(text)
                    deltas.clear()
                    if step.early is not None:
                        yield from self._start_early(
                            assembler, step.early, runs, turn, parent, notes
                        )
                    if notes is not None:
                        yield from _drained(notes)
            finally:
                response.close()  # also when on_text raised: release the connection
            return assembler.result()

    def _start_early(
        self,
        assembler: Assembler,
        early: Callable[[Message], Generator[Step, Any, ToolCall | None]],
        runs: EarlyRuns,
        turn: TurnRuns,
        parent: Callable[[], AbstractContextManager[Any]],
        notes: queue.SimpleQueue[Any] | None,
    ) -> Generator[StreamEvent, None, None]:
        for message in assembler.completed():
            call = drive_checks(early(message))
            if call is None:
                continue
            record = RunRecord()
            run = turn.wrap(
                self._runner(call, self._early_dispatch(call), notes, early=True), record
            )
            if notes is not None:
                yield ToolCallReady(call, early=True)
            with parent():  # the model call that asked for it is its parent
                turn.early[runs.start(call, run)] = record

    def _runner(
        self,
        call: ToolCall,
        options: dict[str, Any],
        notes: queue.SimpleQueue[Any] | None,
        early: bool = False,
        answers: tuple[Asked, ...] = (),
    ) -> Callable[[], ToolResult]:
        """One call's run, for a thread; with a reader, it says when it starts and where
        its progress goes. Its tool's questions are answered from `answers`."""
        dispatch = self.registry.dispatcher.dispatch_tool
        run = asking_run(functools.partial(dispatch, call.name, call.arguments, **options), answers)
        if self._durable is not None:  # durable seam: the call is a recorded step
            run = self._durable.tool(call, run, _tool_of(self.registry, call))
        if notes is None:
            return run
        sink = _progress_sink(notes.put)

        def followed() -> ToolResult:
            notes.put(ToolStarted(call, early))
            progress_sink.set(sink)  # in this run's own context (a copy)
            return run()

        return followed

    def _tools(
        self,
        step: ToolsStep,
        runs: EarlyRuns,
        turn: TurnRuns,
        notes: queue.SimpleQueue[Any] | None,
    ) -> Generator[StreamEvent, None, list[ToolResult]]:
        """The round's events (with a reader), then its results. Its runs pass the turn's
        gate; a round stopped on its way (an exception, a reader that closed the stream)
        asks them to stop, gives the running ones `CANCEL_GRACE` seconds, and leaves what
        each did in `step.progress`."""
        calls = step.calls
        started: list[Future[ToolResult] | None] = [runs.claim(c) for c in calls]
        records = [RunRecord() if run is None else turn.early.pop(run) for run in started]
        options = self._dispatch_options(step.approved)
        runners = {
            i: self._runner(
                call,
                {"call_id": call.call_id, "idempotency_key": call.idempotency_key, **options},
                notes,
                answers=step.answers.get(call.call_id or "", ()),
            )
            for i, (call, run) in enumerate(zip(calls, started))
            if run is None
        }
        parallel = self.options.parallel
        pool: ThreadPoolExecutor | None = None
        futures: list[Future[Any] | None] = list(started)
        try:
            if notes is not None:
                for i in runners:
                    yield ToolCallReady(calls[i])
            if notes is None and (len(runners) <= 1 or not parallel):  # here, one by one
                for i, runner in runners.items():
                    turn.run_here(runner, records[i])  # its record holds its result
            else:
                works = {i: turn.wrap(runner, records[i]) for i, runner in runners.items()}
                workers = 1 if not parallel else min(len(works), turn.limit)
                from concurrent.futures import ThreadPoolExecutor  # lazy, as dispatch_many's

                pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="toolreg")
                for i, work in works.items():
                    futures[i] = pool.submit(contextvars.copy_context().run, work)
                if notes is None:  # the first run that raises (an interrupt) stops the round
                    _first_failure(futures)
            if notes is not None:
                for i, future in enumerate(futures):
                    assert future is not None  # every call has its run now
                    future.add_done_callback(functools.partial(_done, notes, i))
                left = len(futures)
                while left:
                    note = notes.get()
                    if isinstance(note, _Done):
                        left -= 1
                        yield ToolFinished(calls[note.index], _result(futures[note.index]))
                    else:
                        yield note
            results = [
                _result(future) if future is not None else records[i].result
                for i, future in enumerate(futures)
            ]
        except BaseException:
            _stop_runs(turn, pool, futures, records)
            progress_of(records, step.progress)
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        return results  # type: ignore[return-value]  # every run ended with its result


def _first_failure(futures: Sequence[Future[Any] | None]) -> None:
    """Wait for the runs until all are done or one raised (only an interrupt or the
    application's mistake does); raise that."""
    from concurrent.futures import FIRST_EXCEPTION, wait

    done, _ = wait([f for f in futures if f is not None], return_when=FIRST_EXCEPTION)
    for future in done:
        if future.exception() is not None:
            future.result()  # raises it


def _result(future: Future[Any] | None) -> ToolResult:
    """A finished run's result (a run that was to begin always does, unless stopped)."""
    assert future is not None
    result: ToolResult | None = future.result()
    assert result is not None  # None: the turn stopped before it began, which raised
    return result


def _stop_runs(
    turn: TurnRuns,
    pool: ThreadPoolExecutor | None,
    futures: Sequence[Future[Any] | None],
    records: list[RunRecord],
) -> None:
    """A stopped round: runs not begun never begin, running ones are asked to stop and have
    `CANCEL_GRACE` seconds to end (when they can hear it), so that what they say counts."""
    turn.stop()
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    running = [f for f, r in zip(futures, records) if f is not None and r.started and not f.done()]
    if running and turn.scope.heard:
        from concurrent.futures import wait

        wait(running, timeout=CANCEL_GRACE)


@dataclass(frozen=True, slots=True)
class _Done:
    index: int  # the call of the round whose run is over


def _done(notes: Any, index: int, _: Any) -> None:
    notes.put(_Done(index))


def _drained(notes: queue.SimpleQueue[Any]) -> Generator[StreamEvent, None, None]:
    """What early runs said so far (while the answer streams)."""
    while True:
        try:
            note = notes.get_nowait()
        except queue.Empty:
            return
        yield note  # no `_Done` yet: `_tools` adds them


def _advance(flow: Flow, answer: Any, failure: BaseException | None) -> Any:
    """The flow's next step, given what the last one answered or raised (thrown in, so the
    flow decides); None once the flow is over."""
    try:
        return flow.send(answer) if failure is None else flow.throw(failure)
    except StopIteration:
        return None


def _passed_on(step: Any, listening: bool) -> bool:
    """Whether a step is an event for the reader: `TurnFinished` always, the others when
    someone listens."""
    return isinstance(step, TurnFinished) or (listening and isinstance(step, _NOTICES))


class AsyncConversation(ConversationCore):
    """The same loop over an async client (`openai.AsyncOpenAI`, `anthropic.AsyncAnthropic`);
    tools run via `adispatch_tool`; hooks, guardrails and `on_text` that are `async def` are
    awaited.

    It takes what `Conversation` takes: `client`, `model`, `registry`, `context`,
    `state_store`, `conversation_id`, `key` and the fields of `ConversationOptions`; `send`,
    `resume` and `run` are awaited, `stream` is iterated with `async for`.

    Raises:
        UsageError: an option is wrong, before anything is sent.

    Example:
        chat = AsyncConversation(AsyncOpenAI(), "gpt-4o-mini", registry=registry)
        reply = await chat.send("What's the weather in Paris?")
    """

    _awaits_hooks = True
    client: Any

    @overload
    async def send(self, text: str, *, output_type: None = None) -> Reply[None]: ...

    @overload
    async def send(self, text: str, *, output_type: type[T]) -> Reply[T]: ...

    @overload
    async def send(self, text: str, *, output_type: dict[str, Any]) -> Reply[Any]: ...

    async def send(self, text: str, *, output_type: Any = None) -> Reply[Any]:
        """`Conversation.send` for async code."""
        return await self._complete(self._send_flow(text, output_type))

    def stream(self, text: str, *, output_type: Any = None) -> AsyncIterator[StreamEvent]:
        """`Conversation.stream` for async code: `async for event in chat.stream(...)`.
        A reader that stops early should close it (`contextlib.aclosing`): calls still
        running are then cancelled."""
        return self._perform(self._send_flow(text, output_type), listening=True)

    @overload
    async def run(
        self, messages: Iterable[Message], *, output_type: None = None
    ) -> Reply[None]: ...

    @overload
    async def run(self, messages: Iterable[Message], *, output_type: type[T]) -> Reply[T]: ...

    @overload
    async def run(
        self, messages: Iterable[Message], *, output_type: dict[str, Any]
    ) -> Reply[Any]: ...

    async def run(self, messages: Iterable[Message], *, output_type: Any = None) -> Reply[Any]:
        """`Conversation.run` for async code."""
        return await self._complete(self._run_flow(messages, output_type))

    @overload
    async def resume(
        self, decisions: Mapping[str, Any], *, output_type: None = None
    ) -> Reply[None]: ...

    @overload
    async def resume(self, decisions: Mapping[str, Any], *, output_type: type[T]) -> Reply[T]: ...

    @overload
    async def resume(
        self, decisions: Mapping[str, Any], *, output_type: dict[str, Any]
    ) -> Reply[Any]: ...

    async def resume(self, decisions: Mapping[str, Any], *, output_type: Any = None) -> Reply[Any]:
        """`Conversation.resume` for async code."""
        return await self._complete(self._resume_flow(decisions, output_type))

    def stream_resume(
        self, decisions: Mapping[str, Any], *, output_type: Any = None
    ) -> AsyncIterator[StreamEvent]:
        """`resume`, as the typed events of the turn (see `stream`)."""
        return self._perform(self._resume_flow(decisions, output_type), listening=True)

    # -- the I/O ---------------------------------------------------------------------------

    async def _complete(self, flow: Flow) -> Reply:
        reply: Reply | None = None
        async for event in self._perform(flow, listening=False):  # only TurnFinished comes
            if isinstance(event, TurnFinished):
                reply = event.reply
        if reply is None:  # pragma: no cover - every flow ends with TurnFinished
            raise UsageError("the turn ended without a reply")
        return reply

    async def _perform(self, flow: Flow, listening: bool) -> AsyncGenerator[StreamEvent, None]:
        """`Conversation._perform` with awaited I/O."""
        import asyncio  # loaded by the running event loop already

        provider = self._settings.provider.name
        limit = self._max_concurrency()
        runs = AsyncEarlyRuns(limit)
        turn = AsyncTurnRuns(limit)  # every run of the turn: its gate and its cancel scope
        following = self._following(listening)
        notes: asyncio.Queue[Any] | None = asyncio.Queue() if following else None
        parent: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        answer: Any = None
        failure: BaseException | None = None
        try:
            while True:
                step = _advance(flow, answer, failure)
                answer = failure = None
                if step is None:
                    return
                if _passed_on(step, following):
                    await self._consume(step)
                    if listening or isinstance(step, TurnFinished):
                        yield step
                    continue
                try:
                    if isinstance(step, (HookStep, GuardStep)):
                        answer = await step.arun()  # user code, through dispatch.calling
                    elif isinstance(step, StoreStep):
                        if self._durable is not None:  # durable seam: a recorded step
                            answer = await self._durable.astore(step, StoreStep.arun)
                        else:
                            answer = await step.arun()  # through dispatch.calling
                    elif isinstance(step, ModelStep):
                        await runs.discard()  # started for an earlier answer, no round took them
                        with model_call(step.request, self.client, provider) as call:
                            durable = self._durable
                            if notes is None and not self.options.stream and durable is None:
                                answer = call.response = await self._plain_answer(step)
                            else:
                                if durable is None:
                                    model = self._model(step, runs, turn, call.parent, notes)
                                else:  # durable seam: the answer is a recorded step
                                    model = durable.amodel(
                                        step,
                                        functools.partial(
                                            self._model,
                                            runs=runs,
                                            turn=turn,
                                            parent=call.parent,
                                            notes=notes,
                                        ),
                                        notes is not None,
                                        self.options.on_text if self.options.stream else None,
                                        _Answered,
                                    )
                                watch = self._watching(call)
                                async with aclosing(model) as said:
                                    async for note in said:
                                        if isinstance(note, _Answered):
                                            answer = call.response = note.answer
                                            continue
                                        await self._consume(note, watch)
                                        if listening:
                                            yield note
                        parent = call.parent
                    elif isinstance(step, ToolsStep):
                        with parent():
                            if notes is None:  # nobody reads the events
                                answer = await self._batch(step, runs, turn)
                            else:
                                async with aclosing(self._tools(step, runs, turn, notes)) as ran:
                                    async for event in ran:
                                        if isinstance(event, _Ran):
                                            answer = event.results
                                            continue
                                        await self._consume(event)
                                        if listening:
                                            yield event
                except GeneratorExit:
                    raise
                except BaseException as exc:  # the flow decides (a resume keeps what ran)
                    failure = cut_short(exc, runs) if isinstance(step, ModelStep) else exc
        except BaseException as exc:  # the turn failed, or its reader stopped
            turn.stop()  # whatever still runs is asked to stop
            self._unobserve(exc)
            raise
        finally:
            await runs.discard()  # the turn failed (a cut-off stream...): cancelled
            flow.close()
            self._unobserve(None)

    async def _consume(self, event: StreamEvent, model: ModelCallTrace | None = None) -> None:
        """`on_event` reads every event, in order (an async one is awaited); then the
        observer, if any (`model`: the trace of the model call it came from)."""
        if self.options.on_event is not None:
            await arun_hook(self.options.on_event, event)
        self._observe(event, model)

    async def _model(
        self,
        step: ModelStep,
        runs: AsyncEarlyRuns,
        turn: AsyncTurnRuns,
        parent: Callable[[], AbstractContextManager[Any]],
        notes: asyncio.Queue[Any] | None,
    ) -> AsyncGenerator[StreamEvent | _Answered, None]:
        """The model call's events, then its `_Answered` (an async generator returns
        nothing)."""
        provider = self._settings.provider
        if not self.options.stream:
            answer = await self._plain_answer(step)
            if notes is not None and answer.text:
                yield TextDelta(answer.text)
            yield _Answered(answer)
            return
        with endpoint_errors():
            create = provider.create(self.client)
            response = await create(**safe_json(step.request), **self._stream_kwargs())
            on_text = self.options.on_text
            deltas: list[str] = []
            assembler = provider.assembler(
                deltas.append if on_text is not None or notes is not None else None, step.ids
            )
            try:
                async for chunk in response:
                    assembler.feed(chunk)
                    for text in deltas:  # in order, before the next chunk is read
                        if on_text is not None:
                            await arun_hook(on_text, text)
                        if notes is not None:
                            yield TextDelta(text)
                    deltas.clear()
                    if step.early is not None:
                        ready = await self._start_early(
                            assembler, step.early, runs, turn, parent, notes
                        )
                        for event in ready:
                            yield event
                    while notes is not None and not notes.empty():
                        yield notes.get_nowait()
            finally:
                await response.close()
            yield _Answered(assembler.result())

    async def _plain_answer(self, step: ModelStep) -> Answer:
        """A model call that is not streamed: one awaited request, decoded (no async
        generator: each costs the event loop's bookkeeping of it)."""
        provider = self._settings.provider
        with endpoint_errors():
            create = provider.create(self.client)
            return provider.decode(await create(**safe_json(step.request)), step.ids)

    async def _start_early(
        self,
        assembler: Assembler,
        early: Callable[[Message], Generator[Step, Any, ToolCall | None]],
        runs: AsyncEarlyRuns,
        turn: AsyncTurnRuns,
        parent: Callable[[], AbstractContextManager[Any]],
        notes: asyncio.Queue[Any] | None,
    ) -> list[StreamEvent]:
        ready: list[StreamEvent] = []
        for message in assembler.completed():
            call = await adrive_checks(early(message))  # async checks are awaited
            if call is None:
                continue
            if notes is not None:
                ready.append(ToolCallReady(call, early=True))
            record = RunRecord()
            run = turn.wrap(
                self._runner(call, self._early_dispatch(call), notes, early=True), record
            )
            with parent():  # the model call that asked for it is its parent
                turn.early[runs.start(call, run)] = record
        return ready

    def _runner(
        self,
        call: ToolCall,
        options: dict[str, Any],
        notes: asyncio.Queue[Any] | None,
        early: bool = False,
        answers: tuple[Asked, ...] = (),
    ) -> Callable[[], Awaitable[ToolResult]]:
        """One call's run, for a task; with a reader, it says when it starts and where its
        progress goes (from a tool's thread too). Its tool's questions are answered from
        `answers`."""
        dispatch = self.registry.dispatcher.adispatch_tool
        run = asking_arun(
            functools.partial(dispatch, call.name, call.arguments, **options), answers
        )
        if self._durable is not None:  # durable seam: the call is a recorded step
            run = self._durable.atool(call, run, _tool_of(self.registry, call))
        if notes is None:
            return run
        import asyncio

        loop = asyncio.get_running_loop()
        sink = _progress_sink(lambda note: loop.call_soon_threadsafe(notes.put_nowait, note))

        async def followed() -> ToolResult:
            notes.put_nowait(ToolStarted(call, early))
            progress_sink.set(sink)  # in this task's own context (a copy)
            return await run()

        return followed

    def _round_runs(
        self, step: ToolsStep, runs: AsyncEarlyRuns, turn: AsyncTurnRuns, notes: Any
    ) -> tuple[
        list[asyncio.Task[ToolResult] | None],
        list[RunRecord],
        dict[int, Callable[[], Awaitable[ToolResult | None]]],
    ]:
        """The round's runs: those started early (claimed), their records, and the others'
        work, each behind the turn's gate."""
        calls = step.calls
        started = [runs.claim(c) for c in calls]
        records = [RunRecord() if run is None else turn.early.pop(run) for run in started]
        options = self._dispatch_options(step.approved)
        works = {
            i: turn.wrap(
                self._runner(
                    call,
                    {"call_id": call.call_id, "idempotency_key": call.idempotency_key, **options},
                    notes,
                    answers=step.answers.get(call.call_id or "", ()),
                ),
                records[i],
            )
            for i, (call, run) in enumerate(zip(calls, started))
            if run is None
        }
        return started, records, works

    async def _batch(
        self, step: ToolsStep, runs: AsyncEarlyRuns, turn: AsyncTurnRuns
    ) -> list[ToolResult]:
        """A round's results when nobody reads its events: one call awaited here, several
        as tasks (one after another without `parallel`), with the runs started early
        awaited in their place."""
        import asyncio

        started, records, works = self._round_runs(step, runs, turn, None)
        tasks: list[asyncio.Task[Any] | None] = list(started)
        try:
            if len(works) <= 1 or not self.options.parallel:
                current = asyncio.current_task()
                for work in works.values():
                    before = _cancelling(current)
                    await work()
                    if _cancelling(current) > before:  # a tool answered the turn's cancel
                        raise asyncio.CancelledError
            else:
                for i, work in works.items():
                    tasks[i] = asyncio.ensure_future(work())
                running = [t for t in tasks if t is not None]
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_EXCEPTION)
                for task in done:
                    if not task.cancelled() and task.exception() is not None:
                        task.result()  # the application's mistake (no context...): raised
            return [
                _recorded(records[i]) if task is None else _task_result(await _settled(task))
                for i, task in enumerate(tasks)
            ]
        except BaseException:
            await _astop_runs(turn, tasks, records)
            progress_of(records, step.progress)
            raise

    async def _tools(
        self,
        step: ToolsStep,
        runs: AsyncEarlyRuns,
        turn: AsyncTurnRuns,
        notes: asyncio.Queue[Any],
    ) -> AsyncGenerator[StreamEvent | _Ran, None]:
        """The round's events, then its `_Ran` (a round stopped on its way: see
        `Conversation._tools`)."""
        import asyncio

        calls = step.calls
        started, records, works = self._round_runs(step, runs, turn, notes)
        for i in works:
            yield ToolCallReady(calls[i])
        workers = 1 if not self.options.parallel else turn.limit
        gate = asyncio.Semaphore(max(1, workers))
        tasks: list[asyncio.Task[Any]] = []
        try:
            for i, early in enumerate(started):
                task: asyncio.Task[Any] = (
                    asyncio.ensure_future(_gated(gate, works[i])) if early is None else early
                )
                tasks.append(task)
                task.add_done_callback(functools.partial(_done_soon, notes, i))
            left = len(tasks)
            while left:
                note = await notes.get()
                if isinstance(note, _Done):
                    left -= 1
                    yield ToolFinished(calls[note.index], _task_result(tasks[note.index]))
                else:
                    yield note
        except BaseException:
            await _astop_runs(turn, tasks, records)
            progress_of(records, step.progress)
            raise
        finally:
            for task in tasks:
                task.cancel()  # a reader that stopped: nothing left running
        yield _Ran([_task_result(task) for task in tasks])


def _tool_of(registry: Any, call: ToolCall) -> Any:
    """The registry's tool a call names, if any (a durable step records its fingerprint)."""
    return registry.get(call.name) if isinstance(call.name, str) else None


def _cancelling(task: asyncio.Task[Any] | None) -> int:
    """How many cancellations of `task` are pending (Python 3.11+; 0 before)."""
    count = getattr(task, "cancelling", None)
    return 0 if count is None else int(count())


def _recorded(record: RunRecord) -> ToolResult:
    assert record.result is not None  # a run awaited here has its result
    return record.result


def _task_result(task: asyncio.Future[Any]) -> ToolResult:
    """A finished run's result (a run that was to begin always has one, unless stopped)."""
    result = task.result()
    assert result is not None  # None: the turn stopped before it began, which raised
    return result  # type: ignore[no-any-return]


async def _settled(task: asyncio.Future[Any]) -> asyncio.Future[Any]:
    """`task`, once it is done."""
    import asyncio

    await asyncio.wait({task})
    return task


async def _astop_runs(
    turn: AsyncTurnRuns, tasks: Sequence[asyncio.Future[Any] | None], records: list[RunRecord]
) -> None:
    """A stopped round: runs not begun never begin, running ones are cancelled (and their
    signals set) and have `CANCEL_GRACE` seconds to end, so that what they say counts."""
    import asyncio

    turn.stop()
    running = [t for t in tasks if t is not None and not t.done()]
    for task in running:
        task.cancel()
    begun = [t for t, r in zip(tasks, records) if t is not None and r.started and not t.done()]
    if begun:
        await asyncio.wait(begun, timeout=CANCEL_GRACE)
    for task in running:
        task.add_done_callback(_retrieved)


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


@dataclass(frozen=True, slots=True)
class _Answered:
    answer: Answer  # the async model call's answer, after its events


@dataclass(frozen=True, slots=True)
class _Ran:
    results: list[ToolResult]  # the async round's results, after its events


async def _gated(gate: asyncio.Semaphore, work: Callable[[], Awaitable[T]]) -> T:
    async with gate:
        return await work()


def _done_soon(notes: Any, index: int, _: Any) -> None:
    notes.put_nowait(_Done(index))


def run_conversation(
    client: Any,
    model: str,
    prompt: str | Sequence[Message],
    **options: Any,
) -> Reply:
    """One-shot: a `Conversation` with `options`, run on a prompt or a message list.

    `system=` goes first in either case (give it only when the list has no system message).

    Args:
        client: an `openai.OpenAI` client (or an `anthropic.Anthropic` one).
        model: the model's name, as the endpoint knows it.
        prompt: the user's text, or a whole list of messages to run on.
        options: `Conversation`'s options (`registry=`, `system=`, `max_rounds=`, ...), and
            `output_type=` for structured output.

    Returns the turn's `Reply`.

    Raises:
        ConversationError: the endpoint failed or answered something unusable.
        UsageError: an option is wrong (checked before anything is sent).

    Example:
        reply = run_conversation(client, "gpt-4o-mini", "Weather in Paris?", registry=registry)
    """
    output_type = options.pop("output_type", None)
    conversation = Conversation(client, model, **options)
    if isinstance(prompt, str):
        return conversation.send(prompt, output_type=output_type)
    return conversation.run([*conversation.messages, *prompt], output_type=output_type)
