"""The exceptions toolreg raises.

```
ToolregError
├── ToolDefinitionError        registration; carries function and parameter name
│   ├── UnsupportedTypeError
│   └── DuplicateToolError
├── ToolCallError              dispatch; carries tool name; has a short model-safe message
│   ├── UnknownToolError       with "did you mean" suggestions
│   ├── InvalidArgumentsError  every problem with its JSON path
│   │   └── InvalidJSONError   the arguments are not JSON text (or not an object)
│   ├── ToolTimeoutError       the time limit ran out while the tool ran (or waited for its lock)
│   ├── ToolInterruptedError   the tool was running when its turn was stopped, or it stopped
│   │                          on a cancel signal (`ToolCancelled`)
│   ├── ToolDeniedError        a tool that needs confirmation was not approved
│   ├── RepeatedCallError      the conversation loop refused a call repeated round after round
│   ├── CallLimitError         the conversation loop refused a call past max_calls / max_tool_calls
│   ├── GuardrailRejectedError a guardrail refused a call's arguments or withheld its result
│   └── ToolExecutionError     the original exception chained, never shown to the model
│       ├── RetryRequestedError the tool raised `ToolRetry`: the model may try again
│       └── ToolFailedError    the tool raised `ToolFailed`: final, the model is told so
├── ConversationError          e.g. the endpoint answered something unusable
├── StateStoreError            a state store cannot be read or written (a corrupt, locked or
│                              read-only SQLite file, Redis down): names the file or URL,
│                              and what a turn whose save failed had run
├── GuardrailTripped           a guardrail raised: the conversation turn is stopped
└── UsageError                 toolreg itself was misused: a bad option, a wrong type;
    │                          also a ValueError and a TypeError
    ├── ToolNotFoundError      a lookup by a name no tool has; also a KeyError
    ├── MissingContextError    a tool that needs `context=` was dispatched without one
    ├── ConversationStateError a saved conversation state cannot be resumed (already
    │   │                      resumed, malformed, or a pending call's tool changed)
    │   └── StateConflictError another writer got to a stored state first (a save's
    │                          expected version, a claimed approval)
    └── PinFileError           a mounted server's pin file is unreadable, malformed or
                               tampered with

ToolError                      raised by a tool author to send a chosen message to the model
├── ToolRetry                  ... asking the model to call again, fixed (costs a retry)
├── ToolFailed                 ... saying that the call cannot succeed (costs no retry)
└── ToolCancelled              ... saying what it did before it stopped on a cancel signal
```

Definition errors are raised when a tool is registered or exported: they are programming
mistakes and they say how to fix them. Call errors describe what the model got wrong; the
dispatcher turns them into a `ToolResult` instead of raising them. Usage errors are raised
to the caller: the application, not the model, has to change something.

Every call error has a `kind` (a class attribute, one per class) that names it in a
`ToolResult.error_kind`: `unknown_tool`, `invalid_json`, `invalid_arguments`, `timeout`,
`denied`, `repeated`, `call_limit`, `rejected`, `execution_error`, `retry`, `failed`,
`interrupted`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "CallLimitError",
    "ConversationError",
    "ConversationStateError",
    "DuplicateToolError",
    "GuardrailRejectedError",
    "GuardrailTripped",
    "InvalidArgumentsError",
    "InvalidJSONError",
    "MissingContextError",
    "PinFileError",
    "RepeatedCallError",
    "RetryRequestedError",
    "StateConflictError",
    "StateStoreError",
    "ToolCallError",
    "ToolCancelled",
    "ToolDefinitionError",
    "ToolDeniedError",
    "ToolError",
    "ToolExecutionError",
    "ToolFailed",
    "ToolFailedError",
    "ToolInterruptedError",
    "ToolNotFoundError",
    "ToolRetry",
    "ToolTimeoutError",
    "ToolregError",
    "UnknownToolError",
    "UnsupportedTypeError",
    "UsageError",
    "exception_text",
]


def exception_text(exc: BaseException, limit: int = 500) -> str:
    """`exc`'s message on one line, at most `limit` characters; "" if it has none or its
    `__str__` fails. Never the traceback."""
    try:
        return " ".join(str(exc).split())[:limit]
    except Exception:  # a broken __str__
        return ""


# Words that begin with a vowel letter read as a consonant (a union, a user, a one-off),
# and with a consonant letter read as a vowel (an hour). Acronyms are read letter by letter.
_A_BEFORE = ("one", "once", "uni", "usa", "use", "usi", "usu", "uti", "url", "eu")
_AN_BEFORE = ("hour", "honest", "honor", "honour", "heir")
_VOWEL_NAMED = "AEFHILMNORSX"  # letters whose names begin with a vowel: an HTTP..., an MCP...


def with_article(noun: str) -> str:
    """`noun` after "a" or "an", as it is read aloud, for messages: an integer, an object,
    an array, a string, a union, a UUID, an HTTPError, an MCP server."""
    word = noun.lstrip("`'\"(")
    capitals = len(word) - len(word.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    if capitals >= 2:  # an acronym (HTTP, UUID, IPv4Address): the first letter's name
        vowel = word[0] in _VOWEL_NAMED
    else:
        lower = word.lower()
        if lower.startswith(_AN_BEFORE):
            vowel = True
        elif lower.startswith(_A_BEFORE):
            vowel = False
        else:
            vowel = lower[:1] in ("a", "e", "i", "o", "u")
    return f"{'an' if vowel else 'a'} {noun}"


class ToolregError(Exception):
    """Base class of every exception raised by toolreg."""


class ToolDefinitionError(ToolregError, TypeError):
    """A tool cannot be defined as written.

    `function` is the qualified name of the offending function (or the tool name),
    `parameter` the offending parameter when there is one, and `fix` what to do about it.
    """

    def __init__(
        self,
        problem: str,
        *,
        function: str | None = None,
        parameter: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.problem = problem
        self.function = function
        self.parameter = parameter
        self.fix = fix
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.function is not None:
            where = f"{self.function}"
            if self.parameter is not None:
                where += f", parameter '{self.parameter}'"
            where += ": "
        text = where + self.problem
        if self.fix:
            text += f". Fix: {self.fix}"
        return text


class UnsupportedTypeError(ToolDefinitionError):
    """A type annotation has no JSON Schema equivalent toolreg can produce."""

    def __init__(
        self,
        problem: str,
        *,
        annotation: object = None,
        function: str | None = None,
        parameter: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.annotation = annotation
        super().__init__(problem, function=function, parameter=parameter, fix=fix)


class DuplicateToolError(ToolDefinitionError):
    """A registry already holds a tool of that name (and, for a tool with a `version`, of
    that version: `version` says which)."""

    def __init__(
        self,
        name: str,
        *,
        function: str | None = None,
        existing: str | None = None,
        version: str | None = None,
    ):
        self.name = name
        self.existing = existing
        self.version = version
        if version is None:
            problem = f"a tool named '{name}' is already registered"
            fix = "choose another name=..., unregister the old tool, or pass replace=True"
        else:
            problem = f"version '{version}' of the tool '{name}' is already registered"
            fix = "give the new definition a later version=..., or pass replace=True"
        if existing:
            problem += f" (by {existing})"
        super().__init__(problem, function=function, fix=fix)


class ToolCallError(ToolregError):
    """A tool call cannot be carried out. `message` is short and safe to show a model."""

    kind = "error"

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        self.message = message
        self.tool_name = tool_name
        super().__init__(message)


class UnknownToolError(ToolCallError):
    """The model asked for a tool that is not registered or not allowed."""

    kind = "unknown_tool"

    def __init__(self, message: str, *, tool_name: str, suggestions: Sequence[str] = ()) -> None:
        self.suggestions = tuple(suggestions)
        super().__init__(message, tool_name=tool_name)


class InvalidArgumentsError(ToolCallError):
    """The arguments could not be decoded or did not match the schema.

    `problems` holds `(path, message)` pairs, the path in JSON Pointer-like dotted form;
    `found`, the validator's own records of them (`toolreg.validation.Problem`: the path as
    a tuple, the key a problem is about), when dispatch checked the arguments.
    """

    kind = "invalid_arguments"

    def __init__(
        self,
        message: str,
        *,
        tool_name: str | None = None,
        problems: Sequence[tuple[str, str]] = (),
        found: Sequence[Any] = (),
    ) -> None:
        self.problems = tuple(problems)
        self.found = tuple(found)
        super().__init__(message, tool_name=tool_name)


class InvalidJSONError(InvalidArgumentsError):
    """The arguments are not valid JSON text, or not a JSON object."""

    kind = "invalid_json"


class ToolTimeoutError(ToolCallError):
    """The tool did not finish within its time limit."""

    kind = "timeout"

    def __init__(self, message: str, *, tool_name: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(message, tool_name=tool_name)


class ToolInterruptedError(ToolCallError):
    """The tool was running when it was stopped: its conversation turn was stopped (a
    `stream()` reader that closed it, a cancelled task, an interrupt), or it stopped itself
    on its cancel signal, raising `ToolCancelled` (whose message is then this one). What it
    did is not known unless its message says (`ToolResult.outcome` is "interrupted")."""

    kind = "interrupted"


class ToolDeniedError(ToolCallError):
    """A destructive (or confirmation-requiring) tool was not approved by `confirm=`."""

    kind = "denied"


class RepeatedCallError(ToolCallError):
    """The same call, with the same arguments, came in several rounds in a row."""

    kind = "repeated"


class CallLimitError(ToolCallError):
    """A conversation turn's limit on calls (`max_calls`, `max_tool_calls`) was reached: the
    call did not run."""

    kind = "call_limit"


class GuardrailRejectedError(ToolCallError):
    """A conversation's guardrail refused a call's arguments (the call did not run) or
    withheld its result; the model reads the guardrail's message instead."""

    kind = "rejected"


