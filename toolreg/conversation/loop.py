"""The tool-calling loop as a sans-I/O generator, shared by the sync and async drivers.

The generator yields typed, frozen steps and receives their answers (httpx's `auth_flow`
style): `ModelStep(request)` is answered with the provider's `Answer` (see `providers`),
`ToolsStep(calls, approved)` with the `ToolResult`s in the same order (`approved`: calls a
person approved, from `resume_loop`), and `HookStep(name, hook, event)` with what the hook
returned. It returns the `Reply`. The drivers only do the I/O and call the hooks: so the
async driver awaits an `async def` hook, and a veto holds on both drivers. What goes over
the wire is the provider's business: it encodes the requests, decodes the answers and
writes the results back.

A turn's progress is a `TurnState`: a turn that stops for approvals keeps it (with its
`PausedRound`) until `resume_loop` carries it on; `state` writes it to JSON and back.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..dispatch.calling import arun_hook, run_hook
from ..errors import (
    ConversationError,
    RepeatedCallError,
    ToolCallError,
    ToolDeniedError,
    ToolInterruptedError,
    UsageError,
)
from ..formats import Format
from ..idempotency import canonical_arguments, key_from, key_prefix, new_id
from ..jsonvalues import safe_json
from ..result import Outcome, ToolCall, ToolResult
from .asking import Asked, asked_in, pending_ask, replayed
from .events import ModelCallEvent, ModelResponseEvent, ToolCallReady, ToolFinished
from .guardrails import Guardrails, GuardStep
from .options import ConversationOptions
from .output import OutputSpec
from .policies import CallPolicy
from .providers import Answer, Provider, Request
from .providers.base import CallIds
from .providers.history import trim_to_limits
from .reply import (
    PendingCall,
    Reply,
    StopReason,
    Usage,
)

__all__ = [
    "GuardStep",
    "HookStep",
    "LoopSettings",
    "ModelStep",
    "PausedRound",
    "RoundProgress",
    "Step",
    "ToolsStep",
    "TurnState",
    "Verdict",
    "abandon",
    "rekey_paused",
    "resume_loop",
    "run_loop",
]

Message = dict[str, Any]
HookName = Literal["before_model_call", "after_model_call", "before_tool_call", "after_tool_call"]
logger = logging.getLogger("toolreg")


@dataclass(frozen=True, slots=True)
class ModelStep:
    """Call the model with these keyword arguments; answer with the provider's `Answer`,
    its calls named by `ids` (the provider's `decode(response, ids)` or `assembler(...,
    ids)`: every call an id of its own, before anything runs).

    `early` (eager start on, streaming): for each call complete in the stream (a message
    holding it alone), drive `early(message)` (it yields `HookStep`s: the call's prechecks)
    to the call to start now, or None: it waits for its round. A started call is answered
    by its own run when a `ToolsStep` asks for a call with its id; one that none asks for
    is discarded."""

    request: dict[str, Any]
    early: Callable[[Message], Generator[Step, Any, ToolCall | None]] | None = None
    ids: CallIds | None = None


class RoundProgress:
    """What a driver knows of a round's runs when the round is stopped (an exception, a
    reader that closed the stream): the calls (indices into `ToolsStep.calls`) whose run
    began, and the results of those that finished. A call with no result ran when it was
    `started`, else it never began. (A plain class: one is made per round.)"""

    __slots__ = ("results", "started")

    def __init__(
        self, started: set[int] | None = None, results: dict[int, ToolResult] | None = None
    ) -> None:
        self.started: set[int] = set() if started is None else started
        self.results: dict[int, ToolResult] = {} if results is None else results


@dataclass(frozen=True, slots=True)
class ToolsStep:
    """Run these calls; answer with their `ToolResult`s in the same order. `approved`: a
    person approved exactly these calls (`confirm="defer"`), so they run unasked. A driver
    that cannot answer (the round is stopped) fills `progress` before it raises."""

    calls: list[ToolCall]
    approved: bool = False
    progress: RoundProgress = field(default_factory=RoundProgress)
    # call id -> the answers its tool's questions were given (`ctx.ask`), in order: the
    # driver runs each call with a `ReplayChannel` of them (none: a first run)
    answers: Mapping[str, tuple[Asked, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HookStep:
    """Call `hook` (the `Hooks` field `name`) with `event`; answer with what it returned
    (awaited first by the async driver when it is awaitable): `run()` on the sync driver,
    `await arun()` on the async one (both through `dispatch.calling`)."""

    name: HookName
    hook: Callable[[Any], Any]
    event: Any

    def run(self) -> Any:
        return run_hook(f"hooks.{self.name}", self.hook, self.event)

    async def arun(self) -> Any:
        return await arun_hook(self.hook, self.event)


Step: TypeAlias = ModelStep | ToolsStep | HookStep | GuardStep
_FINISH_REASONS: dict[str, StopReason] = {"length": "length", "content_filter": "content_filter"}


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """What a turn runs with: the conversation's options record (`options`: rounds, tool
    choice, history limits, hooks, ...; read from it, never restated here) and what the
    conversation computed from it and its toolset."""

    model: str
    provider: Provider  # the wire API
    options: ConversationOptions
    # the definitions to offer to the next model call, given the history so far and the
    # number of tool rounds the turn has had
    tools: Callable[[list[Message], int], list[dict[str, Any]]]
    request_options: dict[str, Any] = field(default_factory=dict)
    output: OutputSpec | None = None
    # `confirm="defer"`: the validated arguments of a call that must wait for a person,
    # or None for a call that runs now (it needs no approval, or dispatch will refuse it)
    approval: Callable[[ToolCall], dict[str, Any] | None] | None = None
    # the conversation's own answer to a call that dispatch does not run (a tool search),
    # or None for a call that goes to dispatch
    answer: Callable[[ToolCall], ToolResult | None] | None = None
    policy: CallPolicy = field(default_factory=CallPolicy)  # retries, call limits: policies
    guardrails: Guardrails = field(default_factory=Guardrails)  # on input and output
    # eager start: whether a call may start while the answer still streams (None: never)
    eager: Callable[[ToolCall], bool] | None = None

    @property
    def fmt(self) -> Format:
        """The format of the tool definitions."""
        return self.provider.fmt


@dataclass(slots=True)
class PausedRound:
    """A round stopped for approvals: every call in order (pending ones with the id their
    `PendingCall` has), the results of the calls that are done, and the pending calls."""

    calls: list[ToolCall]
    results: dict[int, ToolResult]
    pending: dict[int, PendingCall]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A person's decision on a pending call: run it (with `arguments` when they were
    edited, validated already) or not (with the `reason` given, if any)."""

    approved: bool
    arguments: dict[str, Any] | None = None
    reason: str | None = None
    answer: Asked | None = None  # the answer to a pending question (`ctx.ask`)


@dataclass(slots=True)
class TurnState:
    """Where a turn is: the history so far and everything the loop decides by.

    With a server that keeps the history, `previous_id` is the response it continues from
    and `known` the number of history entries it holds under that id.
    """

    history: list[Message]
    results: list[ToolResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    calls_made: int = 0
    tool_rounds: int = 0
    final: bool = False
    limit_reached: bool = False
    after_observations: bool = False
    retries_left: int = 0
    recent: list[dict[tuple[str, str], str]] = field(default_factory=list)
    stop_requested: bool = False
    paused: PausedRound | None = None
    previous_id: str | None = None
    known: int = 0
    over_history_limit: bool = False  # trimming had to keep more than the limits allow
    # calls of the answer being streamed whose prechecks ran already (eager start), each
    # with the answer they left (None: it runs); not saved: a turn pauses after its round
    early: list[tuple[ToolCall, ToolResult | None]] = field(default_factory=list)
    # the idempotency keys' parts (see `toolreg.idempotency`): the conversation's id, and
    # the turn's (made for its first round of calls)
    conversation_id: str = ""
    turn_id: str = ""
    key_prefix: str = ""  # made of the two, once per turn (not saved)
    # (tool, canonical arguments) -> the key of a call of this turn that failed while it
    # ran: the model's call made again with the same arguments keeps its key
    retry_keys: dict[tuple[str, str], str] = field(default_factory=dict)
    # the ids of the history's calls, read when an answer's calls first need them (see
    # `CallIds`); not saved: the history has them
    ids: set[str] | None = None


def run_loop(s: LoopSettings, state: TurnState) -> Generator[Step, Any, Reply]:
    """Run a turn from `state` (a new one: `TurnState(history, retries_left=...)`)."""
    if state.paused is not None:
        raise UsageError("this turn waits for approvals: resume it")
    while True:
        if state.tool_rounds >= s.options.max_rounds and not state.final:
            state.final = state.limit_reached = True
        request = _request(s, state)
        yield from _hook(s, "before_model_call", ModelCallEvent(state.calls_made + 1, request))
        state.early.clear()
        early = None if s.eager is None or state.final else functools.partial(_early, s, state)
        ids = CallIds(s.provider.id_rule, functools.partial(_taken, s, state))
        answer: Answer = yield ModelStep(request, early, ids)
        state.calls_made += 1
        state.usage = state.usage.add(answer.usage)
        finish = answer.finish_reason
        event = ModelResponseEvent(state.calls_made, answer.message, finish)
        yield from _hook(s, "after_model_call", event)
        calls = [] if state.final else _named(s.provider.calls(answer), state.calls_made)
        if calls:
            _took(s, state, answer, drop_calls=False)
            reply = yield from _round(s, state, answer.text, calls)
            if reply is not None:
                return reply
            continue
        text = answer.text
        if not text and state.after_observations and not state.final:
            state.final = True  # a server that cannot speak while tools are offered
            continue
        _took(s, state, answer, drop_calls=True)
        reply = _answer(s, state, text, finish)
        if reply is not None:
            return reply


def resume_loop(
    s: LoopSettings, state: TurnState, verdicts: Mapping[str, Verdict]
) -> Generator[Step, Any, Reply]:
    """Carry on a paused turn: run the approved calls, answer the others, go on looping.

    `verdicts` has one entry per pending call id, checked by the caller."""
    paused = state.paused
    if paused is None:
        raise UsageError("nothing to resume: no call waits for approval")
    approved: list[tuple[int, ToolCall]] = []
    answers: dict[str, tuple[Asked, ...]] = {}
    for i, pending in sorted(paused.pending.items()):
        verdict = verdicts[pending.call_id]
        if verdict.answer is not None:  # a question answered: the call runs again
            answers[pending.call_id] = (*replayed(pending), verdict.answer)
            approved.append((i, paused.calls[i]))
        elif verdict.approved:
            arguments = pending.arguments if verdict.arguments is None else verdict.arguments
            # the key of the model's call, unless a person changed its arguments
            shown = paused.calls[i] if verdict.arguments is None else None
            key = _key(state, pending.tool_name, pending.call_id, shown, arguments)
            call = ToolCall(pending.tool_name, arguments, pending.call_id, key)
            if verdict.arguments is not None:  # edited: the input guardrails check them again
                refused = yield from s.guardrails.check_input(
                    call, state.calls_made, verdict.arguments, edited=True
                )
                if refused is not None:
                    paused.results[i] = refused
                    continue
            approved.append((i, call))
        else:
            why = _declined(pending.tool_name, verdict.reason)
            denial = ToolDeniedError(why, tool_name=pending.tool_name)
            paused.results[i] = _synthetic(paused.calls[i], denial)
    step = ToolsStep([c for _, c in approved], approved=True, answers=answers)
    try:
        ran: list[ToolResult] = (yield step) if approved else []
    except BaseException:  # the run was stopped: what is known of each call answers it
        for j, (i, call) in enumerate(approved):
            paused.results[i] = _known(s, call, step.progress, j)
        raise
    asks = _asks(paused.calls, [i for i, _ in approved], ran)
    if asks:  # asked again (another question): those calls wait once more
        kept = [(a, r) for a, r in zip(approved, ran) if a[0] not in asks]
        approved, ran = [a for a, _ in kept], [r for _, r in kept]
    ran = yield from s.guardrails.check_outputs(state.calls_made, ran)
    for (i, call), result in zip(approved, ran):
        edited = verdicts[call.call_id or ""].arguments
        paused.results[i] = result if edited is None else _edited(result, edited)
    for i in sorted(paused.pending):
        if i not in asks:
            event = ToolFinished(paused.calls[i], paused.results[i], state.calls_made)
            yield from _hook(s, "after_tool_call", event)
    if asks:
        paused.pending = asks
        finished = [*state.results, *(paused.results[i] for i in sorted(paused.results))]
        waiting = list(asks.values())
        return _reply(state, "", _waiting(waiting), results=finished, pending=waiting)
    state.paused = None
    results = [paused.results[i] for i in range(len(paused.calls))]
    reply = _after_tools(s, state, paused.calls, results)
    if reply is not None:
        return reply
    return (yield from run_loop(s, state))


def rekey_paused(state: TurnState) -> None:
    """A paused turn read from a saved state: its pending calls get their idempotency keys
    again, worked out from the saved parts (the keys they had when the turn paused)."""
    paused = state.paused
    if paused is None:
        return
    state.key_prefix = ""  # the ids may have changed since it was made
    for i, pending in paused.pending.items():
        shown = paused.calls[i]
        key = _key(state, pending.tool_name, pending.call_id, shown, None)
        paused.calls[i] = ToolCall(shown.name, shown.arguments, shown.call_id, key)
        paused.pending[i] = dataclasses.replace(pending, idempotency_key=key)


def abandon(s: LoopSettings, state: TurnState) -> None:
    """After a resumed turn failed: answer whatever its paused round left unanswered (a call
    whose outcome is unknown says so), so the history stays valid and nothing runs twice."""
    paused = state.paused
    if paused is None:
        return
    for i, call in enumerate(paused.calls):
        if i not in paused.results:  # stopped before its run began
            paused.results[i] = _stopped(call, "not_started")
    done = [paused.results[i] for i in range(len(paused.calls))]
    state.history.extend(s.provider.results(done))
    state.results.extend(done)
    state.paused = None


def _request(s: LoopSettings, state: TurnState) -> dict[str, Any]:
    provider = s.provider
    previous = state.previous_id if provider.keeps_history else None
    if previous is not None:
        sent = state.history[state.known :]  # what the server lacks
    else:
        sent = list(state.history)  # a copy: the request (and its hook event) must not grow
        limits = s.options.max_history_messages, s.options.max_history_chars
        if limits != (None, None):
            sent, fits = trim_to_limits(sent, *limits, split=provider.units)
            if not fits:
                state.over_history_limit = True
    tools = s.tools(state.history, state.tool_rounds)
    offered = bool(tools) and not (state.final and s.options.final_call == "drop_tools")
    return provider.encode(
        Request(
            model=s.model,
            history=sent,
            options=s.request_options,
            tools=tools if offered else [],
            choice=_tool_choice(s, state),
            output=s.output,
            previous_id=previous,
            server_state=s.options.state == "server",
        )
    )


def _hook(s: LoopSettings, name: HookName, event: Any) -> Generator[Step, Any, Any]:
    """What the hook `name` answers to `event` (None when there is no such hook): the
    driver calls it, so that an async driver can await it."""
    logger.debug("%s: %r", name, event)
    hooks = s.options.hooks
    hook = None if hooks is None else getattr(hooks, name)
    if hook is None:
        return None
    return (yield HookStep(name, hook, event))


def _tool_choice(s: LoopSettings, state: TurnState) -> str:
    """The choice to send: "none" when final; "required" on every round with `force_tools`;
    else a forced one (a name, "required") on call 1 only."""
    if state.final:
        return "none"
    if s.options.force_tools:
        return "required"
    if state.calls_made > 0 and s.options.tool_choice not in ("auto", "none"):
        return "auto"
    return s.options.tool_choice


def _took(s: LoopSettings, state: TurnState, answer: Answer, drop_calls: bool) -> None:
    """Add what the model said to the history; a server that keeps the history now holds
    it all, unless something it said was left out (then the next request sends it all)."""
    entries, whole = s.provider.took(answer, drop_calls)
    state.history.extend(entries)
    if s.options.state == "server":
        whole = whole and answer.id is not None
        state.previous_id = answer.id if whole else None
        state.known = len(state.history) if whole else 0


def _taken(s: LoopSettings, state: TurnState) -> set[str]:
    """The ids of the calls in the turn's history (read once: `CallIds` adds its own)."""
    if state.ids is None:
        state.ids = s.provider.call_ids(state.history)
    return state.ids


def _named(calls: list[ToolCall], number: int) -> list[ToolCall]:
    """The calls, each with an id: a call of a dialect whose calls carry none on the wire
    (ChatGLM3, the legacy `functions`) gets the loop's own, `toolreg_<model call>_<place>`
    (never sent: their answers name no call). The others have theirs from `CallIds`."""
    for call in calls:
        if not call.call_id:
            break
    else:
        return calls
    return [
        c if c.call_id else ToolCall(c.name, c.arguments, f"toolreg_{number}_{i}")
        for i, c in enumerate(calls)
    ]


def _call_key(call: ToolCall, canonical: str | None = None) -> tuple[str, str]:
    """A call as the repeat guard and the retry keys compare it: its tool and its
    arguments as canonical JSON."""
    return call.name, canonical_arguments(call.arguments) if canonical is None else canonical


def _key(state: TurnState, name: str, key_id: str, shown: ToolCall | None, arguments: Any) -> str:
    """The idempotency key of a call (`toolreg.idempotency`): of the call the model made
    (`shown`), or of one with these `arguments` (edited by a person). The same call made
    again after its tool failed while it ran keeps that call's key (`retry_keys`)."""
    canonical = canonical_arguments(arguments if shown is None else shown.arguments)
    return _key_of(state, name, key_id, canonical)


def _key_of(state: TurnState, name: str, key_id: str, canonical: str) -> str:
    """`_key` with the arguments written already."""
    retried = state.retry_keys.get((name, canonical))
    if retried is not None:
        return retried
    prefix = state.key_prefix
    if not prefix:
        if not state.turn_id:
            state.turn_id = new_id()
        prefix = state.key_prefix = key_prefix(state.conversation_id, state.turn_id)
    return key_from(prefix, key_id, name, canonical)


def _keyed(state: TurnState, calls: list[ToolCall]) -> tuple[list[ToolCall], list[str]]:
    """The round's calls, each with its idempotency key (its id is the answer's own, every
    call's distinct: `CallIds`, `_named`; a call started early keeps the key it started
    with), and their arguments as canonical JSON."""
    out = []
    canonicals = []
    early = {c.call_id: c.idempotency_key for c, a in state.early if a is None}
    for call in calls:
        canonical = canonical_arguments(call.arguments)
        canonicals.append(canonical)
        key = early.get(call.call_id) if early else None
        if key is None:
            key = _key_of(state, call.name, call.call_id or "", canonical)
        out.append(ToolCall(call.name, call.arguments, call.call_id, key))
    return out, canonicals


def _shown(call: ToolCall) -> str:
    """A call's arguments as the model is shown them (decoded, sorted keys)."""
    args = call.arguments
    try:
        decoded = json.loads(args) if isinstance(args, (str, bytes)) else args
        return json.dumps(decoded, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(args)


def _round(
    s: LoopSettings, state: TurnState, text: str, calls: list[ToolCall]
) -> Generator[Step, Any, Reply | None]:
    """One round of calls: checks, the calls that can run now, then either the observations
    or, when some calls wait for approval, a paused turn. A call that started while the
    answer streamed is answered by that run (the driver finds it by id), never run again.
    A round stopped on its way (an exception, a reader that closed the stream) answers
    every call with what is known of it (`_record_stopped`) before the exception goes on."""
    calls, canonicals = _keyed(state, calls)
    answered, started = yield from _precheck(s, state, calls)
    pending = _pending(s, calls, answered, started)
    to_run = [c for i, c in enumerate(calls) if i not in answered and i not in pending]
    step = ToolsStep(to_run)
    ran: list[ToolResult] | None = None
    checked: list[ToolResult] | None = None
    try:
        ran = (yield step) if to_run else []
        if started:
            ran = _ran_early(to_run, ran, started)
        running = [i for i in range(len(calls)) if i not in answered and i not in pending]
        asks = _asks(calls, running, ran)
        if asks:  # calls stopped by a question: they wait for its answer
            pending = {**pending, **asks}
            ran = [r for i, r in zip(running, ran) if i not in asks]
        checked = yield from s.guardrails.check_outputs(state.calls_made, ran)
        done = _merge(calls, answered, checked, pending)
        for i in sorted(done):
            event = ToolFinished(calls[i], done[i], state.calls_made)
            yield from _hook(s, "after_tool_call", event)
    except BaseException:
        _record_stopped(s, state, calls, answered, to_run, step.progress, ran, checked)
        raise
    if pending:
        state.paused = PausedRound(calls, done, pending)
        finished = [*state.results, *(done[i] for i in sorted(done))]
        asked = list(pending.values())
        return _reply(state, text, _waiting(asked), results=finished, pending=asked)
    return _after_tools(s, state, calls, [done[i] for i in range(len(calls))], canonicals)


def _pending(
    s: LoopSettings,
    calls: list[ToolCall],
    answered: dict[int, ToolResult],
    started: Mapping[int, ToolCall],
) -> dict[int, PendingCall]:
    """The calls that wait for a person (`confirm="defer"`), by the ids their answer gave
    them (distinct: see `CallIds` and `_named`); never one that started already."""
    if s.approval is None:
        return {}
    pending: dict[int, PendingCall] = {}
    for i, call in enumerate(calls):
        arguments = None if i in answered or i in started else s.approval(call)
        if arguments is not None:
            pending[i] = PendingCall(
                call.call_id or "", call.name, arguments, idempotency_key=call.idempotency_key
            )
    return pending


def _asks(
    calls: list[ToolCall], indices: list[int], ran: list[ToolResult]
) -> dict[int, PendingCall]:
    """The calls (by index) whose run a question of their tool stopped (`ctx.ask`)."""
    asks: dict[int, PendingCall] = {}
    for i, result in zip(indices, ran):
        asked = asked_in(result)
        if asked is not None:
            call = calls[i]
            asks[i] = pending_ask(call.call_id or "", result, asked, call.idempotency_key)
    return asks


def _waiting(pending: list[PendingCall]) -> StopReason:
    """ "input_required" when every pending call waits for an answer, else approvals."""
    if all(p.question is not None for p in pending):
        return "input_required"
    return "approval_required"


def _declined(name: str, reason: str | None) -> str:
    why = f"the user declined ({reason})" if reason else "the user declined"
    return f"Tool '{name}' was not run: {why}. Do not retry it unless the user asks."


def _edited(result: ToolResult, arguments: dict[str, Any]) -> ToolResult:
    """A call run with arguments a person changed: the model is told what actually ran."""
    if not result.ok:
        return result
    shown = json.dumps(arguments, ensure_ascii=False)
    return result.with_note(f"(The user changed the arguments to {shown} before it ran.)\n")


def _precheck(
    s: LoopSettings, state: TurnState, calls: list[ToolCall]
) -> Generator[Step, Any, tuple[dict[int, ToolResult], dict[int, ToolCall]]]:
    """Answers for calls that must not run (see `_check`), and the calls that started while
    the answer streamed (eager start; by id, each with the call as it started). A call
    checked while the answer streamed is not checked again, unless its checks refused it
    and its final arguments are others (it never started: it is checked as they are)."""
    answered: dict[int, ToolResult] = {}
    started: dict[int, ToolCall] = {}
    made = s.policy.counted(state.results)  # the calls of this turn so far, by tool
    early = {c.call_id: (c, a) for c, a in state.early} if state.early else None
    state.early.clear()
    for i, call in enumerate(calls):
        found = early.pop(call.call_id, None) if early else None
        if found is not None and (found[1] is None or _same_call(found[0], call)):
            first, answer = found
            if answer is None or answer.error_kind != "call_limit":
                made.append(call.name)  # as `over_limit` counted it when it was checked
            if answer is None:
                started[i] = first
                continue
        else:
            answer = yield from _check(s, state, call, state.calls_made, made)
        if answer is not None:
            answered[i] = answer
    return answered, started


def _ran_early(
    calls: list[ToolCall], ran: list[ToolResult], started: Mapping[int, ToolCall]
) -> list[ToolResult]:
    """The results of a round's calls; one that started while the answer streamed with
    other arguments than the answer's final ones says which ran (the others never do)."""
    firsts = {c.call_id: c for c in started.values()}
    out = []
    for call, result in zip(calls, ran):
        first = firsts.get(call.call_id)
        if first is not None and not _same_call(first, call):
            result = _ran_instead(result, first, call)
        out.append(result)
    return out


def _same_call(a: ToolCall, b: ToolCall) -> bool:
    """The same tool with the same decoded arguments (the same text: no decoding)."""
    if a.name != b.name:
        return False
    return a.arguments == b.arguments or _call_key(a) == _call_key(b)


def _ran_instead(result: ToolResult, first: ToolCall, call: ToolCall) -> ToolResult:
    """A call that ran as it first streamed (`first`), not as the answer ends (`call`):
    the model is told with what (a failure's error says the same as its content)."""
    tool = f" as {first.name}" if first.name != call.name else ""
    noted = result.with_note(
        f"(This call ran{tool} with the arguments {_shown(first)}, as they first "
        "streamed; it was not run again with the final ones.)\n"
    )
    error = result.error
    if error is not None:
        error = copy.copy(error)
        error.message, error.args = noted.content, (noted.content,)
        noted.error = error
    return noted


def _check(
    s: LoopSettings, state: TurnState, call: ToolCall, number: int, made: list[str]
) -> Generator[Step, Any, ToolResult | None]:
    """The answer to a call that must not run: past a call limit (`made`: the turn's calls
    so far, by tool; the call is added when it is within the limits), vetoed by a hook,
    repeated for 3 rounds, or refused by an input guardrail; or the conversation's own
    answer (`answer`) to a call it answers itself. None: it runs."""
    over = s.policy.over_limit(call, made)  # max_calls, max_tool_calls
    if over is not None:
        return over
    verdict = yield from _hook(s, "before_tool_call", ToolCallReady(call, round=number))
    if verdict is False or isinstance(verdict, str):
        why = verdict or f"Tool '{call.name}' was not run: the application blocked it."
        return _synthetic(call, ToolDeniedError(why, tool_name=call.name))
    repeated = _repeats(s, state, call)
    if repeated is not None:
        state.stop_requested = True
        return _synthetic(call, repeated)
    own = None if s.answer is None else s.answer(call)  # e.g. a tool search
    if own is not None:  # the conversation answered it itself: no tool ran
        outcome: Outcome = "completed" if own.ok else "not_started"
        return dataclasses.replace(own, outcome=outcome, idempotency_key=call.idempotency_key)
    return (yield from s.guardrails.check_input(call, number))  # for dispatch: checked first


def _early(
    s: LoopSettings, state: TurnState, message: Message
) -> Generator[Step, Any, ToolCall | None]:
    """A call complete in the stream: the call to start now (its prechecks passed), or None
    (it may not start early, or must not run: its round answers it)."""
    try:
        calls = s.fmt.parse_calls(safe_json(message))  # as the whole answer will be read
    except ConversationError:
        return None  # the whole answer will say what is wrong with it
    if len(calls) != 1 or not calls[0].call_id or s.eager is None or not s.eager(calls[0]):
        return None  # (a call without an id: its round could not find its run)
    call = calls[0]
    if s.approval is not None and s.approval(call) is not None:
        return None  # it waits for a person
    key = _key(state, call.name, call.call_id or "", call, None)  # the id: its answer's own
    call = ToolCall(call.name, call.arguments, call.call_id, key)
    made = s.policy.counted(state.results)  # and the calls this answer started already
    made += [c.name for c, a in state.early if a is None or a.error_kind != "call_limit"]
    answer = yield from _check(s, state, call, state.calls_made + 1, made)
    state.early.append((call, answer))
    return call if answer is None else None


def _repeats(s: LoopSettings, state: TurnState, call: ToolCall) -> RepeatedCallError | None:
    """The refusal of a call made with the same arguments in each of the last rounds."""
    repeats = s.options.max_repeats
    if repeats is None:
        return None  # the guard is off (polling tools)
    previous = state.recent[-(repeats - 1) :]
    if len(previous) < repeats - 1:
        return None  # not enough rounds yet to repeat anything
    key = _call_key(call)
    if all(key in r for r in previous):
        return _repeated(call, previous[-1][key], repeats)
    return None


def _repeated(call: ToolCall, earlier: str, refused_in: int) -> RepeatedCallError:
    return RepeatedCallError(
        f"Tool '{call.name}' was not run again: the same call with the same arguments was "
        f"already made in each of the last {refused_in - 1} rounds. Its result was: "
        f"{earlier}\nDo not repeat it; answer with what you have.",
        tool_name=call.name,
    )


def _synthetic(call: ToolCall, error: ToolCallError) -> ToolResult:
    """The loop's own answer to a call that did not run."""
    return ToolResult(
        tool_name=call.name,
        call_id=call.call_id,
        ok=False,
        content=error.message,
        error=error,
        outcome="not_started",
        idempotency_key=call.idempotency_key,
    )


def _stopped(call: ToolCall, outcome: Outcome) -> ToolResult:
    """The answer to a call of a round that was stopped before its result came: it never
    began ("not_started"), or it was running ("interrupted")."""
    if outcome == "not_started":
        text = f"Tool '{call.name}' was not run: the turn was stopped before it started."
        error: ToolCallError = ToolDeniedError(text, tool_name=call.name)
    else:
        text = (
            f"Tool '{call.name}' was interrupted while it was running (the turn was "
            "stopped): what it did is not known."
        )
        error = ToolInterruptedError(text, tool_name=call.name)
    return ToolResult(
        tool_name=call.name,
        call_id=call.call_id,
        ok=False,
        content=text,
        error=error,
        outcome=outcome,
        idempotency_key=call.idempotency_key,
    )


def _known(s: LoopSettings, call: ToolCall, progress: RoundProgress, index: int) -> ToolResult:
    """What is known of call `index` of a stopped run: its result (withheld when an output
    guardrail had yet to read it), or whether it had begun."""
    result = progress.results.get(index)
    if result is None:
        return _stopped(call, "interrupted" if index in progress.started else "not_started")
    if result.ok and s.guardrails.guards_output(result.tool_name):
        text = (
            f"Tool '{call.name}' ran, but the turn was stopped before its result was "
            "checked: it is withheld."
        )
        return dataclasses.replace(result, content=text, value=None, parts=())
    return result


def _record_stopped(
    s: LoopSettings,
    state: TurnState,
    calls: list[ToolCall],
    answered: dict[int, ToolResult],
    to_run: list[ToolCall],
    progress: RoundProgress,
    ran: list[ToolResult] | None,
    checked: list[ToolResult] | None,
) -> None:
    """A round stopped on its way: every call of it answered in the history and the turn's
    results with what is known of it (run, running, never begun), so that a conversation
    that keeps them tells the model the truth and runs nothing twice."""
    if checked is None and ran is not None:  # every call ran; the output checks did not
        progress = RoundProgress(set(range(len(to_run))), dict(enumerate(ran)))
    source = iter(checked if checked is not None else [None] * len(to_run))
    results: list[ToolResult] = []
    j = 0
    for i, call in enumerate(calls):
        if i in answered:
            results.append(answered[i])
            continue
        if j < len(to_run) and to_run[j] is call:
            done = next(source)
            results.append(done if done is not None else _known(s, call, progress, j))
            j += 1
        else:  # waiting for approval: it never began
            results.append(_stopped(call, "not_started"))
    state.history.extend(s.provider.results(results))
    state.results.extend(results)


def _merge(
    calls: list[ToolCall],
    answered: dict[int, ToolResult],
    ran: list[ToolResult],
    waiting: Mapping[int, Any],
) -> dict[int, ToolResult]:
    """Index -> result for every call that is done (all but those `waiting`)."""
    results = iter(ran)
    return {
        i: answered[i] if i in answered else next(results)
        for i in range(len(calls))
        if i not in waiting
    }


def _after_tools(
    s: LoopSettings,
    state: TurnState,
    calls: list[ToolCall],
    results: list[ToolResult],
    canonicals: list[str] | None = None,
) -> Reply | None:
    state.history.extend(s.provider.results(results))
    state.results.extend(results)
    state.tool_rounds += 1
    state.after_observations = True
    keys: dict[tuple[str, str], str] = {}
    for i, (call, result) in enumerate(zip(calls, results)):
        key = _call_key(call, None if canonicals is None else canonicals[i])
        keys[key] = result.content
        if result.ok:
            state.retry_keys.pop(key, None)
        elif result.outcome != "not_started" and call.idempotency_key is not None:
            state.retry_keys[key] = call.idempotency_key  # made again: the same key
    kept = (s.options.max_repeats or 2) - 1  # the rounds the guard looks back at
    state.recent = [*state.recent[-kept:], keys]
    spent = s.policy.retries_spent(state.results)
    if spent is not None:
        return _reply(state, spent, "retry_limit")
    limited = s.policy.call_limit_stop(results)  # on_call_limit="stop"
    if limited is not None:
        return _reply(state, limited, "call_limit")
    if results and all(r.ok and r.return_direct for r in results):
        text = "\n\n".join(r.content for r in results)
        return _reply(state, text, "return_direct")
    if state.stop_requested:
        state.final = state.limit_reached = True
    return None


def _answer(s: LoopSettings, state: TurnState, text: str, finish: str | None) -> Reply | None:
    reason: StopReason = _FINISH_REASONS.get(finish or "", "answer")
    if state.stop_requested:  # a repeated call was refused: tools were forbidden after it
        reason = "repeated_calls"
    elif state.limit_reached:
        reason = "max_rounds"
    if s.output is None:
        return _reply(state, text, reason)
    value, problems = s.output.parse(text)
    if not problems:
        return _reply(state, text, reason, value)
    if state.retries_left <= 0:
        raise ConversationError(
            f"the answer did not match the output type after {s.options.output_retries} "
            "retries: " + "; ".join(problems)
        )
    state.retries_left -= 1
    state.final = False
    state.history.append(
        s.provider.user(
            "Your answer does not match the required JSON schema: "
            + "; ".join(problems).rstrip(".")  # a problem may end its own sentence
            + ". Answer again with only the corrected JSON."
        )
    )
    return None


def _reply(
    state: TurnState,
    text: str,
    reason: StopReason,
    output: Any = None,
    *,
    results: list[ToolResult] | None = None,
    pending: list[PendingCall] | None = None,
) -> Reply:
    return Reply(
        text=text,
        messages=list(state.history),  # copies: a paused turn's state goes on changing
        tool_results=list(state.results if results is None else results),
        rounds=state.calls_made,
        usage=state.usage,
        stop_reason=reason,
        output=output,
        over_history_limit=state.over_history_limit,
        pending=pending or [],
    )
