"""What both conversation drivers share: `ConversationCore`.

It holds a conversation's options (`ConversationOptions`), its toolset and history, and
decides everything that needs no I/O: what is offered to the model each step, how a turn
paused for approvals is saved and resumed (`export_state` / `from_state`), and each turn as
a *flow* (`_send_flow`, `_run_flow`, `_resume_flow`): one generator of effects (the loop's
steps, `StoreStep`s for the state store, and the `StreamEvent`s a reader gets) in one order.
The drivers in `drivers` (`Conversation`, `AsyncConversation`) only perform those effects,
with sync or awaited I/O.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import inspect
from collections.abc import (
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

from typing_extensions import Self

from ..dispatch import ConfirmCallback
from ..dispatch.calling import acall_store, call_store, describe
from ..errors import (
    ConversationError,
    StateStoreError,
    ToolregError,
    UsageError,
)
from ..formats import DIALECTS, Dialect
from ..idempotency import new_id
from ..observe import OBSERVER, ModelCallTrace
from ..registry import default_registry
from ..result import ToolCall, ToolResult
from ..tool import Tool
from ..toolsets import Toolset, pinned
from ..toolsets.search import ToolSearch
from .approvals import Approvals
from .asking import WAITING
from .endpoints import endpoint_url
from .events import (
    ApprovalRequired,
    Hooks,
    StreamEvent,
    TurnFinished,
)
from .guardrails import Guardrail, Guardrails, check_guardrails, guardrail_list
from .loop import (
    LoopSettings,
    Step,
    TurnState,
    abandon,
    rekey_paused,
    resume_loop,
    run_loop,
)
from .offer import Offer
from .options import (
    ConversationOptions,
    DeferredSearch,
    check_request_options,
    sdk_parameters,
)
from .output import OutputSpec
from .policies import CallPolicy, OnCallLimit
from .providers import dialect_for, dialect_names, provider_for
from .reply import PendingCall, Reply
from .resume import exported, rebuilt
from .state import Loaded
from .stored import RESUME_TTL, Stored
from .tracing import ModelCall, Observed, turn

__all__ = ["ConversationCore", "Flow", "StoreStep"]

Message = dict[str, Any]


T = TypeVar("T")


_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ConversationOptions))
# an option read on the conversation -> its field: every field, and the names the
# conversation once had for two of them (`streaming`, `tool_filter`)
_READ_FROM_OPTIONS = {name: name for name in _OPTION_NAMES} | {
    "streaming": "stream",
    "tool_filter": "tools",
}


class ConversationCore:
    _awaits_hooks = False  # AsyncConversation awaits an async hook; Conversation cannot
    # durable seam: while a durable turn runs, its `toolreg.durable.turns.DurableTurn` (the
    # drivers perform model requests, tool calls and store calls through it); else None
    _durable: Any = None

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        registry: Toolset | None = None,
        tools: str | Sequence[str] | None = None,
        system: str | None = None,
        max_rounds: int = 8,
        parallel: bool = True,
        strict: bool = False,
        context: Any = None,
        confirm: ConfirmCallback | Literal["defer"] | None = None,
        dialect: str | None = None,
        state: Literal["client", "server"] = "client",
        name: str = "toolreg",
        hooks: Hooks | None = None,
        tool_choice: str = "auto",
        final_call: Literal["tool_choice_none", "drop_tools"] = "tool_choice_none",
        assistant_content: Literal["empty", "null", "omit"] = "empty",
        stream: bool = False,
        on_text: Callable[[str], Any] | None = None,
        on_event: Callable[[StreamEvent], Any] | None = None,
        output_retries: int = 2,
        max_history_messages: int | None = None,
        max_history_chars: int | None = None,
        advertise_required: bool = True,
        force_tools: bool = False,
        max_repeats: int | None = 3,
        output_strict: bool = True,
        state_store: Any = None,
        conversation_id: str | None = None,
        key: Any = None,
        tool_search: int | ToolSearch | None = None,
        deferred_search: DeferredSearch = "function",
        tool_retries: int | None = 2,
        max_calls: Mapping[str, int] | None = None,
        max_tool_calls: int | None = None,
        on_call_limit: OnCallLimit = "tell",
        input_guardrails: Guardrail | Sequence[Guardrail] | None = None,
        output_guardrails: Guardrail | Sequence[Guardrail] | None = None,
        eager_tools: bool | None = None,
        max_concurrency: int | None = None,
        versions: Mapping[str, str] | None = None,
        **request_options: Any,
    ) -> None:
        # the options as given, checked by their record (declared once, in options.py)
        given = locals()
        dialect = dialect_for(client, dialect)  # the client's own, unless one is named
        if dialect not in dialect_names():
            names = ", ".join(dialect_names())
            raise UsageError(f"unknown dialect {dialect!r}; choose one of {names}")
        chosen = {name: given[name] for name in _OPTION_NAMES}  # every field: the record's
        chosen["dialect"] = dialect
        options = ConversationOptions._of(chosen)
        provider = provider_for(dialect, client, assistant_content)
        check_request_options(request_options, sdk_parameters(provider, client))
        _check_state_option(options.state, dialect, request_options)
        self.options = options
        """This conversation's options (`ConversationOptions`; the dialect resolved)."""
        toolset = registry if registry is not None else default_registry
        if versions:  # the tools at these versions: a view, as tools= and tool_search= are
            toolset = pinned(toolset, versions)
        offer = self._offer = Offer(toolset, options, provider, context)
        self._approvals = Approvals(offer)
        guards = Guardrails(
            guardrail_list("input_guardrails", input_guardrails),
            guardrail_list("output_guardrails", output_guardrails),
            of_tool=offer.guardrails_of,
            arguments=offer.validated,
        )
        if not self._awaits_hooks:
            _check_sync_hooks(hooks, on_text, on_event)
            check_guardrails(_guardrails_given(guards, toolset))
        self.client = client
        self.model = model
        self.messages: list[Message] = [{"role": "system", "content": system}] if system else []
        if tool_choice not in ("auto", "none", "required") and (tool_choice not in offer.names()):
            raise UsageError(
                f"tool_choice={tool_choice!r} is neither auto, none, required nor a tool offered "
                f"to the model ({', '.join(offer.names()) or 'none offered'})"
            )
        self._settings = LoopSettings(
            model=model,
            provider=provider,
            options=options,
            tools=offer.definitions,
            request_options=request_options,
            approval=self._approvals.approval if confirm == "defer" else None,
            answer=offer.answer,
            policy=CallPolicy(
                tool_retries,
                {} if max_calls is None else max_calls,
                max_tool_calls,
                on_call_limit,
                budget_of=offer.retries_of,
            ),
            guardrails=guards,
            eager=offer.eager if eager_tools is not False and stream and parallel else None,
        )
        if max_calls:
            self._settings.policy.check_names([t.name for t in toolset.tools()])
        provider.check_choice(tool_choice)  # one the dialect cannot express fails now
        if force_tools:
            provider.check_choice("required")
        self._previous: tuple[str, int] | None = None  # the server's copy of the history
        self._observed: Observed | None = None  # the turn under observation (telemetry)
        self._stored: Stored | None = None  # where send/resume load and save (state_store=)
        self.turn_results: list[ToolResult] = []
        """The calls of the last turn, in order, each `ToolResult` with its `outcome`: its
        `Reply.tool_results`, or, after a turn that failed or whose `stream()` reader
        stopped, what is known of each call (completed, interrupted while it ran, or not
        started). Such a turn keeps its calls in the history, answered so, once one began."""
        if state_store is not None:
            self._stored = Stored(
                state_store, conversation_id, key, self.messages, asynchronous=self._awaits_hooks
            )
            self._conversation_id = self._stored.id
        elif conversation_id is not None or key is not None:
            raise UsageError(
                "conversation_id= and key= go with state_store= (the store the conversation "
                "is kept in); to sign a state you save yourself, use export_state(key=...)"
            )
        else:
            self._conversation_id = new_id()

    def __getattr__(self, name: str) -> Any:
        """An option is read from the record, `chat.options.<field>` (there is one spelling
        of each): reading it on the conversation is an `AttributeError` that says so."""
        field = _READ_FROM_OPTIONS.get(name)
        kind = type(self).__name__
        if field is None:
            raise AttributeError(f"{kind!r} object has no attribute {name!r}", name=name, obj=self)
        raise AttributeError(
            f"{kind}.{name} is an option: read it from the options record, chat.options.{field}",
            name=name,
            obj=self,
        )

    @property
    def conversation_id(self) -> str:
        """The conversation's id in its calls' idempotency keys (`toolreg.idempotency`): its
        `conversation_id=` with a state store, else one made when it was built (kept by
        `export_state` and `from_state`)."""
        return self._conversation_id

    @property
    def registry(self) -> Toolset:
        """The conversation's toolset (`registry=`, else `toolreg.default_registry`)."""
        return self._offer.toolset

    @property
    def context(self) -> Any:
        """What every tool's `ToolContext` parameter receives (`context=`)."""
        return self._offer.context

    @property
    def discovered(self) -> list[str]:
        """Deferred tools (`defer_loading=True`) the model found with `search_tools`: they
        are offered from then on (saved by `export_state`)."""
        return self._offer.deferred.found

    @property
    def pending(self) -> list[PendingCall]:
        """The calls that wait for approval (empty unless the last reply stopped for them)."""
        return self._approvals.pending

    def offered_names(self) -> list[str]:
        """The tools the model may call: `tools=` entries are tool names or tags; a
        deferred tool (`defer_loading=True`) once `search_tools` found it (with
        `deferred_search="hosted"`, from the start: the server searches them); of a toolset
        whose `offer` narrows what it holds, those it offered for the last model call."""
        return self._offer.names()

    # -- turns -----------------------------------------------------------------------------

    def _begin(
        self, messages: list[Message], output_type: Any, keep: bool
    ) -> tuple[LoopSettings, TurnState]:
        if self._approvals.paused is not None:
            raise UsageError(
                "a turn waits for approvals: resume() it first (export_state() saves it)"
            )
        settings = self._settings_for(output_type)
        turn = TurnState(
            messages,
            retries_left=settings.options.output_retries,
            conversation_id=self._conversation_id,
        )
        if self._durable is not None:  # durable seam: the keys' turn id is the durable turn's
            turn.turn_id = self._durable.turn_id
        self.turn_results = []
        if keep and self._previous is not None:
            turn.previous_id, turn.known = self._previous
        return settings, turn

    def _end(self, reply: Reply, settings: LoopSettings, turn: TurnState, keep: bool) -> Reply:
        self.turn_results = list(reply.tool_results)
        if keep:
            self.messages = reply.messages
            self._previous = None if turn.previous_id is None else (turn.previous_id, turn.known)
        return self._approvals.pause(reply, settings, turn)

    def _interrupted(self, settings: LoopSettings, turn: TurnState) -> None:
        """A resumed turn failed: keep the history up to what is answered (so that nothing
        that ran is forgotten, or runs again) and start the next turn from there."""
        abandon(settings, turn)
        self._keep_stopped(turn)

    def _stopped_turn(self, turn: TurnState) -> bool:
        """A sent turn failed, or its reader stopped: when one of its calls began, keep its
        history with every call answered as it ended (the model reads what ran, and nothing
        runs twice); else the history stays as it was. Whether it was kept."""
        self.turn_results = list(turn.results)
        if all(r.outcome == "not_started" for r in turn.results):
            return False
        self._keep_stopped(turn)
        return True

    def _keep_stopped(self, turn: TurnState) -> None:
        self.turn_results = list(turn.results)
        self.messages = turn.history[: self._settings.provider.answered_prefix(turn.history)]
        known = turn.previous_id is not None and turn.known <= len(self.messages)
        self._previous = (turn.previous_id, turn.known) if known and turn.previous_id else None

    # -- the observer reads the events too ---------------------------------------------------

    def _following(self, listening: bool) -> bool:
        """Whether a turn's events are made: for a `stream()` reader, `on_event`, or an
        observer (telemetry), which reads them after `on_event`."""
        return listening or self.options.on_event is not None or OBSERVER.current is not None

    def _watching(self, call: ModelCall) -> ModelCallTrace | None:
        """The trace that reads a model call's events: only a streamed answer's arrive as
        they come (the whole text of an answer that is not streamed is no first chunk)."""
        return call.trace if self.options.stream else None

    def _observe(self, event: StreamEvent, model: ModelCallTrace | None) -> None:
        if model is not None:
            model.event(event)
        observed = self._observed
        if observed is not None:
            observed.event(event)  # ends it at the turn's TurnFinished

    def _unobserve(self, error: BaseException | None) -> None:
        """End the turn's trace, if its `TurnFinished` did not (a failure, a reader that
        stopped early)."""
        observed, self._observed = self._observed, None
        if observed is not None:
            observed.end(error)

    # -- turns as flows: one order of steps for both drivers ---------------------------------
    # A flow is a generator of effects (the loop's steps, `StoreStep`s and events) answered
    # by a driver's `_perform`; the drivers only do the I/O (sync, or awaited).

    def _send_flow(self, text: str, output_type: Any) -> Flow:
        yield from self._load_flow()
        messages = [*self.messages, {"role": "user", "content": text}]
        settings, turn_state = self._begin(messages, output_type, keep=True)
        try:
            reply = yield from self._turn_flow(run_loop(settings, turn_state))
        except GeneratorExit:  # the stream's reader stopped: no I/O can happen any more
            self._stopped_turn(turn_state)
            raise
        except BaseException:
            if self._stopped_turn(turn_state):
                yield from self._save_flow(None, failed=True)
            raise
        reply = self._end(reply, settings, turn_state, keep=True)
        yield from self._save_flow(reply)
        return (yield from _finished(reply))

    def _run_flow(self, messages: Iterable[Message], output_type: Any) -> Flow:
        settings, turn_state = self._begin(list(messages), output_type, keep=False)
        try:
            reply = yield from self._turn_flow(run_loop(settings, turn_state))
        except BaseException:  # nothing is kept; what is known of each call is told
            self.turn_results = list(turn_state.results)
            raise
        return (yield from _finished(self._end(reply, settings, turn_state, keep=False)))

    def _resume_flow(self, decisions: Mapping[str, Any], output_type: Any) -> Flow:
        yield from self._load_flow(resuming=True)
        settings, turn_state, found = self._approvals.resuming(
            decisions, output_type, self._settings
        )
        yield from self._claim_flow()
        try:
            reply = yield from self._turn_flow(resume_loop(settings, turn_state, found))
        except GeneratorExit:  # the stream's reader stopped: no I/O can happen any more
            self._interrupted(settings, turn_state)
            raise
        except BaseException:
            self._interrupted(settings, turn_state)
            yield from self._save_flow(None, failed=True)
            raise
        reply = self._end(reply, settings, turn_state, keep=True)
        yield from self._save_flow(reply)
        return (yield from _finished(reply))

    def _turn_flow(self, loop: Generator[Step, Any, Reply]) -> Flow:
        with turn(self.options.name, self.model, self._settings.provider.name) as observed:
            self._observed = observed  # the driver passes it the turn's events, and ends it
            with self._naming_endpoint():
                return (yield from loop)

    def _load_flow(self, resuming: bool = False) -> Generator[StoreStep, Any, None]:
        stored = self._stored
        if stored is not None:
            if stored.unsaved:  # the last turn's save failed: it is saved first
                yield from self._save_flow(None)
            with _before_anything_ran():
                found = yield from _store_step(stored.store, "load", (stored.id,))
            self._take(stored.loaded(found))
            if resuming:
                stored.resumable()

    def _claim_flow(self) -> Generator[StoreStep, Any, None]:
        stored = self._stored
        if stored is not None:
            store = stored.store
            claim = (stored.claim, stored.token, RESUME_TTL)
            with _before_anything_ran():
                marker = stored.claimed((yield from _store_step(store, "claim", claim)))
                args = (stored.id, marker, stored.version)
                stored.saved((yield from _store_step(store, "save", args)))

    def _save_flow(
        self, reply: Reply | None, failed: bool = False
    ) -> Generator[StoreStep, Any, None]:
        """Save the conversation after a turn (`reply`; None: the last turn's, again).
        When the store cannot be written (`StateStoreError`), the conversation keeps the
        turn and saves it first next time; the error says what the turn ran."""
        stored = self._stored
        if stored is None:
            return
        try:
            args = (stored.id, stored.state(self), stored.version)
            saved = yield from _store_step(stored.store, "save", args)
        except Exception as exc:
            if failed:
                # the turn's own failure is what the caller sees; the store keeps the
                # "resumed" marker, and the next load says that the resume did not finish
                return
            if isinstance(exc, StateStoreError):
                stored.unsaved = True
                if reply is not None:
                    stored.unsaved_reply = reply
            _tell_what_ran(exc, stored.unsaved_reply if reply is None else reply, stored)
            raise
        stored.saved(saved)
        stored.unsaved, stored.unsaved_reply = False, None

    # -- state -----------------------------------------------------------------------------

    def export_state(self, *, key: Any = None) -> dict[str, Any]:
        """The conversation as plain JSON: its history, options and, when a turn waits for
        approvals, that turn with its pending calls. `from_state` rebuilds it.

        `key` (bytes or str, at least 16 bytes; or a list, newest first) signs the state
        with HMAC-SHA256: `from_state(..., key=...)` then refuses any change to it.

        Not in it: the client, the registry, `context`, `hooks`, `on_text` and a `confirm`
        callback (give them to `from_state`). Resuming marks this dict "resumed": a state
        resumes once (`state["id"]` and the pending call ids let an application make sure
        of that across processes too).
        """
        return exported(
            model=self.model,
            options=self.options,
            tool_filter=self._offer.filter,
            request_options=self._settings.request_options,
            messages=self.messages,
            previous=self._previous,
            paused=self._approvals.paused,
            discovered=self.discovered,
            conversation_id=self._conversation_id,
            key=key,
        )

    @classmethod
    def from_state(
        cls,
        state: dict[str, Any],
        client: Any,
        *,
        registry: Toolset | None = None,
        context: Any = None,
        hooks: Hooks | None = None,
        on_text: Callable[[str], Any] | None = None,
        key: Any = None,
        **options: Any,
    ) -> Self:
        """Rebuild a conversation from `export_state()`'s JSON, in this process or another.

        With `key` (the one `export_state` signed with, or a list that holds it) the
        state's signature is verified; an unsigned state is then refused, and so is a
        signed one given without a key.

        `options` override saved ones (e.g. `stream=True`), but a saved tool filter and
        saved limits (`max_rounds`, `max_repeats`, `output_retries`, `tool_retries`) only
        narrow the ones given here. A state that is malformed, was resumed already, or whose
        pending call's tool changed its definition, is refused with a
        `ConversationStateError`."""
        common = {"registry": registry, "context": context, "hooks": hooks, "on_text": on_text}
        toolset = registry if registry is not None else default_registry
        chat, loaded = rebuilt(
            functools.partial(cls, client, **common), client, state, key, options, toolset
        )
        chat._restore(loaded, state)
        return chat

    def _restore(self, loaded: Loaded, state: dict[str, Any]) -> None:
        """Take a loaded state's history and paused turn, checked against this toolset."""
        self.messages = loaded.messages
        self._previous = loaded.previous
        self._offer.deferred.restore(loaded.discovered)
        if self._stored is None and loaded.conversation_id:
            self._conversation_id = loaded.conversation_id  # a store's own id wins
        if loaded.turn is not None:
            loaded.turn.conversation_id = self._conversation_id
            rekey_paused(loaded.turn)
        self._approvals.restore(loaded, state, self._settings)

    def _take(self, found: tuple[Loaded, dict[str, Any]] | None) -> None:
        """What a store held for this conversation (None: nothing, a new conversation)."""
        if found is not None:
            self._restore(*found)
        elif self._stored is not None:
            self.messages = copy.deepcopy(self._stored.fresh)
            self._previous = None
            self._approvals.paused = None
            self._offer.deferred.restore(())

    def _settings_for(self, output_type: Any) -> LoopSettings:
        if output_type is None:
            return self._settings
        spec = OutputSpec.for_type(output_type, strict=self.options.output_strict)
        return dataclasses.replace(self._settings, output=spec)

    @contextlib.contextmanager
    def _naming_endpoint(self) -> Generator[None]:
        """A `ConversationError` of this turn names the endpoint's URL (redacted)."""
        try:
            yield
        except ConversationError as exc:
            if exc.endpoint is None:
                exc.endpoint = endpoint_url(self.client)
            raise

    def _stream_kwargs(self) -> dict[str, Any]:
        if not self.options.stream:
            return {}
        return self._settings.provider.stream_options(self._settings.request_options)

    def _max_concurrency(self) -> int:
        """Calls of one model answer at once (`max_concurrency=`, else the registry's)."""
        given = self.options.max_concurrency
        return given if given is not None else self.registry.dispatcher.settings.max_concurrency

    def _dispatch_options(self, approved: bool) -> dict[str, Any]:
        if approved:  # a person approved exactly these calls
            confirm: Any = _approve
        else:  # with "defer", a call that needed approval never gets here
            confirm = None if self.options.confirm == "defer" else self.options.confirm
        return {"context": self.context, "allowed": self._offer.names(), "confirm": confirm}

    def _early_dispatch(self, call: ToolCall) -> dict[str, Any]:
        """What dispatch gets for a call started early: the round's own options."""
        options = self._dispatch_options(False)
        return {"call_id": call.call_id, "idempotency_key": call.idempotency_key, **options}


