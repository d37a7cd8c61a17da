"""Durable turns: a conversation's `send` and `resume` as workflows of an engine.

```python
engine = DBOSEngine("sqlite:///turns.sqlite")

def support(conversation_id: str) -> Conversation:  # what cannot be serialised, given again
    return Conversation(client, "gpt-4o-mini", registry=tools, state_store=store,
                        conversation_id=conversation_id)

turns = DurableTurns(engine, "support", support)  # bound before the engine recovers
engine.launch()                                   # turns a dead process left run on here
reply = turns.send("chat-42", "Refund order 7")
```

`DurableTurns` runs each turn as one workflow of the engine (its id is the turn's id,
`turn_id=` or a new one), on a conversation its factory builds for the conversation's id
(the conversation lives in its `state_store` between turns). Inside the turn, the
conversation's drivers ask a `DurableTurn` (their *seams*) to perform each model request,
tool call and use of the store as a step of the engine: a step done is recorded, and when
the turn runs again (the process died; the engine recovers the workflow here or in another
process that bound the same name) it is replayed, not performed again. So:

- a model request or a tool call that completed is never made again: its answer or result
  is replayed; the one that was running when the process died may be made once more, with
  the same idempotency key (the turn's id is the keys' turn id);
- the store is loaded once per turn and saved once (a save that went through before the
  process died is recognised, not refused as a conflict);
- hooks, guardrails, `on_event` and `on_text` run again as the turn replays (they see the
  same events: a replayed answer's text comes as the deltas recorded);
- calls do not start while the answer streams (`eager_tools`): a call starts only once the
  answer that asks for it is recorded, since a call started from an answer that a crash
  can make the model give differently could never be matched to it.

A turn that stops for approvals ends its workflow; the pending calls wait in the store
(durably: no workflow, thread or connection held while a person decides), and
`resume(conversation_id, decisions)` is another durable turn that claims them once, from
any process.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import hashlib
import queue
import re
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any

from ..conversation.core import ConversationCore, StoreStep
from ..conversation.drivers import AsyncConversation, Conversation
from ..conversation.events import StreamEvent, TextDelta, TurnFinished
from ..conversation.loop import ModelStep
from ..conversation.output import OutputSpec
from ..conversation.providers.base import Answer
from ..conversation.reply import Reply
from ..conversation.signing import tool_fingerprint
from ..errors import StateConflictError, ToolregError, UsageError
from ..idempotency import canonical_arguments, new_id
from ..result import ToolCall, ToolResult
from ..stores.base import StoredState
from ..tool import Tool
from .base import DurableEngine, DurableReplayError, DurableStep, Json
from .payloads import (
    VERSION,
    answer_json,
    answer_of,
    check_payload,
    digest,
    error_json,
    error_of,
    reply_json,
    reply_of,
    result_json,
    result_of,
    stored_json,
    stored_of,
    where,
)

__all__ = ["DurableTurn", "DurableTurns"]

_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,200}")
_MARK = "toolreg-durable-turn"
_MAX_OFFERED = 1000  # the most tools of a request whose fingerprints a model step records
_MAX_STEP_NAME = 120  # a step's name holds a tool's name: it is cut (its digest is whole)


class DurableTurns:
    """The durable turns of the conversations one factory builds (see the module).

    Args:
        engine: the durable-execution engine (`toolreg.durable.dbos.DBOSEngine`).
        name: the name the turns are bound under (letters, digits, `_ . : -`, at most 64):
            a turn started under it is recovered by a process that bound the same name.
        factory: `factory(conversation_id)` builds the conversation (a `Conversation`, or an
            `AsyncConversation` for `asend`...) with `state_store=` and that
            `conversation_id=`: the client, registry, context and hooks it needs, in every
            process (a recovered turn is run on what it builds).
        output_types: the Python types a turn may ask for with `output_type=` (a recovered
            turn finds its type here, by name); a JSON Schema dict needs no registering.

    Raises:
        UsageError: the engine is not a `DurableEngine`, the name is not usable, the factory
            is not callable, or the name is bound already in this process.
    """

    def __init__(
        self,
        engine: DurableEngine,
        name: str,
        factory: Callable[[str], Conversation | AsyncConversation],
        *,
        output_types: Iterable[Any] = (),
    ) -> None:
        if not isinstance(engine, DurableEngine):
            raise UsageError(
                f"DurableTurns(engine={type(engine).__name__}): not a DurableEngine (bind, "
                "run_turn, arun_turn, step, result); use toolreg.durable.dbos.DBOSEngine"
            )
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise UsageError(
                f"DurableTurns(name={name!r}): 1 to 64 letters, digits, '_', '.', ':' or '-'"
            )
        if not callable(factory):
            raise UsageError(
                f"DurableTurns(factory={factory!r}) is not callable: give a function of the "
                "conversation id that builds the conversation"
            )
        self.engine = engine
        self.name = name
        self.factory = factory
        self._outputs: dict[str, Any] = {}
        for tp in output_types:
            spec = OutputSpec.for_type(tp)
            self._outputs[spec.name] = tp
        self._live: dict[str, _Live] = {}  # turns run in this process: where they report
        self._lock = threading.Lock()
        engine.bind(name, self)

    # -- the application's calls ------------------------------------------------------------

    def send(
        self,
        conversation_id: str,
        text: str,
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> Reply[Any]:
        """A durable `Conversation.send`: the user's `text` to the conversation, one turn.

        `turn_id` names the turn (its workflow): a second `send` with the same id (a retry
        of a request whose answer was lost) runs nothing and returns the first one's reply,
        once it has one. Default: a new id.

        Raises what the turn raises (`ConversationError`, `StateConflictError`, ...), and
        `UsageError` when the factory's conversation is not one it can use."""
        inputs = self._inputs("send", conversation_id, turn_id, output_type, text=text)
        return self._run(inputs, output_type)

    def resume(
        self,
        conversation_id: str,
        decisions: Mapping[str, Any],
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> Reply[Any]:
        """A durable `Conversation.resume` of the turn that stopped for approvals:
        `decisions` as `resume` takes them (JSON: True, False, a reason, or
        `{"arguments": {...}}`). The pending calls are claimed once, whichever process
        resumes them."""
        inputs = self._inputs("resume", conversation_id, turn_id, output_type, decisions=decisions)
        return self._run(inputs, output_type)

    def stream(
        self,
        conversation_id: str,
        text: str,
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> Iterator[StreamEvent]:
        """`send`, as the turn's events (`Conversation.stream`'s). The turn runs in a thread
        of its own: a reader that stops reading stops only its events, the turn goes on to
        its end (`result(turn_id)` gives its reply)."""
        inputs = self._inputs("send", conversation_id, turn_id, output_type, text=text)
        return self._streamed(inputs, output_type)

    def stream_resume(
        self,
        conversation_id: str,
        decisions: Mapping[str, Any],
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> Iterator[StreamEvent]:
        """`resume`, as the turn's events (see `stream`)."""
        inputs = self._inputs("resume", conversation_id, turn_id, output_type, decisions=decisions)
        return self._streamed(inputs, output_type)

    async def asend(
        self,
        conversation_id: str,
        text: str,
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> Reply[Any]:
        """`send` for a factory that builds an `AsyncConversation`."""
        inputs = self._inputs("send", conversation_id, turn_id, output_type, text=text, aio=True)
        return await self._arun(inputs, output_type)

    async def aresume(
        self,
        conversation_id: str,
        decisions: Mapping[str, Any],
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> Reply[Any]:
        """`resume` for a factory that builds an `AsyncConversation`."""
        inputs = self._inputs(
            "resume", conversation_id, turn_id, output_type, decisions=decisions, aio=True
        )
        return await self._arun(inputs, output_type)

    def astream(
        self,
        conversation_id: str,
        text: str,
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """`stream` for a factory that builds an `AsyncConversation` (`async for`); the turn
        runs as a task of its own (see `stream`)."""
        inputs = self._inputs("send", conversation_id, turn_id, output_type, text=text, aio=True)
        return self._astreamed(inputs, output_type)

    def astream_resume(
        self,
        conversation_id: str,
        decisions: Mapping[str, Any],
        *,
        output_type: Any = None,
        turn_id: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """`stream_resume` for a factory that builds an `AsyncConversation`."""
        inputs = self._inputs(
            "resume", conversation_id, turn_id, output_type, decisions=decisions, aio=True
        )
        return self._astreamed(inputs, output_type)

    def result(
        self, turn_id: str, *, output_type: Any = None, timeout: float | None = None
    ) -> Reply[Any]:
        """The reply of the turn `turn_id`, waiting for it while it runs (here, or in the
        process that recovered it); what the turn raised, if it failed. `TimeoutError`
        after `timeout` seconds."""
        tid = _checked_id(turn_id, "turn_id")
        out = self.engine.result(tid, timeout=timeout)
        return reply_of(out, self._spec(output_type), where(tid, "reply"))

    # -- what the engine runs (`TurnBody`) --------------------------------------------------

    def run_turn(self, inputs: Json) -> Json:
        """The turn's workflow: build the conversation, run the turn with its steps durable,
        and return its reply as JSON."""
        turn, chat, live = self._attached(inputs, Conversation)
        try:
            output_type = self._output_type(turn)
            if live is not None and live.events is not None:
                reply: Reply[Any] | None = None
                flow = (
                    chat.stream(turn.text, output_type=output_type)
                    if turn.kind == "send"
                    else chat.stream_resume(turn.decisions, output_type=output_type)
                )
                for event in flow:
                    live.put(event)
                    if isinstance(event, TurnFinished):
                        reply = event.reply
                if reply is None:  # pragma: no cover - every flow ends with TurnFinished
                    raise UsageError("the turn ended without a reply")
            elif turn.kind == "send":
                reply = chat.send(turn.text, output_type=output_type)
            else:
                reply = chat.resume(turn.decisions, output_type=output_type)
        finally:
            chat._durable = None
        if live is not None:
            live.reply = reply
        return reply_json(reply)

    async def arun_turn(self, inputs: Json) -> Json:
        """`run_turn` for an `AsyncConversation`."""
        turn, chat, live = self._attached(inputs, AsyncConversation)
        try:
            output_type = self._output_type(turn)
            if live is not None and live.events is not None:
                reply: Reply[Any] | None = None
                flow = (
                    chat.stream(turn.text, output_type=output_type)
                    if turn.kind == "send"
                    else chat.stream_resume(turn.decisions, output_type=output_type)
                )
                async for event in flow:
                    live.put(event)
                    if isinstance(event, TurnFinished):
                        reply = event.reply
                if reply is None:  # pragma: no cover - every flow ends with TurnFinished
                    raise UsageError("the turn ended without a reply")
            elif turn.kind == "send":
                reply = await chat.send(turn.text, output_type=output_type)
            else:
                reply = await chat.resume(turn.decisions, output_type=output_type)
        finally:
            chat._durable = None
        if live is not None:
            live.reply = reply
        return reply_json(reply)

    def _attached(
        self, inputs: Json, kind: type[ConversationCore]
    ) -> tuple[_TurnInputs, Any, _Live | None]:
        """What `run_turn` and `arun_turn` do before their driver runs: the turn's inputs
        read, its conversation built with the drivers' durable seam attached (see
        toolreg.conversation.drivers; the caller takes it off when the turn ends), and the
        turn's listener in this process, if any."""
        turn = _TurnInputs.read(inputs, self.name)
        chat = self._conversation(turn, kind)
        chat._durable = DurableTurn(self.engine, turn.turn_id, chat.registry)
        return turn, chat, self._live.get(turn.turn_id)

    # -- the rest ---------------------------------------------------------------------------

    def _inputs(
        self,
        kind: str,
        conversation_id: str,
        turn_id: str | None,
        output_type: Any,
        *,
        text: Any = None,
        decisions: Any = None,
        aio: bool = False,
    ) -> dict[str, Any]:
        cid = _checked_id(conversation_id, "conversation_id")
        tid = (
            f"{self.name}:{cid}:{new_id()}" if turn_id is None else _checked_id(turn_id, "turn_id")
        )
        if kind == "send" and not isinstance(text, str):
            raise UsageError(f"{self.name}: send() takes the user's text as a str")
        if kind == "resume":
            if not isinstance(decisions, Mapping):
                raise UsageError(f"{self.name}: resume() takes the decisions as a mapping")
            decisions = _json_decisions(decisions)
        return {
            "toolreg": _MARK,
            "v": VERSION,
            "turns": self.name,
            "conversation_id": cid,
            "turn_id": tid,
            "kind": kind,
            "text": text,
            "decisions": decisions,
            "output": self._output_json(output_type),
            "async": aio,
        }

    def _output_json(self, output_type: Any) -> Json:
        """How a recovered turn finds its output type: a registered type's name, or the
        JSON Schema itself."""
        if output_type is None:
            return None
        if isinstance(output_type, dict):
            return {"schema": output_type}
        spec = OutputSpec.for_type(output_type)
        if self._outputs.get(spec.name) is not output_type:
            raise UsageError(
                f"{self.name}: output_type={spec.name} is not one of this DurableTurns' "
                f"output_types=: register it (DurableTurns(..., output_types=[{spec.name}])), "
                "so that a process that recovers the turn asks for the same type"
            )
        return {"type": spec.name}

    def _output_type(self, turn: _TurnInputs) -> Any:
        output = turn.output
        if output is None:
            return None
        if "schema" in output:
            return output["schema"]
        found = self._outputs.get(str(output.get("type")))
        if found is None:
            raise DurableReplayError(
                f"durable turn {turn.turn_id!r} asks for output_type {output.get('type')!r}, "
                f"which {self.name!r} does not register here (output_types=)",
                turn_id=turn.turn_id,
                step="inputs",
            )
        return found

    def _spec(self, output_type: Any) -> OutputSpec | None:
        return None if output_type is None else OutputSpec.for_type(output_type)

    def _conversation(self, turn: _TurnInputs, kind: type[ConversationCore]) -> Any:
        """The factory's conversation for the turn, checked."""
        chat = self.factory(turn.conversation_id)
        if not isinstance(chat, kind):
            wanted = kind.__name__
            raise UsageError(
                f"{self.name}: the factory built {type(chat).__name__} for a turn that "
                f"{'asend/aresume/astream' if kind is AsyncConversation else 'send/resume/stream'}"
                f" runs: it must build {'an' if wanted[0] in 'AEIOU' else 'a'} {wanted}"
            )
        if getattr(chat, "_stored", None) is None or chat.conversation_id != turn.conversation_id:
            raise UsageError(
                f"{self.name}: the factory must build the conversation with state_store= and "
                f"conversation_id={turn.conversation_id!r} (a durable turn's conversation lives "
                "in a store between turns)"
            )
        if chat._durable is not None:
            raise UsageError(
                f"{self.name}: the factory's conversation runs another durable turn: build a "
                "new one per call (a conversation runs one turn at a time)"
            )
        return chat

    def _run(self, inputs: dict[str, Any], output_type: Any) -> Reply[Any]:
        tid = inputs["turn_id"]
        live = self._enter(tid, None)
        try:
            out = self.engine.run_turn(self.name, tid, inputs)
        finally:
            self._leave(tid, live)
        if live.reply is not None:
            return live.reply
        return reply_of(out, self._spec(output_type), where(tid, "reply"))

    async def _arun(self, inputs: dict[str, Any], output_type: Any) -> Reply[Any]:
        tid = inputs["turn_id"]
        live = self._enter(tid, None)
        try:
            out = await self.engine.arun_turn(self.name, tid, inputs)
        finally:
            self._leave(tid, live)
        if live.reply is not None:
            return live.reply
        return reply_of(out, self._spec(output_type), where(tid, "reply"))

    def _streamed(self, inputs: dict[str, Any], output_type: Any) -> Iterator[StreamEvent]:
        tid = inputs["turn_id"]
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        live = self._enter(tid, events.put)
        box: list[Any] = []

        def turn() -> None:
            try:
                box.append(self.engine.run_turn(self.name, tid, inputs))
            except BaseException as exc:  # handed to the reader (or dropped: none left)
                box.append(_Raised(exc))
            finally:
                self._leave(tid, live)
                events.put(_END)

        context = contextvars.copy_context()
        name = f"toolreg-durable-{self.name}"
        threading.Thread(target=context.run, args=(turn,), name=name, daemon=True).start()
        return self._relay(events, live, box, tid, output_type)

    def _relay(
        self,
        events: queue.SimpleQueue[Any],
        live: _Live,
        box: list[Any],
        tid: str,
        output_type: Any,
    ) -> Generator[StreamEvent, None, None]:
        finished = False
        try:
            while (event := events.get()) is not _END:
                finished = finished or isinstance(event, TurnFinished)
                yield event
        finally:
            live.events = None  # a reader that stopped: the turn goes on without one
        outcome = box[0]
        if isinstance(outcome, _Raised):
            raise outcome.error
        if not finished:  # the turn had run already: its recorded reply
            yield TurnFinished(reply_of(outcome, self._spec(output_type), where(tid, "reply")))

    async def _astreamed(self, inputs: dict[str, Any], output_type: Any) -> AsyncIterator[Any]:
        tid = inputs["turn_id"]
        events: asyncio.Queue[Any] = asyncio.Queue()
        live = self._enter(tid, events.put_nowait)

        async def turn() -> Json:
            try:
                return await self.engine.arun_turn(self.name, tid, inputs)
            finally:
                self._leave(tid, live)
                events.put_nowait(_END)

        task = asyncio.ensure_future(turn())
        finished = False
        try:
            while (event := await events.get()) is not _END:
                finished = finished or isinstance(event, TurnFinished)
                yield event
        finally:
            live.events = None  # a reader that stopped: the turn goes on without one
        outcome = await task
        if not finished:
            yield TurnFinished(reply_of(outcome, self._spec(output_type), where(tid, "reply")))

    def _enter(self, tid: str, events: Callable[[Any], Any] | None) -> _Live:
        live = _Live(events)
        with self._lock:
            if tid in self._live:
                raise UsageError(
                    f"{self.name}: the turn {tid!r} runs in this process already (a turn_id "
                    "names one turn: wait for it with result())"
                )
            self._live[tid] = live
        return live

    def _leave(self, tid: str, live: _Live) -> None:
        with self._lock:
            if self._live.get(tid) is live:
                del self._live[tid]


class _Live:
    """A turn this process runs for a caller: where its events go (a streaming reader's
    queue, or None) and its reply, as the conversation returned it."""

    __slots__ = ("events", "reply")

    def __init__(self, events: Callable[[Any], Any] | None) -> None:
        self.events = events
        self.reply: Reply[Any] | None = None

    def put(self, event: Any) -> None:
        sink = self.events
        if sink is not None:
            sink(event)


class _Raised:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


@dataclasses.dataclass(frozen=True, slots=True)
class _TurnInputs:
    """A turn's inputs, as the workflow got them (data from storage: checked)."""

    conversation_id: str
    turn_id: str
    kind: str
    text: str
    decisions: dict[str, Any]
    output: dict[str, Any] | None

    @classmethod
    def read(cls, inputs: Json, name: str) -> _TurnInputs:
        ok = (
            isinstance(inputs, dict)
            and inputs.get("toolreg") == _MARK
            and inputs.get("v") == VERSION
            and inputs.get("turns") == name
            and inputs.get("kind") in ("send", "resume")
            and isinstance(inputs.get("conversation_id"), str)
            and isinstance(inputs.get("turn_id"), str)
        )
        if not ok:
            tid = inputs.get("turn_id") if isinstance(inputs, dict) else None
            raise DurableReplayError(
                f"durable turns {name!r}: the inputs of turn {tid!r} are not a turn of theirs",
                turn_id=str(tid),
                step="inputs",
            )
        text, decisions, output = inputs.get("text"), inputs.get("decisions"), inputs.get("output")
        return cls(
            inputs["conversation_id"],
            inputs["turn_id"],
            inputs["kind"],
            text if isinstance(text, str) else "",
            decisions if isinstance(decisions, dict) else {},
            output if isinstance(output, dict) else None,
        )


def _checked_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or _ID.fullmatch(value) is None:
        raise UsageError(
            f"{what}={value!r}: 1 to 200 ASCII letters, digits or '_', '.', ':', '@', '-'"
        )
    return value


def _json_decisions(decisions: Mapping[str, Any]) -> dict[str, Any]:
    """The decisions as JSON (a turn's inputs are recorded): what `resume` takes is."""
    out: dict[str, Any] = {}
    for key, value in decisions.items():
        if not isinstance(key, str):
            raise UsageError(f"resume(): a decision's key must be a call id or digest, not {key!r}")
        if isinstance(value, Mapping):
            value = {str(k): v for k, v in value.items()}
        out[key] = value
    try:
        digest(out)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"resume(): the decisions must be JSON in a durable turn ({exc})"
        ) from None
    return out


# -- the seams ------------------------------------------------------------------------------


class DurableTurn:
    """One durable turn as a conversation's drivers see it: they ask it to perform each
    model request (`model` / `amodel`), tool call (`tool` / `atool`) and use of the state
    store (`store` / `astore`) as a step of the engine. `turn_id` is the turn's id in its
    calls' idempotency keys; `registry` the conversation's tools (a model step records the
    fingerprints of those it offers, to name one that changed since)."""

    def __init__(self, engine: DurableEngine, turn_id: str, registry: Any = None) -> None:
        self.engine = engine
        self.turn_id = turn_id
        self.registry = registry  # its tools' fingerprints go in each model step's record
        # the state store's claims are made with a token of the turn's own: a replayed
        # claim of the same turn is the same claimant
        self.token = hashlib.sha256(f"toolreg-durable:{turn_id}".encode()).hexdigest()[:32]
        self._models = 0
        self._stores = 0

    # -- model requests ---------------------------------------------------------------------

    def _model_step(self, step: ModelStep) -> tuple[str, Json, str, ModelStep]:
        self._models += 1
        name = f"model {self._models}"
        inputs = {"request": step.request}
        plain = step if step.early is None else dataclasses.replace(step, early=None)
        return name, inputs, digest(inputs), plain

    def _offered(self, request: Mapping[str, Any]) -> dict[str, str]:
        """The fingerprints of the registry's tools a request offers the model, by name."""
        found: dict[str, str] = {}
        entries = request.get("tools")
        if self.registry is None or not isinstance(entries, list):
            return found
        for entry in entries[:_MAX_OFFERED]:
            if not isinstance(entry, dict):
                continue
            inner = entry.get("function")
            name = inner.get("name") if isinstance(inner, dict) else entry.get("name")
            if not isinstance(name, str):
                continue
            tool = self.registry.get(name)
            if tool is not None:
                found[name] = tool_fingerprint(tool)
        return found

    def _checked_model(self, payload: Json, expected: str, step: ModelStep, name: str) -> Any:
        """A model step's record, checked; a tool offered in it whose definition changed
        since is named (`DurableReplayError`)."""
        if isinstance(payload, dict) and payload.get("inputs") != expected:
            recorded = payload.get("tools")
            if isinstance(recorded, dict):
                now = self._offered(step.request)
                for tool, fingerprint in recorded.items():
                    if tool in now and now[tool] != fingerprint:
                        raise _changed(self.turn_id, tool, name, f"step {name!r}")
        return check_payload(payload, expected, where(self.turn_id, name))

    def model(
        self,
        step: ModelStep,
        make: Callable[[ModelStep], Generator[Any, None, Answer]],
        listening: bool,
        on_text: Callable[[str], Any] | None,
    ) -> Generator[Any, None, Answer]:
        """The answer to `step` (its events first, when `listening`): `make(step)` (a
        driver's model call, with no early starts), recorded; or the recorded answer, its
        text deltas given again as events and to `on_text`."""
        name, inputs, expected, plain = self._model_step(step)
        offered = self._offered(step.request)
        live: list[Any] = []
        deltas: list[str] = []

        def perform(put: Callable[[Any], Any] | None) -> Json:
            try:
                gen = make(plain)
                while True:
                    event = next(gen)
                    if isinstance(event, TextDelta):
                        deltas.append(event.text)
                    if put is not None:
                        put(event)
            except StopIteration as done:
                live.append(done.value)
                return _payload(
                    expected, answer=answer_json(done.value), deltas=deltas, tools=offered
                )
            except ToolregError as exc:
                live.append(exc)
                return _payload(expected, raised=error_json(exc))

        taken = self.engine.step(name)
        if listening:
            payload = yield from _in_thread(
                lambda put: taken.run(inputs, functools.partial(perform, put))
            )
        else:
            payload = taken.run(inputs, functools.partial(perform, None))
        checked = self._checked_model(payload, expected, step, name)
        if live:
            if isinstance(live[0], BaseException):
                raise live[0]
            answer: Answer = live[0]
            return answer
        here = where(self.turn_id, name)
        if "raised" in checked:
            raise error_of(checked["raised"], here)
        answer = answer_of(checked.get("answer"), here)
        for text in _deltas(checked, answer):
            if on_text is not None:
                on_text(text)
            if listening:
                yield TextDelta(text)
        return answer

    async def amodel(
        self,
        step: ModelStep,
        make: Callable[[ModelStep], AsyncGenerator[Any, None]],
        listening: bool,
        on_text: Callable[[str], Any] | None,
        answered: type[Any],
    ) -> AsyncGenerator[Any, None]:
        """`model` for the async driver: `make(step)` yields events, then `answered(answer)`
        (the driver's own wrapper of the answer: a class with an `answer`); so does this."""
        name, inputs, expected, plain = self._model_step(step)
        offered = self._offered(step.request)
        live: list[Any] = []
        deltas: list[str] = []

        async def perform(put: Callable[[Any], Any] | None) -> Json:
            try:
                gen = make(plain)
                try:
                    async for note in gen:
                        if isinstance(note, answered):
                            live.append(note.answer)
                            continue
                        if isinstance(note, TextDelta):
                            deltas.append(note.text)
                        if put is not None:
                            put(note)
                finally:
                    await gen.aclose()
            except ToolregError as exc:
                live.append(exc)
                return _payload(expected, raised=error_json(exc))
            return _payload(expected, answer=answer_json(live[-1]), deltas=deltas, tools=offered)

        taken = self.engine.step(name)
        if listening:
            notes: asyncio.Queue[Any] = asyncio.Queue()
            task = asyncio.ensure_future(
                taken.arun(inputs, functools.partial(perform, notes.put_nowait))
            )
            task.add_done_callback(lambda _: notes.put_nowait(_END))
            while (note := await notes.get()) is not _END:
                yield note
            payload = task.result()
        else:
            payload = await taken.arun(inputs, functools.partial(perform, None))
        checked = self._checked_model(payload, expected, step, name)
        if live:
            if isinstance(live[0], BaseException):
                raise live[0]
            yield answered(live[-1])
            return
        here = where(self.turn_id, name)
        if "raised" in checked:
            raise error_of(checked["raised"], here)
        answer = answer_of(checked.get("answer"), here)
        for text in _deltas(checked, answer):
            if on_text is not None:
                said = on_text(text)
                if isinstance(said, Awaitable):
                    await said
            if listening:
                yield TextDelta(text)
        yield answered(answer)

    # -- tool calls -------------------------------------------------------------------------

    def _tool_step(self, call: ToolCall, tool: Tool | None) -> tuple[str, Json, str | None]:
        fingerprint = None if tool is None else tool_fingerprint(tool)
        shown = call.name if isinstance(call.name, str) else repr(call.name)
        name = f"tool {shown} {call.call_id}"[:_MAX_STEP_NAME]
        inputs = {
            "tool": shown,
            "call_id": call.call_id,
            "key": call.idempotency_key,
            "arguments": canonical_arguments(call.arguments),
            "fingerprint": fingerprint,
        }
        return name, inputs, fingerprint

    def tool(
        self, call: ToolCall, run: Callable[[], ToolResult], tool: Tool | None
    ) -> Callable[[], ToolResult]:
        """`run` (a driver's dispatch of `call`) as a step, for any thread: its place in
        the turn's order is taken now (the driver makes a round's runs in the order of the
        answer); `tool` is the registry's tool of that name, if any."""
        name, inputs, fingerprint = self._tool_step(call, tool)
        taken = self.engine.step(name)
        return functools.partial(self._run_tool, taken, call, name, inputs, fingerprint, run)

    def _run_tool(
        self,
        taken: DurableStep,
        call: ToolCall,
        name: str,
        inputs: Json,
        fingerprint: str | None,
        run: Callable[[], ToolResult],
    ) -> ToolResult:
        expected = digest(inputs)
        live: list[Any] = []

        def perform() -> Json:
            try:
                result = run()
            except ToolregError as exc:
                live.append(exc)
                return _payload(expected, tool=fingerprint, raised=error_json(exc))
            live.append(result)
            return _payload(expected, tool=fingerprint, result=result_json(result))

        payload = taken.run(inputs, perform)
        return self._tool_result(call, name, expected, fingerprint, payload, live)

    def atool(
        self, call: ToolCall, run: Callable[[], Awaitable[ToolResult]], tool: Tool | None
    ) -> Callable[[], Awaitable[ToolResult]]:
        """`tool` for the async driver."""
        name, inputs, fingerprint = self._tool_step(call, tool)
        taken = self.engine.step(name)
        return functools.partial(self._arun_tool, taken, call, name, inputs, fingerprint, run)

    async def _arun_tool(
        self,
        taken: DurableStep,
        call: ToolCall,
        name: str,
        inputs: Json,
        fingerprint: str | None,
        run: Callable[[], Awaitable[ToolResult]],
    ) -> ToolResult:
        expected = digest(inputs)
        live: list[Any] = []

        async def perform() -> Json:
            try:
                result = await run()
            except ToolregError as exc:
                live.append(exc)
                return _payload(expected, tool=fingerprint, raised=error_json(exc))
            live.append(result)
            return _payload(expected, tool=fingerprint, result=result_json(result))

        payload = await taken.arun(inputs, perform)
        return self._tool_result(call, name, expected, fingerprint, payload, live)

    def _tool_result(
        self,
        call: ToolCall,
        name: str,
        expected: str,
        fingerprint: str | None,
        payload: Json,
        live: list[Any],
    ) -> ToolResult:
        here = where(self.turn_id, name)
        if isinstance(payload, dict) and payload.get("v") == VERSION:
            recorded = payload.get("tool")
            if recorded != fingerprint:
                raise _changed(self.turn_id, call.name, name, f"its call {call.call_id!r}")
        checked = check_payload(payload, expected, here)
        if live:
            if isinstance(live[0], BaseException):
                raise live[0]
            result: ToolResult = live[0]
            return result
        if "raised" in checked:
            raise error_of(checked["raised"], here)
        return result_of(checked.get("result"), here)

    # -- the state store --------------------------------------------------------------------

    def _store_step(self, step: StoreStep) -> tuple[str, Json, StoreStep]:
        self._stores += 1
        name = f"store {step.kind} {self._stores}"
        if step.kind == "claim":  # the turn's own token (see `token`)
            step = StoreStep(step.store, "claim", (step.args[0], self.token, *step.args[2:]))
        inputs = {"kind": step.kind, "id": str(step.args[0])}
        return name, inputs, step

    def store(self, step: StoreStep, perform: Callable[[StoreStep], Any]) -> Any:
        """`perform(step)` (a driver's call of the state store) as a step; a save that went
        through before the process died is recognised (see `_saved`)."""
        name, inputs, step = self._store_step(step)
        expected = digest(inputs)
        live: list[Any] = []

        def work() -> Json:
            try:
                try:
                    value = perform(step)
                except StateConflictError:
                    if step.kind != "save":
                        raise
                    value = _saved(step, step.store.load(step.args[0]))
            except ToolregError as exc:
                live.append(exc)
                return _payload(expected, raised=error_json(exc))
            live.append(value)
            return _store_payload(expected, step.kind, value)

        payload = self.engine.step(name).run(inputs, work)
        return self._store_value(step, name, expected, payload, live)

    async def astore(self, step: StoreStep, perform: Callable[[StoreStep], Awaitable[Any]]) -> Any:
        """`store` for the async driver."""
        name, inputs, step = self._store_step(step)
        expected = digest(inputs)
        live: list[Any] = []

        async def work() -> Json:
            try:
                try:
                    value = await perform(step)
                except StateConflictError:
                    if step.kind != "save":
                        raise
                    value = _saved(step, await step.store.aload(step.args[0]))
            except ToolregError as exc:
                live.append(exc)
                return _payload(expected, raised=error_json(exc))
            live.append(value)
            return _store_payload(expected, step.kind, value)

        payload = await self.engine.step(name).arun(inputs, work)
        return self._store_value(step, name, expected, payload, live)

    def _store_value(
        self, step: StoreStep, name: str, expected: str, payload: Json, live: list[Any]
    ) -> Any:
        here = where(self.turn_id, name)
        checked = check_payload(payload, expected, here)
        if live:
            if isinstance(live[0], BaseException):
                raise live[0]
            return live[0]
        if "raised" in checked:
            raise error_of(checked["raised"], here)
        if step.kind == "load":
            return stored_of(checked.get("found"), here)
        if step.kind == "claim":
            claimed = checked.get("claimed")
            if not isinstance(claimed, bool):
                raise here.bad("its claim is not true or false")
            return claimed
        version = checked.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise here.bad("its save has no version")
        return version


def _changed(turn_id: str, tool: object, step: str, what: str) -> DurableReplayError:
    return DurableReplayError(
        f"durable turn {turn_id!r}: the tool {tool!r} has changed its definition "
        f"(description, parameters or flags) since {what} was recorded; the turn cannot go "
        "on with another tool than the one the record holds: finish it with the code that "
        "started it, or cancel it",
        turn_id=turn_id,
        step=step,
    )


def _payload(inputs: str, **fields: Any) -> dict[str, Any]:
    return {"v": VERSION, "inputs": inputs, **fields}


def _store_payload(inputs: str, kind: str, value: Any) -> dict[str, Any]:
    if kind == "load":
        return _payload(inputs, found=stored_json(value))
    if kind == "claim":
        return _payload(inputs, claimed=bool(value))
    return _payload(inputs, version=value)


def _saved(step: StoreStep, found: StoredState | None) -> int:
    """A save refused as a conflict, made again by a replayed turn: the version it wrote
    when the store holds the very state it saves (the process died after the first save
    went through, before the engine recorded it); else the conflict stands."""
    state = step.args[1]
    if found is not None and _same_state(found.state, state):
        return found.version
    raise StateConflictError(
        f"conversation {step.args[0]!r} was saved by another writer while a durable turn "
        "ran (the store does not hold the version the turn loaded, nor what it saves)",
        id=str(step.args[0]),
        expected=step.args[2],
        found=None if found is None else found.version,
    )


def _same_state(a: Any, b: Any) -> bool:
    """Two exported states, the same but for their own id and signature (made anew by
    every export)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    skip = ("id", "signature")
    return {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }


def _deltas(checked: Mapping[str, Any], answer: Answer) -> list[str]:
    """The text deltas a replayed answer gives: those recorded, else its whole text."""
    recorded = checked.get("deltas")
    if isinstance(recorded, list) and recorded and all(isinstance(d, str) for d in recorded):
        return recorded
    return [answer.text] if answer.text else []


def _in_thread(
    run: Callable[[Callable[[Any], Any]], Json],
) -> Generator[Any, None, Json]:
    """`run(put)` in a thread of its own (in a copy of this context: the engine's step
    context goes with it), yielding what it `put`s as it comes; then its value."""
    notes: queue.SimpleQueue[Any] = queue.SimpleQueue()
    box: list[Any] = []

    def work() -> None:
        try:
            box.append(run(notes.put))
        except BaseException as exc:  # handed over to the driver's thread
            box.append(_Raised(exc))
        finally:
            notes.put(_END)

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name="toolreg-durable-step").start()
    while (note := notes.get()) is not _END:
        yield note
    outcome = box[0]
    if isinstance(outcome, _Raised):
        raise outcome.error
    return outcome
