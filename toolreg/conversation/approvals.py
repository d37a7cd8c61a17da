"""`Approvals`: the calls a person decides on (`confirm="defer"`), and the turn that waits.

A call of a tool that needs confirmation stops the turn before it runs (`approval`); the
turn waits as a `Paused` record: its settings and state, a fingerprint of each pending
call's tool (`signing.tool_fingerprint`), each pending call bound to it by a digest, and the
state dicts it was exported as or rebuilt from. `resuming` checks a person's decisions
(`verdicts`) and that no pending call's tool changed since, before anything runs; then the
paused turn is used up (a state resumes once). A paused turn read from a saved state is
held against the history it claims to come from first (`check_round`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConversationError, ConversationStateError, ToolCallError, UsageError
from ..jsonvalues import strict_decoder
from ..result import ToolCall
from ..tool import Tool
from .asking import WAITING, answer_for, settle_asks
from .loop import LoopSettings, PausedRound, TurnState, Verdict
from .output import OutputSpec
from .providers import Provider
from .reply import PendingCall, Reply
from .signing import call_digest, canonical, tool_fingerprint
from .state import bad_state

if TYPE_CHECKING:
    from .offer import Offer
    from .state import Loaded

Json = dict[str, Any]

__all__ = ["Approvals", "Paused", "check_round", "verdicts", "with_digests"]


class Approvals:
    """A conversation's approvals, built from its `Offer` (its tools, and what a call's
    arguments come to); `paused` is the turn that waits, if any."""

    def __init__(self, offer: Offer) -> None:
        self.offer = offer
        self.paused: Paused | None = None

    @property
    def pending(self) -> list[PendingCall]:
        """The calls that wait for approval (empty unless the last reply stopped for them)."""
        round_ = self.paused.turn.paused if self.paused is not None else None
        return [] if round_ is None else list(round_.pending.values())

    def approval(self, call: ToolCall) -> dict[str, Any] | None:
        """`confirm="defer"`: the validated arguments of a call that needs a person's
        approval; None for a call that runs now (dispatch answers a mistake as usual)."""
        tool = self.offer.tool(call.name)
        if tool is None or not tool.needs_confirmation:
            return None
        return self.offer.validated(call)

    def pause(self, reply: Reply, settings: LoopSettings, turn: TurnState) -> Reply:
        """A turn that stopped for approvals (or a tool's question) waits: its pending
        calls get their digests; a question's call holds its arguments as dispatch
        validated them, as an approval's does."""
        if reply.stop_reason not in WAITING or turn.paused is None:
            return reply
        settle_asks(turn.paused, self.offer.checked)
        schemas = {p.call_id: tool_fingerprint(self._tool(p)) for p in reply.pending}
        reply = dataclasses.replace(reply, pending=with_digests(turn.paused, schemas))
        self.paused = Paused(settings, turn, schemas)
        return reply

    def resuming(
        self, decisions: Mapping[str, Any], output_type: Any, base: LoopSettings
    ) -> tuple[LoopSettings, TurnState, dict[str, Verdict]]:
        """Check everything a resume needs; then the paused turn is used up."""
        paused = self.paused
        if paused is None or paused.turn.paused is None:
            raise UsageError("nothing to resume: no call waits for approval")
        for state in paused.states:
            if state.get("status") == "resumed":
                raise ConversationStateError(
                    f"the conversation state {state.get('id')} was resumed already"
                )
        self._check_schemas(paused)
        settings = paused.settings_for(output_type, base, base.options.output_strict)
        found = verdicts(paused.turn.paused, decisions, self._edited)
        for state in paused.states:
            state["status"] = "resumed"
        self.paused = None
        return settings, paused.turn, found

    def restore(self, loaded: Loaded, state: dict[str, Any], settings: LoopSettings) -> None:
        """A state's paused turn, checked against this conversation's tools (unchanged since
        it paused) and its history (`check_round`); it waits again."""
        self.paused = None
        turn = loaded.turn
        if turn is None:
            return
        paused = Paused(settings, turn, loaded.schemas, shape=loaded.output)
        paused.states.append(state)
        self._check_schemas(paused)
        if turn.paused is not None:
            self.offer.reload_found(turn.paused.results)
            check_round(
                turn.paused, loaded.messages, turn.calls_made, self.offer.provider, self._checked
            )
        self.paused = paused

    def _edited(self, pending: PendingCall, arguments: Any) -> dict[str, Any]:
        """Arguments a person edited, checked exactly like a model's."""
        if not isinstance(arguments, Mapping):
            raise UsageError(f"resume(): the arguments for {pending.call_id!r} must be a dict")
        try:
            return self.offer.checked(pending.tool_name, dict(arguments))
        except ToolCallError as err:
            raise UsageError(
                f"resume(): the edited arguments for {pending.call_id!r} are not valid: "
                f"{err.message}"
            ) from None

    def _checked(self, name: str, arguments: Any) -> dict[str, Any]:
        """A call's arguments as dispatch accepts them (`ToolCallError` if it does not)."""
        return self.offer.checked(name, arguments, offered=False)

    def _tool(self, pending: PendingCall) -> Tool:
        tool = self.offer.tool(pending.tool_name)
        if tool is None:
            raise ConversationStateError(
                f"the pending call {pending.call_id!r} is to the tool {pending.tool_name!r}, "
                "which this toolset does not have"
            )
        return tool

    def _check_schemas(self, paused: Paused) -> None:
        round_ = paused.turn.paused
        for pending in round_.pending.values() if round_ is not None else ():
            if tool_fingerprint(self._tool(pending)) != paused.schemas.get(pending.call_id):
                raise ConversationStateError(
                    f"the tool {pending.tool_name!r} has changed its definition (description, "
                    f"parameters or flags) since its call {pending.call_id!r} was paused; that "
                    "call cannot be resumed: ask the person again"
                )


class Paused:
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
        if self.shape is None or canonical(self.shape) != canonical((spec.name, spec.schema)):
            raise ConversationStateError(
                "resume(): output_type differs from the one the paused turn asked for"
            )
        return dataclasses.replace(base, output=spec)


def with_digests(paused: PausedRound, fingerprints: Mapping[str, str]) -> list[PendingCall]:
    """Give each pending call of `paused` its digest; the pending calls, in order."""
    for index, p in paused.pending.items():
        digest = call_digest(p.call_id, p.tool_name, p.arguments, fingerprints[p.call_id])
        paused.pending[index] = dataclasses.replace(p, digest=digest)
    return list(paused.pending.values())


def verdicts(
    paused: PausedRound,
    decisions: Any,
    validate: Callable[[PendingCall, Any], dict[str, Any]],
) -> dict[str, Verdict]:
    """One `Verdict` per pending call from `decisions` ({call id or digest: True | False |
    "reason" | {"arguments": {...}}}); edited arguments pass `validate`. A `UsageError`
    says what is wrong before anything runs; a digest that is no pending call's (the call
    shown was changed since, or is another state's) is a `ConversationStateError`."""
    if not isinstance(decisions, Mapping):
        raise UsageError(
            "resume() takes a dict: {call_id: True | False | reason | {...}}, or for a "
            "tool's question {call_id: answer}"
        )
    waiting = {p.call_id: p for p in paused.pending.values()}
    by_digest = {p.digest: p.call_id for p in paused.pending.values() if p.digest}
    decided: dict[str, Any] = {}
    for key, decision in decisions.items():
        call_id = key if key in waiting else by_digest.get(key)
        if call_id is None and isinstance(key, str) and key.startswith("sha256:"):
            raise ConversationStateError(
                f"resume(): no pending call has the digest {key[:80]}: the call it was "
                "computed for was changed since, or it belongs to another state"
            )
        if call_id is None:
            continue
        if call_id in decided:
            raise UsageError(f"resume(): two decisions for {call_id!r} (its id and its digest)")
        decided[call_id] = decision
    unknown = [repr(k) for k in decisions if k not in waiting and k not in by_digest]
    missing = [repr(k) for k in waiting if k not in decided]
    if unknown or missing:
        problems = []
        if missing:
            problems.append(f"no decision for {', '.join(missing)}")
        if unknown:
            problems.append(f"{', '.join(unknown)} is not pending")
        raise UsageError(
            f"resume(): {'; '.join(problems)} (pending: {', '.join(map(repr, waiting))})"
        )
    out: dict[str, Verdict] = {}
    for call_id, pending in waiting.items():
        decision = decided[call_id]
        if pending.question is not None:  # a tool's question: the decision is its answer
            out[call_id] = Verdict(True, answer=answer_for(pending, decision))
        elif decision is True or decision is False:
            out[call_id] = Verdict(decision)
        elif isinstance(decision, str):
            out[call_id] = Verdict(False, reason=decision)
        elif isinstance(decision, Mapping) and set(decision) == {"arguments"}:
            out[call_id] = Verdict(True, arguments=validate(pending, decision["arguments"]))
        else:
            raise UsageError(
                f"resume(): the decision for {call_id!r} must be True, False, a reason (str) "
                f'or {{"arguments": {{...}}}}, not {type(decision).__name__}'
            )
    return out


def check_round(
    paused: PausedRound,
    history: list[Json],
    rounds: int,
    provider: Provider,
    check: Callable[[str, Any], dict[str, Any]],
) -> None:
    """A paused round read from a state must be the calls of the last assistant message in
    its history (same order, ids, names and arguments), and each pending call's arguments
    must be what `check` (dispatch's validation, run now) makes of that message's.
    Otherwise the state was edited: `ConversationStateError`."""
    try:
        made = provider.last_calls(history)
    except ConversationError:
        raise bad_state("the calls in its history are malformed") from None
    if made is None:
        raise bad_state("the calls of its round are not in an assistant message")
    if len(made) != len(paused.calls):
        raise bad_state("its round is not the calls of the last assistant message in its history")
    ids = [c.call_id for c in made]
    for index, (saved, sent) in enumerate(zip(paused.calls, made)):
        own_id = f"toolreg_{rounds}_{index}"  # the loop's, for a call without a usable id
        unusable = (
            not isinstance(sent.call_id, str) or not sent.call_id or ids.count(sent.call_id) > 1
        )
        same_id = saved.call_id == sent.call_id or (unusable and saved.call_id == own_id)
        if not same_id or saved.name != sent.name or not _same_arguments(saved, sent):
            raise bad_state(
                f"call {index + 1} of its round is not the one in its history (the model's)"
            )
    for index, pending in paused.pending.items():
        try:
            checked = check(pending.tool_name, made[index].arguments)
        except ToolCallError as err:
            raise bad_state(
                f"the pending call {pending.call_id[:64]!r} has arguments its tool refuses "
                f"now ({err.message})"
            ) from None
        if canonical(checked) != canonical(pending.arguments):
            raise bad_state(
                f"the pending call {pending.call_id[:64]!r} has other arguments than the "
                "model's call in its history"
            )


def _same_arguments(saved: ToolCall, sent: ToolCall) -> bool:
    """The same arguments, compared decoded; the history holds `{}` for arguments that were
    no JSON object (see `loop._repair_arguments`)."""
    mine, theirs = _decoded(saved.arguments), _decoded(sent.arguments)
    if not isinstance(mine, dict) and theirs == {}:
        return True
    try:
        return bool(canonical(mine) == canonical(theirs))
    except (TypeError, ValueError):
        return False


def _decoded(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return strict_decoder.decode(arguments)
        except (ValueError, RecursionError):
            return arguments
    return arguments