_HOOK_NAMES = tuple(f.name for f in dataclasses.fields(Hooks))


def _check_sync_hooks(hooks: Hooks | None, on_text: Any, on_event: Any) -> None:
    """Conversation cannot await: an `async def` hook, `on_text` or `on_event` fails when
    it is given."""
    given = [] if hooks is None else [(f"hooks.{n}", getattr(hooks, n)) for n in _HOOK_NAMES]
    for label, hook in [*given, ("on_text", on_text), ("on_event", on_event)]:
        if hook is not None and inspect.iscoroutinefunction(hook):
            raise UsageError(
                f"{label}={describe(hook)} is async def: Conversation cannot await it "
                "(a veto would be lost); use AsyncConversation, or a plain def"
            )


def _guardrails_given(guards: Guardrails, registry: Toolset) -> list[tuple[str, Any]]:
    """Every guardrail a sync conversation would call, labelled as it was given."""
    given = [("input_guardrails", g) for g in guards.input]
    given += [("output_guardrails", g) for g in guards.output]
    for tool in registry.tools():
        if tool.input_guardrails or tool.output_guardrails:
            given += [(f"{tool.name}: input_guardrails", g) for g in tool.input_guardrails]
            given += [(f"{tool.name}: output_guardrails", g) for g in tool.output_guardrails]
    return given