class ToolExecutionError(ToolCallError):
    """The tool raised. The original exception is `__cause__`; it never reaches the model."""

    kind = "execution_error"


class RetryRequestedError(ToolExecutionError):
    """The tool raised `ToolRetry`: its message asks the model to call again, corrected.
    In a conversation it costs the tool one retry (`retries=`, `tool_retries=`)."""

    kind = "retry"


class ToolFailedError(ToolExecutionError):
    """The tool raised `ToolFailed`: the call cannot succeed, and the model is told not to
    retry it. It costs no retry."""

    kind = "failed"


class ConversationError(ToolregError):
    """The endpoint failed or answered something the driver cannot use.

    `endpoint` is the endpoint's URL (credentials and query values redacted) when the
    conversation knows it; the message then starts with it. `started`: the calls
    (`ToolCall`s) that had started while the failed answer streamed (eager start): they
    ran, or still run, and the message names them."""

    def __init__(
        self, message: str, *, status_code: int | None = None, endpoint: str | None = None
    ) -> None:
        self.status_code = status_code
        self.endpoint = endpoint
        self.started: tuple[Any, ...] = ()
        super().__init__(message)

    def __str__(self) -> str:
        text = super().__str__()
        return text if self.endpoint is None else f"{self.endpoint}: {text}"


