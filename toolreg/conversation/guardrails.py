"""Guardrails: the application's checks on a call's input and output, inside the loop.

An **input guardrail** gets a `GuardrailInput` (the call's validated arguments) after
validation and before the call runs or waits for approval, and again when a person edited
the arguments of an approved call (`edited=True`). An **output guardrail** gets a
`GuardrailOutput` (the `ToolResult`) before the model reads it. Each answers:

- `None` or `True`: allow;
- a message (`str`): reject; the model reads the message instead (an input rejection means
  the call does not run; an output rejection withholds the result); `False`: reject with a
  fixed message. A rejection is a result with `error_kind="rejected"`;
- an exception: the turn stops with `GuardrailTripped` (the exception chained).

The tool's own guardrails (`register_tool(input_guardrails=..., output_guardrails=...)`)
run first, then the conversation's; the first rejection wins. `AsyncConversation` awaits an
`async def` guardrail; `Conversation` refuses one (`UsageError`). Only calls that go to
dispatch are checked (not a call a limit, a hook or the repeat guard refused), and only
arguments that validate (dispatch answers the others). Each verdict is reported to the
observer (a `toolreg.guardrail` span event, see `telemetry`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..dispatch.calling import arun_guardrail, run_guardrail
from ..errors import GuardrailRejectedError, UsageError
from ..result import ToolCall, ToolResult
from .tracing import guardrail_verdict

__all__ = [
    "GuardStep",
    "GuardrailInput",
    "GuardrailOutput",
    "Guardrails",
    "check_guardrails",
    "guardrail_list",
]

Guardrail = Callable[[Any], Any]
Stage = Literal["input", "output"]


@dataclass(frozen=True, slots=True)
class GuardrailInput:
    """What an input guardrail checks: `arguments` are the validated arguments (JSON
    values) the call would run with; `edited`: a person changed them (`resume`);
    `idempotency_key`: the key the call would run with."""

    round: int
    tool_name: str
    call_id: str | None
    arguments: dict[str, Any]
    edited: bool = False
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class GuardrailOutput:
    """What an output guardrail checks: the call's result, before the model reads it."""

    round: int
    tool_name: str
    call_id: str | None
    result: ToolResult


@dataclass(frozen=True, slots=True)
class GuardStep:
    """Call `guardrail` with `event`; answer with what it returned, awaited first by the
    async driver: `run()` on the sync driver, `await arun()` on the async one."""

    label: str
    stage: Stage
    guardrail: Guardrail
    event: GuardrailInput | GuardrailOutput

    def run(self) -> Any:
        """On the sync driver (`dispatch.calling.run_guardrail`)."""
        event = self.event
        return run_guardrail(self.guardrail, event, self.label, self.stage, event.tool_name)

    async def arun(self) -> Any:
        """On the async driver (`dispatch.calling.arun_guardrail`)."""
        event = self.event
        return await arun_guardrail(self.guardrail, event, self.label, self.stage, event.tool_name)


def _none(name: str) -> tuple[tuple[Guardrail, ...], tuple[Guardrail, ...]]:
    return (), ()


def _unchecked(call: ToolCall) -> dict[str, Any] | None:
    return None