def _approve(tool: Tool, arguments: dict[str, Any]) -> bool:
    return True


def _check_state_option(state: str, dialect: str, request_options: dict[str, Any]) -> None:
    if state == "client":
        return
    fmt = DIALECTS.get(dialect)
    spoken: Dialect | None = None if fmt is None else fmt.dialect
    if spoken is None or spoken.server_state_key is None:
        servers = [n for n, f in DIALECTS.items() if f.dialect and f.dialect.server_state_key]
        raise UsageError(
            f'state="server" needs a dialect whose endpoint keeps the history '
            f"({', '.join(servers)}); the {dialect!r} dialect sends all of it every time"
        )
    if request_options.get("store") is False:
        raise UsageError('state="server" keeps the history on the server: drop store=False')


@dataclass(frozen=True, slots=True)
class StoreStep:
    """Call the conversation's state store: `load`, `save` or `claim` with `args`; answer
    with what it returned (awaited on the async driver: `aload`, `asave`, `aclaim`)."""

    store: Any
    kind: Literal["load", "save", "claim"]
    args: tuple[Any, ...]

    def run(self) -> Any:
        """On the sync driver (`dispatch.calling.call_store`)."""
        return call_store(self.store, self.kind, self.args)

    async def arun(self) -> Any:
        """On the async driver (`dispatch.calling.acall_store`)."""
        return await acall_store(self.store, self.kind, self.args)