class StateStoreError(ToolregError):
    """A state store cannot be read or written: a SQLite file that is corrupt, locked past
    its `busy_timeout` or read-only, a Redis server that is down or refuses the command, a
    store of one's own that raised. The store's own exception is `__cause__`.

    `store` names it (the file, or the URL without credentials); `operation` is "load",
    "save", "claim" or "delete"; `id` the conversation (or claim) id. A failed load or
    claim ran nothing. When the save at the end of a turn fails, the turn's tools did run:
    `ran` holds their results (what ran, with which outcome) and `reply` the turn's reply;
    the conversation keeps them and saves them first at its next `send` or `resume`, and
    the message says so."""

    def __init__(self, message: str, *, store: str, operation: str, id: str | None = None) -> None:
        self.store = store
        self.operation = operation
        self.id = id
        self.ran: tuple[object, ...] = ()
        self.reply: object = None
        self.outcome = ""  # what the conversation says of the turn, when one ran
        super().__init__(message)

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}; {self.outcome}" if self.outcome else text


class GuardrailTripped(ToolregError):
    """A guardrail raised: the conversation turn stops (the history stays as it was before
    the `send`, as after a hook's exception). The guardrail's exception is `__cause__`.

    `guardrail` names the function, `stage` is "input" or "output", `tool_name` the call's
    tool."""

    def __init__(self, message: str, *, guardrail: str, stage: str, tool_name: str) -> None:
        self.guardrail = guardrail
        self.stage = stage
        self.tool_name = tool_name
        super().__init__(message)


