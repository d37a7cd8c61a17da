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
import inspect
import json
from collections.abc import (
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from typing_extensions import Self

from ..dispatch import ConfirmCallback
from ..dispatch.calling import acall_store, call_store, describe
from ..errors import (
    ConversationError,
    ConversationStateError,
    StateStoreError,
    ToolCallError,
    ToolregError,
    UsageError,
)
from ..formats import DIALECTS, Dialect, export_tools
from ..idempotency import new_id
from ..observe import OBSERVER, ModelCallTrace
from ..registry import ToolRegistry, default_registry
from ..result import ToolCall, ToolResult
from ..tool import Tool
from ..toolsets import StepContext, Toolset, namespaces_of
from ..toolsets.search import ToolSearch
from .endpoints import endpoint_url
from .events import (
    ApprovalRequired,
    StreamEvent,
    TurnFinished,
)
from .guardrails import Guardrail, Guardrails, check_guardrails, guardrail_list
from .history import answered_prefix
from .loop import (
    LoopSettings,
    Step,
    TurnState,
    Verdict,
    abandon,
    rekey_paused,
    resume_loop,
    run_loop,
)
from .offer import (
    SEARCH_TOOL,
    answer_search,
    check_always,
    check_deferred_search,
    found_loader,
    namespaced,
    not_loaded,
    offers_search,
    reload_found,
    search_call,
    search_definitions,
    select,
    sent_names,
)
from .options import ConversationOptions, DeferredSearch
from .output import OutputSpec
from .policies import CallPolicy, OnCallLimit
from .providers import dialect_for, dialect_names, provider_for
from .reply import Hooks, PendingCall, Reply
from .state import (
    Loaded,
    check_round,
    dump_state,
    load_state,
    resumed_options,
    saved_options,
    signing_keys,
    tool_fingerprint,
    verdicts,
    with_digests,
)
from .stored import RESUME_TTL, Stored
from .tracing import ModelCall, Observed, turn

if TYPE_CHECKING:
    pass

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
        check_request_options(request_options, _sdk_parameters(provider, client))
        check_deferred_search(options.deferred_search, dialect)
        _check_state_option(options.state, dialect, request_options)
        self.options = options
        """This conversation's options (`ConversationOptions`; the dialect resolved)."""
        guards = Guardrails(
            guardrail_list("input_guardrails", input_guardrails),
            guardrail_list("output_guardrails", output_guardrails),
            of_tool=self._guardrails_of,
            arguments=self._validated,
        )
        if not self._awaits_hooks:
            _check_sync_hooks(hooks, on_text, on_event)
            check_guardrails(_guardrails_given(guards, registry or default_registry))
        self.client = client
        self.model = model
        self.registry = registry if registry is not None else default_registry
        self._tool_filter = None if tools is None else _tool_filter(self.registry, tools)
        self._tool_search = ToolSearch.of(tool_search)
        check_always(self.registry, self._tool_search)
        self._step_offer: frozenset[str] | None = None  # what the toolset offered last
        self._exported: tuple[Any, list[dict[str, Any]]] | None = None  # a toolset's export
        self.discovered: list[str] = []
        """Deferred tools (`defer_loading=True`) the model found with `search_tools`: they
        are offered from then on (saved by `export_state`)."""
        self.context = context
        self.messages: list[Message] = [{"role": "system", "content": system}] if system else []
        if tool_choice not in ("auto", "none", "required") and (
            tool_choice not in self.offered_names()
        ):
            raise UsageError(
                f"tool_choice={tool_choice!r} is neither auto, none, required nor a tool offered "
                f"to the model ({', '.join(self.offered_names()) or 'none offered'})"
            )
        self._settings = LoopSettings(
            model=model,
            provider=provider,
            options=options,
            tools=self._tool_definitions,
            request_options=request_options,
            approval=self._approval if confirm == "defer" else None,
            answer=self._answer,
            policy=CallPolicy(
                tool_retries,
                {} if max_calls is None else max_calls,
                max_tool_calls,
                on_call_limit,
                budget_of=self._retries_of,
            ),
            guardrails=guards,
            eager=self._eager if eager_tools is not False and stream and parallel else None,
        )
        if max_calls:
            self._settings.policy.check_names([t.name for t in self.registry.tools()])
        provider.check_choice(tool_choice)  # one the dialect cannot express fails now
        if force_tools:
            provider.check_choice("required")
        self._previous: tuple[str, int] | None = None  # the server's copy of the history
        self._paused: _Paused | None = None  # a turn that waits for approvals
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

    # -- turns -----------------------------------------------------------------------------

    def _begin(
        self, messages: list[Message], output_type: Any, keep: bool
    ) -> tuple[LoopSettings, TurnState]:
        if self._paused is not None:
            raise UsageError(
                "a turn waits for approvals: resume() it first (export_state() saves it)"
            )
        settings = self._settings_for(output_type)
        turn = TurnState(
            messages,
            retries_left=settings.options.output_retries,
            conversation_id=self._conversation_id,
        )
        self.turn_results = []
        if keep and self._previous is not None:
            turn.previous_id, turn.known = self._previous
        return settings, turn

    def _end(self, reply: Reply, settings: LoopSettings, turn: TurnState, keep: bool) -> Reply:
        self.turn_results = list(reply.tool_results)
        if keep:
            self.messages = reply.messages
            self._previous = None if turn.previous_id is None else (turn.previous_id, turn.known)
        if reply.stop_reason == "approval_required" and turn.paused is not None:
            schemas = {p.call_id: tool_fingerprint(self._tool(p)) for p in reply.pending}
            reply = dataclasses.replace(reply, pending=with_digests(turn.paused, schemas))
            self._paused = _Paused(settings, turn, schemas)
        return reply

    def _resuming(
        self, decisions: Mapping[str, Any], output_type: Any
    ) -> tuple[LoopSettings, TurnState, dict[str, Verdict]]:
        """Check everything a resume needs; then the paused turn is used up."""
        paused = self._paused
        if paused is None or paused.turn.paused is None:
            raise UsageError("nothing to resume: no call waits for approval")
        for state in paused.states:
            if state.get("status") == "resumed":
                raise ConversationStateError(
                    f"the conversation state {state.get('id')} was resumed already"
                )
        self._check_schemas(paused)
        settings = paused.settings_for(output_type, self._settings, self.options.output_strict)
        found = verdicts(paused.turn.paused, decisions, self._edited)
        for state in paused.states:
            state["status"] = "resumed"
        self._paused = None
        return settings, paused.turn, found

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
        self.messages = turn.history[: answered_prefix(turn.history)]
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
        settings, turn_state, found = self._resuming(decisions, output_type)
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

    @property
    def pending(self) -> list[PendingCall]:
        """The calls that wait for approval (empty unless the last reply stopped for them)."""
        round_ = self._paused.turn.paused if self._paused is not None else None
        return [] if round_ is None else list(round_.pending.values())

    def _approval(self, call: ToolCall) -> dict[str, Any] | None:
        """`confirm="defer"`: the validated arguments of a call that needs a person's
        approval; None for a call that runs now (dispatch answers a mistake as usual)."""
        tool = self.registry.get(call.name) if isinstance(call.name, str) else None
        if tool is None or not tool.needs_confirmation:
            return None
        try:
            _, arguments = self.registry.dispatcher.check_call(
                call.name, call.arguments, context=self.context, allowed=self.offered_names()
            )
        except ToolCallError:
            return None
        return arguments

    def _edited(self, pending: PendingCall, arguments: Any) -> dict[str, Any]:
        """Arguments a person edited, checked exactly like a model's."""
        if not isinstance(arguments, Mapping):
            raise UsageError(f"resume(): the arguments for {pending.call_id!r} must be a dict")
        try:
            _, checked = self.registry.dispatcher.check_call(
                pending.tool_name,
                dict(arguments),
                context=self.context,
                allowed=self.offered_names(),
            )
        except ToolCallError as err:
            raise UsageError(
                f"resume(): the edited arguments for {pending.call_id!r} are not valid: "
                f"{err.message}"
            ) from None
        return checked

    def _checked(self, name: str, arguments: Any) -> dict[str, Any]:
        """A call's arguments as dispatch accepts them (`ToolCallError` if it does not)."""
        return self.registry.dispatcher.check_call(name, arguments, context=self.context)[1]

    def _tool(self, pending: PendingCall) -> Tool:
        tool = self.registry.get(pending.tool_name)
        if tool is None:
            raise ConversationStateError(
                f"the pending call {pending.call_id!r} is to the tool {pending.tool_name!r}, "
                "which this toolset does not have"
            )
        return tool

    def _check_schemas(self, paused: _Paused) -> None:
        round_ = paused.turn.paused
        for pending in round_.pending.values() if round_ is not None else ():
            if tool_fingerprint(self._tool(pending)) != paused.schemas.get(pending.call_id):
                raise ConversationStateError(
                    f"the tool {pending.tool_name!r} has changed its definition (description, "
                    f"parameters or flags) since its call {pending.call_id!r} was paused; that "
                    "call cannot be resumed: ask the person again"
                )

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
        keys = signing_keys(key)
        settings = self._settings
        unsaved = [k for k, v in settings.request_options.items() if not _is_json(v)]
        if unsaved:
            raise UsageError(
                f"export_state(): the request option(s) {', '.join(unsaved)} are not JSON; "
                "leave them out and give them to from_state() instead"
            )
        paused = self._paused
        state = dump_state(
            options={
                "model": self.model,
                **self.options.saved(),
                "tools": self._tool_filter,
                "request_options": settings.request_options,
            },
            messages=self.messages,
            previous=self._previous,
            turn=None if paused is None else paused.turn,
            output=None if paused is None else paused.shape,
            schemas={} if paused is None else paused.schemas,
            keys=keys,
            discovered=self.discovered,
            conversation_id=self._conversation_id,
        )
        if paused is not None:
            paused.states.append(state)
        return state

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
        if "state_store" in options:
            raise UsageError(
                "from_state() rebuilds a conversation from a state you hold; one with "
                "state_store= loads its own (construct it with state_store= and "
                "conversation_id=)"
            )
        loaded = load_state(state, signing_keys(key))
        model, saved, saved_request = saved_options(loaded.options)
        tools = registry if registry is not None else default_registry
        constructor, request = resumed_options(saved, saved_request, options, tools)
        model = constructor.pop("model", model)
        common = {"registry": registry, "context": context, "hooks": hooks, "on_text": on_text}
        try:
            chat = cls(client, model, **common, **constructor, **request)
        except ConversationStateError:
            raise
        except UsageError:
            try:  # whose options are wrong: the state's, or the application's?
                cls(client, model, **common, **saved, **saved_request)
            except UsageError as err:
                raise ConversationStateError(
                    f"not a usable conversation state: its options are refused: {err}"
                ) from None
            raise
        unknown = _unknown_request_options(chat, saved_request)
        if unknown:
            raise ConversationStateError(
                f"not a usable conversation state: its request options {', '.join(unknown)} "
                "are not parameters of the client's create method"
            )
        chat._restore(loaded, state)
        return chat

    def _restore(self, loaded: Loaded, state: dict[str, Any]) -> None:
        """Take a loaded state's history and paused turn, checked against this registry."""
        self.messages = loaded.messages
        self._previous = loaded.previous
        self._paused = None
        self.discovered = loaded.discovered
        if self._stored is None and loaded.conversation_id:
            self._conversation_id = loaded.conversation_id  # a store's own id wins
        if loaded.turn is not None:
            loaded.turn.conversation_id = self._conversation_id
            rekey_paused(loaded.turn)
            paused = _Paused(self._settings, loaded.turn, loaded.schemas, shape=loaded.output)
            paused.states.append(state)
            self._check_schemas(paused)
            if loaded.turn.paused is not None:
                mode, fmt = self.options.deferred_search, self._settings.fmt.name
                loader = found_loader(mode, fmt, self._found_definitions)
                deferred = {t.name for t in self._allowed() if t.defer_loading}
                reload_found(loaded.turn.paused.results, loader, deferred)
                check_round(
                    loaded.turn.paused,
                    loaded.messages,
                    loaded.turn.calls_made,
                    self._settings.fmt,
                    self._checked,
                )
            self._paused = paused

    def _take(self, found: tuple[Loaded, dict[str, Any]] | None) -> None:
        """What a store held for this conversation (None: nothing, a new conversation)."""
        if found is not None:
            self._restore(*found)
        elif self._stored is not None:
            self.messages = copy.deepcopy(self._stored.fresh)
            self._previous = None
            self._paused = None
            self.discovered = []

    def offered_names(self) -> list[str]:
        """The tools offered to the model: `tools=` entries are tool names or tags; a
        deferred tool (`defer_loading=True`) once `search_tools` found it (with
        `deferred_search="hosted"`, from the start: the server searches them); of a toolset
        whose `offer` narrows what it holds, those it offered for the last model call."""
        return self._offered(self._allowed())

    def _offered(self, allowed: list[Tool]) -> list[str]:
        """`offered_names`, of the tools `tools=` allows (`_allowed`)."""
        found = set(self.discovered)
        hosted = self.options.deferred_search == "hosted"
        step = self._step_offer
        return [
            t.name
            for t in allowed
            if (hosted or not t.defer_loading or t.name in found)
            and (step is None or t.name in step)
        ]

    def _allowed(self, held: list[Tool] | None = None) -> list[Tool]:
        """The tools `tools=` allows, deferred or not (of `held`: the toolset's tools now)."""
        if held is None:
            held = self.registry.tools()
        if self._tool_filter is None:
            return held
        wanted = set(self._tool_filter)
        return [t for t in held if t.name in wanted or t.tags & wanted]

    def _tool_definitions(self, history: list[Message], round_: int = 0) -> list[dict[str, Any]]:
        """The definitions the next model call offers: what the toolset offers for this
        step (`Toolset.offer`), narrowed by `tools=`, deferred loading and tool search."""
        held = self.registry.tools()
        reader = self._settings.provider
        offer = self.registry.offer(StepContext(self.context, tuple(history), round_, reader))
        self._step_offer = None if len(offer) == len(held) else frozenset(t.name for t in offer)
        allowed = self._allowed(held)
        found = set(self.discovered)
        options = self.options
        mode = options.deferred_search
        names = self._offered(allowed)
        fmt, strict = self._settings.fmt.name, options.strict or None
        if self._tool_search is not None:
            chosen = set(select(self.registry, self._tool_search, names, history, reader))
            chosen |= found
            names = [name for name in names if name in chosen]
        names = sent_names(mode, fmt, names, allowed)
        offered = self._definitions(names)
        if mode == "function":  # a found tool is a plain function here
            offered = [{k: v for k, v in d.items() if k != "defer_loading"} for d in offered]
        if fmt == "responses":  # the API's namespaces: a prefixed toolset with a description
            spaces = namespaces_of(self.registry)
            if spaces:
                offered = namespaced(offered, spaces, options.tool_choice)
        if offers_search(mode, fmt, allowed, found):
            if search_call(mode, fmt) == SEARCH_TOOL and self.registry.get(SEARCH_TOOL) is not None:
                raise UsageError(
                    f"the registry has a tool named {SEARCH_TOOL!r}, the name of the search "
                    "tool its deferred tools (defer_loading=True) need: rename that tool"
                )
            searching = search_definitions(mode, fmt, strict, options.advertise_required)
            offered = [*offered, *searching]
        return offered

    def _definitions(self, names: list[str]) -> list[dict[str, Any]]:
        """The definitions of these tools in the provider's format (a registry's cached
        export; another toolset's, kept while its `revision` stays)."""
        if not names:
            return []
        fmt, strict = self._settings.fmt, self.options.strict or None
        required = self.options.advertise_required
        registry = self.registry
        if isinstance(registry, ToolRegistry):
            return registry.get_tools(
                fmt.name, strict=strict, names=names, advertise_required=required
            )
        key = (registry.revision, tuple(names))
        cached = self._exported
        if cached is None or cached[0] != key:
            wanted = set(names)
            tools = {t.name: t for t in registry.tools() if t.name in wanted}
            chosen = [tools[name] for name in names if name in tools]
            defs = export_tools(chosen, fmt, strict=strict, advertise_required=required)
            cached = self._exported = (key, defs)
        return list(cached[1])

    def _found_definitions(self, names: list[str]) -> list[dict[str, Any]]:
        """What a client-executed tool search loads: the definitions of the tools found."""
        return self._definitions(names)

    def _eager(self, call: ToolCall) -> bool:
        """Whether a call may start while the answer still streams: a tool offered to the
        model that needs no confirmation, `eager=True`, or read-only or idempotent, and
        arguments that dispatch takes as they are."""
        tool = self.registry.get(call.name) if isinstance(call.name, str) else None
        if tool is None or tool.needs_confirmation or tool.eager is False:
            return False
        if not (tool.eager or tool.read_only or tool.idempotent):
            return False
        offered = self.offered_names()
        if call.name not in offered:
            return False
        try:  # dispatch would run it as it is
            self.registry.dispatcher.check_call(
                call.name, call.arguments, context=self.context, allowed=offered
            )
        except ToolCallError:
            return False
        return True

    def _early_dispatch(self, call: ToolCall) -> dict[str, Any]:
        """What dispatch gets for a call started early: the round's own options."""
        options = self._dispatch_options(False)
        return {"call_id": call.call_id, "idempotency_key": call.idempotency_key, **options}

    def _answer(self, call: ToolCall) -> ToolResult | None:
        """The conversation's own answer to a `search_tools` call (while some allowed tool
        is deferred), and to a call of a deferred tool not found yet; None for every other
        call (dispatch runs it)."""
        mode = self.options.deferred_search
        searching = search_call(mode, self._settings.fmt.name)
        if call.name == searching and self.registry.get(call.name) is None:
            allowed = self._allowed()
            if any(t.defer_loading for t in allowed):
                step = self._step_offer  # a tool the step did not offer is never found
                among = [t.name for t in allowed if step is None or t.name in step]
                definitions = found_loader(mode, self._settings.fmt.name, self._found_definitions)
                return answer_search(self.registry, call, among, self.discovered, definitions)
            return None
        tool = self.registry.get(call.name) if isinstance(call.name, str) else None
        if mode == "hosted" or tool is None:
            return None
        if tool.defer_loading and call.name not in self.discovered:
            return not_loaded(call) if call.name in {t.name for t in self._allowed()} else None
        return None

    def _guardrails_of(self, name: str) -> tuple[tuple[Guardrail, ...], tuple[Guardrail, ...]]:
        """A tool's own input and output guardrails (`register_tool(input_guardrails=...)`)."""
        tool = self.registry.get(name)
        return ((), ()) if tool is None else (tool.input_guardrails, tool.output_guardrails)

    def _validated(self, call: ToolCall) -> dict[str, Any] | None:
        """A call's arguments as dispatch will run them, for its input guardrails; None for
        a call dispatch refuses (it answers that itself)."""
        try:
            _, arguments = self.registry.dispatcher.check_call(
                call.name, call.arguments, context=self.context, allowed=self.offered_names()
            )
        except ToolCallError:
            return None
        return arguments

    def _retries_of(self, name: str) -> int | None:
        """A tool's own retry budget (`register_tool(retries=...)`); None: the default."""
        tool = self.registry.get(name)
        return None if tool is None else tool.retries

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
        return {"context": self.context, "allowed": self.offered_names(), "confirm": confirm}


def _unknown_request_options(chat: ConversationCore, saved: Mapping[str, Any]) -> list[str]:
    """Saved request options the client's create method does not take (it would raise a
    TypeError in the middle of a resume); none are known when there is no such method."""
    if not saved:
        return []
    parameters = _sdk_parameters(chat._settings.provider, chat.client)
    return [] if parameters is None else sorted(k for k in saved if k not in parameters)


_OWN_OPTIONS: tuple[str, ...] = ()  # the constructor's keywords (filled below)
_SPELLED = {"toolset": "registry", "toolsets": "registry"}  # said another way, in the docs
_SIGNATURES: dict[Any, frozenset[str] | None] = {}  # a create method -> its keywords


def _sdk_parameters(provider: Any, client: Any) -> frozenset[str] | None:
    """The keywords the client's create method for this dialect takes, when its signature
    says so; None when it does not (no such method, or one that takes **kwargs)."""
    try:
        method = provider.create(client)
    except AttributeError:
        return None
    key = getattr(method, "__func__", method)
    try:
        return _SIGNATURES[key]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        pass
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        found = None
    else:
        kinds = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
        loose = any(p.kind in kinds for p in parameters.values())
        found = None if loose else frozenset(parameters)
    with contextlib.suppress(TypeError):
        if len(_SIGNATURES) > 64:  # a client class per test, say: the map stays small
            _SIGNATURES.clear()
        _SIGNATURES[key] = found
    return found


def check_request_options(given: Mapping[str, Any], sdk: frozenset[str] | None) -> None:
    """Refuse a keyword that is neither a conversation option nor a request option, with
    the nearest valid name. A keyword the SDK's create method takes (`sdk`) is a request
    option; when that method's keywords are known, any other is refused; when they are not
    (a client of another make, a method that takes **kwargs), only a near miss of one of the
    conversation's own options is (`difflib`, ratio 0.75 or more: `max_round`,
    `tool_retry`), and the rest go to the endpoint as they are."""
    import difflib  # only when there are request options

    for key in given:
        if key in _SPELLED:
            raise UsageError(
                f"Conversation({key}=...): the conversation's toolset is given as "
                f"{_SPELLED[key]}= (any Toolset: a ToolRegistry, a Mount, a combined, "
                "prefixed, filtered or searchable view)"
            )
        if sdk is not None and key in sdk:
            continue
        near = difflib.get_close_matches(key, _OWN_OPTIONS, n=1, cutoff=0.75)
        if not near and sdk is None:
            continue  # nothing says it is wrong: the endpoint decides
        if not near and sdk is not None:
            near = difflib.get_close_matches(key, sorted(sdk), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}=?" if near else ""
        where = ""
        if sdk is not None:
            where = " nor a parameter of the client's create method"
            if "extra_body" in sdk:
                hint += f" (a parameter only your endpoint knows: extra_body={{{key!r}: ...}})"
        raise UsageError(f"Conversation({key}=...) is not an option of Conversation{where}{hint}")


_HOOK_NAMES = tuple(f.name for f in dataclasses.fields(Hooks))
_OWN_OPTIONS = tuple(
    name
    for name in inspect.signature(ConversationCore.__init__).parameters
    if name not in ("self", "client", "model", "request_options")
)


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


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class _Paused:
    """A turn that waits for approvals: its settings and state, the fingerprints of the
    pending calls' tools, its output type's name and schema (`shape`), and the state
    dicts it was exported as or rebuilt from (marked "resumed" when it resumes)."""

    def __init__(
        self,
        settings: LoopSettings,
        turn: TurnState,
        schemas: dict[str, str],
        shape: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        self.settings = settings
        self.turn = turn
        self.schemas = schemas
        output = settings.output
        self.shape = shape if output is None else (output.name, output.schema)
        self.states: list[dict[str, Any]] = []

    def settings_for(self, output_type: Any, base: LoopSettings, strict: bool) -> LoopSettings:
        """The settings to resume with: the paused turn's output type, checked again when
        it is given (it must be when the turn came from a saved state)."""
        if output_type is None:
            if self.shape is None or self.settings.output is not None:
                return self.settings
            raise UsageError(
                f"resume(): the turn asked for output_type {self.shape[0]}; give it again"
            )
        spec = OutputSpec.for_type(output_type, strict=strict)
        if self.shape is None or _canonical(self.shape) != _canonical((spec.name, spec.schema)):
            raise ConversationStateError(
                "resume(): output_type differs from the one the paused turn asked for"
            )
        return dataclasses.replace(base, output=spec)


def _canonical(shape: tuple[str, dict[str, Any]]) -> str:
    return json.dumps(shape, sort_keys=True)


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


def _tool_filter(registry: Toolset, tools: str | Sequence[str]) -> list[str]:
    """`tools=` as a list (one str is one entry); an entry that is no name and no tag fails."""
    wanted = [tools] if isinstance(tools, str) else list(tools)
    held = registry.tools()
    tags = {tag for tool in held for tag in tool.tags}
    unknown = [w for w in wanted if registry.get(w) is None and w not in tags]
    if unknown:
        raise UsageError(
            f"tools={wanted!r}: {', '.join(map(repr, unknown))} is neither a registered tool "
            f"nor a tag; registered: {', '.join(t.name for t in held) or 'none'}"
        )
    return wanted


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
    if reply.stop_reason == "approval_required":
        yield ApprovalRequired(tuple(reply.pending))
    yield TurnFinished(reply)
    return reply
