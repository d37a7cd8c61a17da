"""Durable turns: a conversation turn that outlives its process, on an existing engine.

- `DurableTurns`: a conversation's `send` / `resume` / `stream` as workflows of an engine;
  each model request, tool call and use of the state store a recorded step (see `turns`);
- `DurableEngine`, `DurableStep`, `TurnBody`: the protocol an engine implements (`base`);
- `toolreg.durable.dbos.DBOSEngine`: the engine on DBOS (the `durable` extra); nothing
  here imports it, or any engine, until it is used.
"""

from .base import DurableEngine, DurableReplayError, DurableStep, TurnBody
from .turns import DurableTurns

__all__ = [
    "DurableEngine",
    "DurableReplayError",
    "DurableStep",
    "DurableTurns",
    "TurnBody",
]