class ToolError(Exception):
    """Raise inside a tool to send exactly `message` to the model as the tool's failure."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class ToolRetry(ToolError):
    """Raise inside a tool to ask the model to try again: `message` (what to fix) goes to
    the model as written, and in a conversation the call costs the tool one retry of its
    budget (`register_tool(retries=...)`, else `Conversation(tool_retries=...)`).

    Named for what the tool asks for, beside `ToolError` (a failure, no budget) and
    `ToolFailed` (final): the tool raises it, the model retries."""


class ToolFailed(ToolError):
    """Raise inside a tool when the call cannot succeed however it is made (the account is
    closed, the service is gone): `message` goes to the model as written, followed by a
    line telling it not to retry; it costs no retry."""


class ToolCancelled(ToolError):
    """Raise inside a tool that stops because it was cancelled (`ctx.cancelled` is set, or
    an async tool's task was cancelled): `message` tells the model, as written, what was and
    was not done ("Stopped before the transfer: nothing was sent."). The result's outcome
    is "interrupted", its error a `ToolInterruptedError`."""


class UsageError(ToolregError, ValueError, TypeError):
    """toolreg was used wrongly: an option out of range, a value of the wrong type.

    Also a `ValueError` and a `TypeError`, so code written against the built-in exceptions
    keeps working. The message says what to change.
    """


class ToolNotFoundError(UsageError, KeyError):
    """The application asked a registry for a tool name it does not hold (also a KeyError).

    Not the model's mistake: a model's unknown name is answered with `UnknownToolError`.
    """

    def __init__(self, message: str, *, names: Sequence[str] = ()) -> None:
        self.names = tuple(names)
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0])


class MissingContextError(UsageError):
    """A tool with a `ToolContext` (or `Injected`) parameter was dispatched without `context=`.

    Raised to the caller, never sent to the model: the application has to pass the context.
    """

    def __init__(self, tool_name: str, parameter: str) -> None:
        self.tool_name = tool_name
        self.parameter = parameter
        super().__init__(
            f"tool '{tool_name}' needs a context for its parameter '{parameter}' and none was "
            "given. Fix: pass context=... to dispatch_tool, dispatch_many or Conversation "
            "(toolreg call: --context JSON)"
        )


class ConversationStateError(UsageError):
    """A saved conversation state cannot be used: it was resumed already, it is malformed,
    or a tool that a pending call waits for is gone or has changed its parameters."""


class PinFileError(UsageError):
    """A pin file (`mount(..., pin=...)`, `toolreg mcp pin --lock`) cannot be used: it cannot
    be read or written, it is not a pin file toolreg wrote, or a definition in it no longer
    matches its fingerprint (edited by hand or tampered with). `path` is the file."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        super().__init__(f"the pin file {self.path}: {problem}")


class StateConflictError(ConversationStateError):
    """Another writer got to a stored conversation state first: a `save` expected a
    version the store no longer holds, or another process claimed (is resuming, or
    resumed) the same pending approval. Nothing of this call was stored; load again.

    `id` is the state's id in its store; `expected` the version the writer expected
    (None: that the id was free); `found` the version the store holds (None: none).
    """

    def __init__(
        self,
        message: str,
        *,
        id: str,
        expected: int | None = None,
        found: int | None = None,
    ) -> None:
        self.id = id
        self.expected = expected
        self.found = found
        super().__init__(message)
