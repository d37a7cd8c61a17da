"""The conversation driver: the tool-calling loop over any OpenAI-compatible endpoint.

- `drivers`: `Conversation`, `AsyncConversation`, `run_conversation` (the I/O);
- `loop`: the loop itself, a sans-I/O generator both drivers run;
- `stream`: chat completions, plain or streamed, -> one normalized shape;
- `reply`: `Reply`, `Usage`, `Hooks` and the events hooks receive;
- `output`: structured output (`output_type=`);
- `history`: `trim_history`.
"""

from .drivers import AsyncConversation, Conversation, run_conversation
from .history import trim_history
from .reply import (
    Hooks,
    ModelCallEvent,
    ModelResponseEvent,
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
    "Reply",
    "ToolCallEvent",
    "ToolResultEvent",
    "Usage",
    "run_conversation",
    "trim_history",
]
