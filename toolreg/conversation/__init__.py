"""The conversation driver: the tool-calling loop over any OpenAI-compatible endpoint.

- `drivers`: `Conversation`, `AsyncConversation`, `run_conversation` (the I/O);
- `core`: `ConversationCore`, what both drivers share (options, offering, state, flows);
- `loop`: the loop itself, a sans-I/O generator both drivers run;
- `endpoints`: the endpoints a dialect speaks; `stream` reads chat completions and
  `responses_api` the Responses API, plain or streamed, into one normalized shape;
- `events`: the typed events `stream()` yields (`TextDelta`, `ToolStarted`, ...);
- `reply`: `Reply`, `PendingCall`, `Usage`, `Hooks` and the events hooks receive;
  `STOP_REASONS` and `REPLY_FIELDS` list every `stop_reason` and every field of a `Reply`;
- `options`: `ConversationOptions`, every option of a conversation, declared once;
- `state`: a conversation (a turn paused for approvals too) as plain JSON and back;
- `output`: structured output (`output_type=`);
- `history`: `trim_history`; `history_reader(dialect)` reads a history in a dialect's wire
  format for a toolset's `StepContext`;
- `policies`: retry budgets and call limits; `guardrails`: checks on a call's input and
  output (`GuardrailInput`, `GuardrailOutput`).
"""

from typing import Any

from .drivers import AsyncConversation, Conversation, run_conversation
from .events import (
    ApprovalRequired,
    Hooks,
    ModelCallEvent,
    ModelResponseEvent,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    TurnFinished,
)
from .events import deprecated_event as _deprecated_event
from .guardrails import GuardrailInput, GuardrailOutput
from .options import ConversationOptions
from .providers import history_reader
from .providers.history import trim_history
from .reply import (
    REPLY_FIELDS,
    STOP_REASONS,
    PendingCall,
    Reply,
    StopReason,
    Usage,
)

__all__ = [
    "REPLY_FIELDS",
    "STOP_REASONS",
    "ApprovalRequired",
    "AsyncConversation",
    "Conversation",
    "ConversationOptions",
    "GuardrailInput",
    "GuardrailOutput",
    "Hooks",
    "ModelCallEvent",
    "ModelResponseEvent",
    "PendingCall",
    "Reply",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "ToolCallReady",
    "ToolFinished",
    "ToolProgress",
    "ToolStarted",
    "TurnFinished",
    "Usage",
    "history_reader",
    "run_conversation",
    "trim_history",
]


def __getattr__(name: str) -> Any:  # the deprecated hook event names (DEPRECATED_EVENTS)
    return _deprecated_event(__name__, name)
