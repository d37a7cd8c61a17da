"""Durable turns on DBOS (`pip install 'toolreg[durable]'`): workflows and steps recorded in
a database the application already has, SQLite on one machine, PostgreSQL for many.

```python
from toolreg.durable import DurableTurns
from toolreg.durable.dbos import DBOSEngine

engine = DBOSEngine("postgresql://app@db/app", executor_id="web-1")
turns = DurableTurns(engine, "support", support)  # before launch: recovery finds them
engine.launch()  # this executor's unfinished turns run on, here
```

A turn is a DBOS workflow (`toolreg.turn`, or `toolreg.aturn` for an `AsyncConversation`)
whose id is the turn's id; each model request, tool call and use of the state store is a
step taken with `DBOS.reserve_step()` (so that a round's calls, which run at once, take
their steps in the order of the answer) and run with the reservation's `run` /
`run_async`. What toolreg hands DBOS is JSON; a `DBOSEngine` that configures DBOS itself
(given a URL) has it store everything as JSON too (DBOS's portable serializer), never
pickles.

DBOS is one per process: so is what `DBOSEngine` binds (`DurableTurns` names), whichever
`DBOSEngine` object binds it. An application that configures and launches DBOS itself (for
its own workflows) makes a `DBOSEngine()` without a URL before `DBOS.launch()`.

Recovery. At `launch()`, DBOS runs on the turns this executor (`executor_id`, "local" by
default) left unfinished. With several processes, give each its own `executor_id`: when one
dies, `recover([its id])` in any other makes its turns run again in a process sharing the
database (DBOS hands each to exactly one). Two processes with the same executor id would
each take the other's running turns at launch.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..errors import UsageError
from .base import DurableEngine, DurableStep, Json, TurnBody
from .payloads import error_of, is_toolreg_error, where

__all__ = ["DBOSEngine"]

_TURN = "toolreg.turn"
_ATURN = "toolreg.aturn"
_BOUND: dict[str, TurnBody] = {}  # names bound in this process (DBOS is one per process)
_LOCK = threading.Lock()
_WORKFLOWS: dict[str, Any] = {}  # the two workflow functions, registered once
_POLL = 0.05  # seconds between two looks at a turn that runs elsewhere


def _body(inputs: Json) -> TurnBody:
    name = inputs.get("turns") if isinstance(inputs, dict) else None
    body = _BOUND.get(name) if isinstance(name, str) else None
    if body is None:
        raise UsageError(
            f"a durable turn of {name!r} was recovered in a process that did not bind that "
            "name: make the DurableTurns before DBOSEngine.launch()"
        )
    return body


def _turn(inputs: Json) -> Json:
    return _body(inputs).run_turn(inputs)


async def _aturn(inputs: Json) -> Json:
    return await _body(inputs).arun_turn(inputs)


def _registered() -> dict[str, Any]:
    """The workflow functions, registered with DBOS once per process (before its launch)."""
    with _LOCK:
        if not _WORKFLOWS:
            from dbos import DBOS, WorkflowSerializationFormat

            portable = WorkflowSerializationFormat.PORTABLE
            _WORKFLOWS[_TURN] = DBOS.workflow(name=_TURN, serialization_type=portable)(_turn)
            _WORKFLOWS[_ATURN] = DBOS.workflow(name=_ATURN, serialization_type=portable)(_aturn)
        return _WORKFLOWS


class _Step:
    """A step of a turn, its DBOS step id reserved (`DBOS.reserve_step`)."""

    __slots__ = ("name", "reservation")

    def __init__(self, name: str, reservation: Any) -> None:
        self.name = name
        self.reservation = reservation

    def run(self, inputs: Json, work: Callable[[], Json]) -> Json:
        return self.reservation.run({"name": self.name}, work)

    async def arun(self, inputs: Json, work: Callable[[], Awaitable[Json]]) -> Json:
        return await self.reservation.run_async({"name": self.name}, work)


class DBOSEngine:
    """toolreg's `DurableEngine` on DBOS (see the module).

    Args:
        database_url: DBOS's system database, `sqlite:///path/to/file.sqlite` or
            `postgresql://user:password@host:port/database`; None: the application
            configures DBOS itself (`DBOS(config=...)`) before `launch()`.
        app_name: DBOS's application name (when it configures DBOS).
        executor_id: this process's executor id (see the module); None: DBOS's default.
        application_version: DBOS recovers only the workflows of its own application
            version (by default a digest of the registered workflows' code): give one to
            let processes of different builds recover each other's turns.
        config: more of DBOS's own configuration (`DBOSConfig` keys), for a URL given.

    Raises:
        UsageError: `dbos` is not installed (`pip install 'toolreg[durable]'`).
    """

    name = "dbos"

    def __init__(
        self,
        database_url: str | None = None,
        *,
        app_name: str = "toolreg",
        executor_id: str | None = None,
        application_version: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        try:
            import dbos  # noqa: F401
        except ImportError:
            raise UsageError(
                "DBOSEngine needs the dbos package: pip install 'toolreg[durable]'"
            ) from None
        _registered()
        self._config: dict[str, Any] | None = None
        if database_url is not None:
            from dbos import DBOSPortableJSONSerializer

            self._config = {
                "name": app_name,
                "system_database_url": database_url,
                "serializer": DBOSPortableJSONSerializer(),
                "log_level": "WARNING",
                **({} if executor_id is None else {"executor_id": executor_id}),
                **(
                    {}
                    if application_version is None
                    else {"application_version": application_version}
                ),
                **(config or {}),
            }
        elif executor_id is not None or application_version is not None or config:
            raise UsageError(
                "DBOSEngine(executor_id=, application_version=, config=) configure DBOS, with "
                "database_url=; an application that configures DBOS itself sets them there"
            )

    # -- lifecycle --------------------------------------------------------------------------

    def launch(self) -> None:
        """Start DBOS (configured with this engine's URL, unless DBOS exists already): the
        turns this executor left unfinished run on. Bind every `DurableTurns` first."""
        from dbos import DBOS

        if self._config is not None:
            DBOS(config=self._config)  # type: ignore[arg-type]
        DBOS.launch()

    def recover(self, executor_ids: Iterable[str]) -> list[str]:
        """Make the unfinished turns of these (dead) executors run again: each is taken by
        one process sharing the database (this one, or another). Their turn ids."""
        from dbos import DBOS

        wanted = list(executor_ids)
        if not all(isinstance(e, str) and e for e in wanted):
            raise UsageError("recover(executor_ids): a list of executor ids (str)")
        handles = DBOS._recover_pending_workflows(wanted)
        return [h.workflow_id for h in handles]

    def shutdown(self) -> None:
        """Stop DBOS in this process (its registrations, and this module's, are kept)."""
        from dbos import DBOS

        DBOS.destroy()

    # -- the protocol -----------------------------------------------------------------------

    def bind(self, name: str, body: TurnBody) -> None:
        """Bind `body` under `name`, in this process (see the module)."""
        with _LOCK:
            if name in _BOUND and _BOUND[name] is not body:
                raise UsageError(
                    f"DurableTurns {name!r} are bound in this process already: one name, "
                    "one factory (DBOS recovers a turn by the name it was started with)"
                )
            _BOUND[name] = body

    def unbind(self, name: str) -> None:
        """Forget the turns bound under `name` (a test's, say)."""
        with _LOCK:
            _BOUND.pop(name, None)

    def run_turn(self, name: str, turn_id: str, inputs: Json) -> Json:
        from dbos import SetWorkflowID

        with SetWorkflowID(turn_id):
            return _recorded(functools.partial(_registered()[_TURN], inputs), turn_id)

    async def arun_turn(self, name: str, turn_id: str, inputs: Json) -> Json:
        from dbos import PortableWorkflowError, SetWorkflowID

        try:
            with SetWorkflowID(turn_id):
                return await _registered()[_ATURN](inputs)
        except PortableWorkflowError as exc:
            raise _error(exc, turn_id) from exc

    def step(self, name: str) -> DurableStep:
        from dbos import DBOS

        return _Step(name, DBOS.reserve_step())

    def result(self, turn_id: str, *, timeout: float | None = None) -> Json:
        from dbos import DBOS

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = DBOS.get_workflow_status(turn_id)
            if status is None:
                raise KeyError(f"no durable turn {turn_id!r} in DBOS's database")
            if status.status in _OVER:
                return _recorded(lambda: DBOS.retrieve_workflow(turn_id).get_result(), turn_id)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"the durable turn {turn_id!r} has not finished ({status.status})"
                )
            time.sleep(_POLL)


_OVER = frozenset({"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})


def _recorded(get: Callable[[], Json], turn_id: str) -> Json:
    """`get()`: a turn's output; the error a turn recorded (DBOS's portable form: its class
    name and message) raised as the toolreg error it was, when it was one."""
    from dbos import PortableWorkflowError

    try:
        return get()
    except PortableWorkflowError as exc:
        raise _error(exc, turn_id) from exc


def _error(exc: Any, turn_id: str) -> Exception:
    """A recorded turn's error: one of toolreg's raised again as toolreg raised it
    (`payloads.error_of`), with DBOS's record as its cause; any other as DBOS gives it."""
    if not is_toolreg_error(exc.name):
        return exc  # type: ignore[no-any-return]
    return error_of({"type": exc.name, "message": exc.message}, where(turn_id, "turn"))


_check: type[DurableEngine] = DBOSEngine  # DBOSEngine is a DurableEngine (mypy checks it)