Flow: TypeAlias = Generator[Step | StoreStep | StreamEvent, Any, Reply]


def _store_step(
    store: Any, kind: Literal["load", "save", "claim"], args: tuple[Any, ...]
) -> Generator[StoreStep, Any, Any]:
    """Call the store; what a store of one's own raises that is not toolreg's is a
    `StateStoreError` naming the store (its text is not shown: it may hold a secret; it is
    the error's `__cause__`)."""
    try:
        return (yield StoreStep(store, kind, args))
    except ToolregError:
        raise
    except Exception as exc:
        name = type(store).__name__
        raise StateStoreError(
            f"the state store {name}: cannot {kind} {args[0]!r}: it raised {type(exc).__name__}",
            store=name,
            operation=kind,
            id=str(args[0]),
        ) from exc


@contextlib.contextmanager
def _before_anything_ran() -> Iterator[None]:
    """A store's failure before the turn: it says that nothing ran."""
    try:
        yield
    except StateStoreError as err:
        if not err.outcome:
            err.outcome = "nothing ran, and the conversation is as it was"
        raise


_SHOWN_CALLS = 10  # calls a save's failure names, at most


def _tell_what_ran(exc: BaseException, reply: Reply | None, stored: Stored) -> None:
    """Say, on the error of a turn's failed save, which tool calls that turn ran (they are
    not run again) and where the turn is now."""
    ran = [] if reply is None else list(reply.tool_results)
    shown = [
        f"{r.tool_name} ({r.call_id or 'no id'}: {'ok' if r.ok else r.error_kind or 'failed'})"
        for r in ran[:_SHOWN_CALLS]
    ]
    more = f" and {len(ran) - _SHOWN_CALLS} more" if len(ran) > _SHOWN_CALLS else ""
    did = (
        f"the last turn ran {len(ran)} tool call(s), {', '.join(shown)}{more}, which will "
        "not run again"
        if ran
        else "the last turn ran no tool"
    )
    if stored.unsaved:
        where = (
            "its reply and results are on this error (.reply, .ran) and in the "
            "conversation, which saves them first at its next send() or resume()"
        )
    else:
        where = "its reply and results are in the conversation, not in the store"
    outcome = f"{did}; {where}"
    if isinstance(exc, StateStoreError):
        exc.ran, exc.reply, exc.outcome = tuple(ran), reply, outcome
    elif isinstance(exc, ToolregError) and exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}; {outcome}", *exc.args[1:])


def _finished(reply: Reply) -> Generator[StreamEvent, Any, Reply]:
    """A turn's last events."""
    if reply.stop_reason in WAITING:
        yield ApprovalRequired(tuple(reply.pending))
    yield TurnFinished(reply)
    return reply