@dataclass(frozen=True, slots=True)
class Guardrails:
    """A conversation's guardrails (`input`, `output`), the tool's own (`of_tool(name)`:
    its input and output guardrails) and `arguments(call)`: the call's validated
    arguments, or None when dispatch will refuse them."""

    input: tuple[Guardrail, ...] = ()
    output: tuple[Guardrail, ...] = ()
    of_tool: Callable[[str], tuple[tuple[Guardrail, ...], tuple[Guardrail, ...]]] = _none
    arguments: Callable[[ToolCall], dict[str, Any] | None] = _unchecked

    def _for(self, name: str, stage: Stage) -> tuple[Guardrail, ...]:
        own_input, own_output = self.of_tool(name)
        if stage == "input":
            return (*own_input, *self.input)
        return (*own_output, *self.output)

    def check_input(
        self,
        call: ToolCall,
        round_: int,
        arguments: dict[str, Any] | None = None,
        edited: bool = False,
    ) -> Generator[GuardStep, Any, ToolResult | None]:
        """The rejection of `call` (it must not run), or None to let it run."""
        guardrails = self._for(call.name, "input")
        if not guardrails:
            return None
        checked = self.arguments(call) if arguments is None else arguments
        if checked is None:
            return None  # dispatch answers arguments that do not validate
        event = GuardrailInput(
            round_, call.name, call.call_id, checked, edited, call.idempotency_key
        )
        for guardrail in guardrails:
            label = _label(guardrail)
            why = _verdict((yield GuardStep(label, "input", guardrail, event)), label)
            guardrail_verdict("input", call.name, label, why)
            if why is not None:
                message = why or f"Tool '{call.name}' was not run: a guardrail refused the call."
                error = GuardrailRejectedError(message, tool_name=call.name)
                return ToolResult(
                    call.name,
                    call.call_id,
                    False,
                    message,
                    error=error,
                    outcome="not_started",
                    idempotency_key=call.idempotency_key,
                )
        return None

    def guards_output(self, name: str) -> bool:
        """Whether an output guardrail reads the results of tool `name`."""
        return bool(self._for(name, "output"))

    def check_outputs(
        self, round_: int, results: Sequence[ToolResult]
    ) -> Generator[GuardStep, Any, list[ToolResult]]:
        """`results` as the model may read them: each withheld one replaced."""
        out = list(results)
        for i, result in enumerate(results):
            for guardrail in self._for(result.tool_name, "output"):
                label = _label(guardrail)
                event = GuardrailOutput(round_, result.tool_name, result.call_id, result)
                why = _verdict((yield GuardStep(label, "output", guardrail, event)), label)
                guardrail_verdict("output", result.tool_name, label, why)
                if why is not None:
                    message = (
                        why or f"Tool '{result.tool_name}' ran; a guardrail withheld its result."
                    )
                    error = GuardrailRejectedError(message, tool_name=result.tool_name)
                    out[i] = dataclasses.replace(
                        result, ok=False, content=message, value=None, error=error, parts=()
                    )
                    break
        return out


def _verdict(answer: Any, label: str) -> str | None:
    """None: allow; a message ("" for the fixed one): reject."""
    if answer is None or answer is True:
        return None
    if answer is False:
        return ""
    if isinstance(answer, str):
        return answer
    raise UsageError(
        f"the guardrail {label} returned {type(answer).__name__}: a guardrail returns None "
        "or True (allow), False or a message for the model (reject), or raises (stop the turn)"
    )


def _label(guardrail: Guardrail) -> str:
    return str(getattr(guardrail, "__qualname__", None) or type(guardrail).__name__)


def guardrail_list(key: str, given: Any) -> tuple[Guardrail, ...]:
    """A conversation's `input_guardrails=` / `output_guardrails=`: a function or a list."""
    if given is None:
        return ()
    found = [given] if callable(given) else given
    if isinstance(found, (str, bytes, dict)) or not isinstance(found, Iterable):
        found = [given]
    out = tuple(found)
    for guardrail in out:
        if not callable(guardrail):
            raise UsageError(
                f"{key}: {guardrail!r} is not a function; give a function or a list of them, "
                "each taking the event and returning None, False or a message"
            )
    return out


def check_guardrails(labelled: Iterable[tuple[str, Guardrail]]) -> None:
    """`Conversation` cannot await: an `async def` guardrail fails when it is given."""
    for key, guardrail in labelled:
        if inspect.iscoroutinefunction(guardrail):
            raise UsageError(
                f"{key}={_label(guardrail)} is async def: Conversation cannot await it (its "
                "verdict would be lost); use AsyncConversation, or a plain def"
            )
