"""The conversation driver: the tool-calling loop over any OpenAI-compatible endpoint.

- `drivers`: `Conversation`, `AsyncConversation`, `run_conversation` (the I/O);
- `loop`: the loop itself, a sans-I/O generator both drivers run;
- `endpoints`: the endpoints a dialect speaks; `stream` reads chat completions and
  `responses_api` the Responses API, plain or streamed, into one normalized shape;
- `reply`: `Reply`, `PendingCall`, `Usage`, `Hooks` and the events hooks receive;
- `state`: a conversation (a turn paused for approvals too) as plain JSON and back;
- `output`: structured output (`output_type=`);
- `history`: `trim_history`.
"""

from .drivers import AsyncConversation, Conversation, run_conversation
from .history import trim_history
from .reply import (
    Hooks,
    ModelCallEvent,
    ModelResponseEvent,
    PendingCall,
    Reply,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
)

__all__ = [
    "AsyncConversation",
    "Conversation",
    "Hooks",
    "ModelCallEvent",
    "ModelResponseEvent",
    "PendingCall",
    "Reply",
    "ToolCallEvent",
    "ToolResultEvent",
    "Usage",
    "run_conversation",
    "trim_history",
]
