"""The durable-step protocol: what toolreg asks of a durable-execution engine.

A durable turn is one workflow of the engine; inside it, every model request, every tool
call and every use of the state store is one *step*, named by what it is (`model 2`, `tool
get_weather call_7`, `store save 3`) inside a workflow named by the conversation and the
turn. The engine records each step's JSON output when the step is done; when the turn runs
again (the process died, and the engine recovers the workflow here or in another process
sharing its database), a recorded step is not performed again: its output is replayed.

An engine implements `DurableEngine` (DBOS does, in `toolreg.durable.dbos`):

- `bind(name, body)`: at start-up, before the engine recovers anything, the application
  binds its turns (a `TurnBody`: `toolreg.durable.DurableTurns`) under a name; a recovered
  workflow is handed to the body bound under the name it was started with. This is how
  what cannot be serialised (the client, the tools, the context) is given again: by the
  application, in every process, the way it registers its tools.
- `run_turn(name, turn_id, inputs)` / `arun_turn(...)`: run `body.run_turn(inputs)` as the
  workflow `turn_id` (its output is the turn's reply as JSON); when that workflow ran
  already, its recorded output, without running anything (waiting for it when it runs
  elsewhere).
- `result(turn_id)`: a turn's output, once it has one (a recovered turn's too).
- `step(name)`: inside a turn, the turn's next step, its place in the turn's order taken
  now (in the order the loop asks: a round's tool calls in the order of the answer, even
  when they run at once, in threads or tasks); then `run(inputs, work)` (or `arun`) gives
  `work()`'s JSON value, recorded under `name`, or the value recorded when the turn did this
  step before. `inputs` are the step's JSON inputs (an engine that runs steps elsewhere
  sends them; DBOS runs `work` in place).

Everything that crosses the protocol is JSON: `inputs`, what `work` returns, the turn's
inputs and output. toolreg checks a replayed step itself: each step's output holds a digest
of its inputs, and a step replayed for other inputs (the application changed a tool, a
prompt or the model since the step was recorded) is a `DurableReplayError`, never a
silently different result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from ..errors import ConversationStateError

__all__ = ["DurableEngine", "DurableReplayError", "DurableStep", "Json", "TurnBody"]

Json = Any
"""A JSON value: None, bool, int, float, str, a list of them or a dict with str keys."""


class DurableReplayError(ConversationStateError):
    """A durable turn cannot go on from what its engine recorded: a step it replays was
    recorded for other inputs (a tool whose definition changed, another prompt, model or
    toolset), or a recorded output is not one toolreg wrote. `turn_id` is the turn,
    `step` the step's name."""

    def __init__(self, message: str, *, turn_id: str, step: str) -> None:
        self.turn_id = turn_id
        self.step = step
        super().__init__(message)


class TurnBody(Protocol):
    """What an engine runs as a durable turn: the turns bound under a name (`bind`)."""

    def run_turn(self, inputs: Json) -> Json:
        """Run the turn `inputs` describes (in the engine's workflow); its reply as JSON."""
        ...

    async def arun_turn(self, inputs: Json) -> Json:
        """`run_turn` for turns of an `AsyncConversation`."""
        ...


class DurableStep(Protocol):
    """One step of a durable turn, its place in the turn's order taken (`engine.step`):
    run it once, from any thread or task of the turn."""

    def run(self, inputs: Json, work: Callable[[], Json]) -> Json:
        """`work()`, recorded; or the recorded value (raising what `work` raised)."""
        ...

    async def arun(self, inputs: Json, work: Callable[[], Awaitable[Json]]) -> Json:
        """`run` for an async `work`."""
        ...


@runtime_checkable
class DurableEngine(Protocol):
    """A durable-execution engine, as toolreg's durable turns use it (see the module)."""

    name: str
    """The engine's name in messages ("dbos")."""

    def bind(self, name: str, body: TurnBody) -> None:
        """Bind `body` under `name`, so that a turn started under that name, recovered in
        this process, runs `body`."""
        ...

    def run_turn(self, name: str, turn_id: str, inputs: Json) -> Json:
        """Run the turn as the workflow `turn_id`: the output of the body bound as `name`,
        or the recorded one."""
        ...

    async def arun_turn(self, name: str, turn_id: str, inputs: Json) -> Json:
        """`run_turn`, awaited (the body's `arun_turn`)."""
        ...

    def step(self, name: str) -> DurableStep:
        """Inside a turn: its next step, named `name` (its place in the order taken now)."""
        ...

    def result(self, turn_id: str, *, timeout: float | None = None) -> Json:
        """The output of the turn `turn_id` (what its body returned), waiting for it while
        it runs, here or elsewhere; raises what it raised. `TimeoutError` after `timeout`
        seconds; `KeyError` for a turn the engine never started."""
        ...
