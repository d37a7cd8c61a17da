"""toolreg: plain typed Python functions as LLM tools.

`@register_tool` builds a tool definition from a function's signature, type hints,
`Annotated` metadata and docstring; `get_tools()` exports the definitions for a provider;
`dispatch_tool(name, arguments)` runs a model's call safely, from the registry only.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from .content import Audio, File, Image
from .definition.options import ToolOptions
from .errors import (
    CallLimitError,
    CannotAskError,
    ConversationError,
    ConversationStateError,
    DuplicateToolError,
    GuardrailRejectedError,
    GuardrailTripped,
    InvalidAnswerError,
    InvalidArgumentsError,
    InvalidJSONError,
    MissingContextError,
    PinFileError,
    RepeatedCallError,
    RetryRequestedError,
    StateConflictError,
    StateStoreError,
    ToolCallError,
    ToolCancelled,
    ToolDefinitionError,
    ToolDeniedError,
    ToolError,
    ToolExecutionError,
    ToolFailed,
    ToolFailedError,
    ToolInterruptedError,
    ToolNotFoundError,
    ToolregError,
    ToolRetry,
    ToolTimeoutError,
    UnknownToolError,
    UnsupportedTypeError,
    UsageError,
)
from .params import Answer, Injected, Param, ToolContext
from .registry import ToolRegistry, default_registry
from .result import ToolCall, ToolResult
from .tool import Tool
from .toolsets import (
    StepContext,
    Toolset,
    combined,
    filtered,
    pinned,
    prefixed,
    searchable,
)

if _typing.TYPE_CHECKING:
    from .conversation import (
        ApprovalRequired,
        AsyncConversation,
        Conversation,
        ConversationOptions,
        GuardrailInput,
        GuardrailOutput,
        Hooks,
        ModelCallEvent,
        ModelResponseEvent,
        PendingCall,
        Reply,
        TextDelta,
        ToolCallReady,
        ToolFinished,
        ToolProgress,
        ToolStarted,
        TurnFinished,
        Usage,
        run_conversation,
        trim_history,
    )
    from .idempotency import idempotency_key
    from .telemetry import instrument, uninstrument
    from .toolsets.reshape import Arg, Reshape, reshaped

# The conversation driver, the telemetry and reshaping load on first use (PEP 562): `import toolreg`
# stays light for applications that only register and dispatch.
_LAZY = {
    "Arg": "toolsets.reshape",
    "Reshape": "toolsets.reshape",
    "reshaped": "toolsets.reshape",
    "ApprovalRequired": "conversation",
    "AsyncConversation": "conversation",
    "Conversation": "conversation",
    "ConversationOptions": "conversation",
    "GuardrailInput": "conversation",
    "GuardrailOutput": "conversation",
    "Hooks": "conversation",
    "ModelCallEvent": "conversation",
    "ModelResponseEvent": "conversation",
    "PendingCall": "conversation",
    "Reply": "conversation",
    "TextDelta": "conversation",
    "ToolCallReady": "conversation",
    "ToolFinished": "conversation",
    "ToolProgress": "conversation",
    "ToolStarted": "conversation",
    "TurnFinished": "conversation",
    "Usage": "conversation",
    "idempotency_key": "idempotency",
    "instrument": "telemetry",
    "run_conversation": "conversation",
    "trim_history": "conversation",
    "uninstrument": "telemetry",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:  # a deprecated name (warned at each use, never bound), or none
        events = _importlib.import_module(".conversation.events", __name__)
        return events.deprecated_event("toolreg", name)
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"
"""toolreg's version, as `pip show toolreg` and `toolreg --version` print it."""

register_tool = default_registry.register_tool
register_schema = default_registry.register_schema
get_tools = default_registry.get_tools
dispatch_tool = default_registry.dispatch_tool
adispatch_tool = default_registry.adispatch_tool
dispatch_many = default_registry.dispatch_many
adispatch_many = default_registry.adispatch_many

__all__ = [
    "Answer",
    "ApprovalRequired",
    "Arg",
    "AsyncConversation",
    "Audio",
    "CallLimitError",
    "CannotAskError",
    "Conversation",
    "ConversationError",
    "ConversationOptions",
    "ConversationStateError",
    "DuplicateToolError",
    "File",
    "GuardrailInput",
    "GuardrailOutput",
    "GuardrailRejectedError",
    "GuardrailTripped",
    "Hooks",
    "Image",
    "Injected",
    "InvalidAnswerError",
    "InvalidArgumentsError",
    "InvalidJSONError",
    "MissingContextError",
    "ModelCallEvent",
    "ModelResponseEvent",
    "Param",
    "PendingCall",
    "PinFileError",
    "RepeatedCallError",
    "Reply",
    "Reshape",
    "RetryRequestedError",
    "StateConflictError",
    "StateStoreError",
    "StepContext",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolCallReady",
    "ToolCancelled",
    "ToolContext",
    "ToolDefinitionError",
    "ToolDeniedError",
    "ToolError",
    "ToolExecutionError",
    "ToolFailed",
    "ToolFailedError",
    "ToolFinished",
    "ToolInterruptedError",
    "ToolNotFoundError",
    "ToolOptions",
    "ToolProgress",
    "ToolRegistry",
    "ToolResult",
    "ToolRetry",
    "ToolStarted",
    "ToolTimeoutError",
    "ToolregError",
    "Toolset",
    "TurnFinished",
    "UnknownToolError",
    "UnsupportedTypeError",
    "Usage",
    "UsageError",
    "__version__",
    "adispatch_many",
    "adispatch_tool",
    "combined",
    "default_registry",
    "dispatch_many",
    "dispatch_tool",
    "filtered",
    "get_tools",
    "idempotency_key",
    "instrument",
    "pinned",
    "prefixed",
    "register_schema",
    "register_tool",
    "reshaped",
    "run_conversation",
    "searchable",
    "trim_history",
    "uninstrument",
]
