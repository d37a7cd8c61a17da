"""A crash kit: run a conversation turn in a child process, kill it (SIGKILL) at a named
point, run it again in a new process, and count what ran.

```python
from toolreg.testing import call, text, tool_calls
from toolreg.testing.crash import CrashKit, while_tool_runs

kit = CrashKit("myapp.crash_scenarios:refund", workdir=tmp_path,
               model=[tool_calls(call("charge", {"amount": 5}, id="c1")), text("Refunded.")])
report = kit.run(while_tool_runs("charge"))
assert report.crashed and report.runs["charge"] == 2      # it ran again after the crash
assert len(set(report.keys["charge"])) == 1                 # with the same idempotency key
```

The scenario, `"module:function"`, is a function of a `CrashRun` that does one turn the
way the application does, and returns its `Reply` (or an awaitable of one):
`run.model_url` is the model endpoint (the kit's `ScriptedServer`), `run.settings` what the
test gave, `run.restarted` whether a crash came before; it passes its registry through
`run.tools(registry)` (which counts the runs of every tool and holds the points "while a
tool runs" and "after it returns") and its state store through `run.store(store)` (for
"before the save"). After a crash the kit runs the scenario again, `restarted=True`: the
application's restart (a durable turn recovered and waited for, a request retried).

Points (`CrashPoint`):

- `after_model_call(n)`: the n-th model answer of the process is in (a durable turn's is
  recorded), before any of its calls runs;
- `during_model_call(n)`: the n-th model request reached the endpoint, which kills the
  child before it answers;
- `while_tool_runs(name, n)`: the n-th run of the tool has begun, not returned;
- `after_tool_returns(name, n)`: the tool returned, before the conversation took its result
  (a durable turn had not recorded it);
- `before_save(n)`: the n-th save of the store is about to be written;
- `NO_CRASH`: the turn runs to its end once.

The model is scripted *by round* (`model=[...]`: the answer to a request whose history
holds k assistant answers is the k-th), so that a request made again after a crash gets
the answer the first got. The report counts, over every process: each tool's runs (a run
is counted when the tool's body begins), their idempotency keys, the model requests, and
says what the last process returned or raised. Children are forked from a server that has
imported toolreg, the SDKs and the scenario's module once (`multiprocessing`'s
"forkserver"): a child starts in milliseconds, not seconds.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib
import inspect
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import UsageError
from ..observe import OBSERVER
from ..registry import ToolRegistry
from ..result import ToolResult
from .server import ScriptedServer
from .turns import Turn

__all__ = [
    "NO_CRASH",
    "CrashKit",
    "CrashPoint",
    "CrashReport",
    "CrashRun",
    "after_model_call",
    "after_tool_returns",
    "before_save",
    "by_round",
    "during_model_call",
    "while_tool_runs",
]

PointKind = Literal["none", "after_model", "during_model", "tool", "after_tool", "save"]


@dataclass(frozen=True, slots=True)
class CrashPoint:
    """Where the first child is killed (build one with the module's functions)."""

    kind: PointKind
    nth: int = 1
    tool: str | None = None

    def __str__(self) -> str:
        shown = {
            "none": "no crash",
            "after_model": f"after model call {self.nth}",
            "during_model": f"during model call {self.nth}",
            "tool": f"while {self.tool} runs (run {self.nth})",
            "after_tool": f"after {self.tool} returns (run {self.nth})",
            "save": f"before save {self.nth}",
        }
        return shown[self.kind]


NO_CRASH = CrashPoint("none")
"""No crash: the scenario runs once, in one child process, to its end (a baseline)."""


def _nth(nth: int, what: str) -> int:
    if isinstance(nth, bool) or not isinstance(nth, int) or nth < 1:
        raise UsageError(f"{what}: n is a count from 1, not {nth!r}")
    return nth


def after_model_call(n: int = 1) -> CrashPoint:
    """Killed when the n-th model answer of the process is in (recorded, in a durable
    turn), before any call it asks for runs."""
    return CrashPoint("after_model", _nth(n, "after_model_call"))


def during_model_call(n: int = 1) -> CrashPoint:
    """Killed by the endpoint when the n-th model request reaches it, before it answers."""
    return CrashPoint("during_model", _nth(n, "during_model_call"))


def while_tool_runs(tool: str, n: int = 1) -> CrashPoint:
    """Killed while the n-th run of `tool` runs (its body began and has not returned)."""
    return CrashPoint("tool", _nth(n, "while_tool_runs"), _tool_name(tool))


def after_tool_returns(tool: str, n: int = 1) -> CrashPoint:
    """Killed when the n-th run of `tool` returned, before the conversation has its result."""
    return CrashPoint("after_tool", _nth(n, "after_tool_returns"), _tool_name(tool))


def before_save(n: int = 1) -> CrashPoint:
    """Killed just before the n-th save of the state store (`CrashRun.store`)."""
    return CrashPoint("save", _nth(n, "before_save"))


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, str) or not tool:
        raise UsageError(f"a crash point names a tool by its name (a str), not {tool!r}")
    return tool


def by_round(turns: Sequence[Turn]) -> Callable[[dict[str, Any]], Turn]:
    """A `ScriptedServer` answer that depends only on the request: the k-th of `turns` for a
    request whose history holds k assistant answers (the last one past the end), so that a
    request made again (after a crash) gets the same answer. Chat Completions and
    Anthropic Messages histories (`role: assistant`), and the Responses API's (an output
    item run: `function_call` or an assistant `message`).

    Raises:
        UsageError: `turns` is empty, or holds something that is not a `Turn`."""
    script = list(turns)
    if not script or not all(isinstance(t, Turn) for t in script):
        raise UsageError("by_round(turns): a non-empty list of Turns (text, tool_calls, ...)")

    def answer(body: dict[str, Any]) -> Turn:
        rounds = _answers_in(body)
        return script[min(rounds, len(script) - 1)]

    return answer


def _answers_in(body: Mapping[str, Any]) -> int:
    messages = body.get("messages")
    if isinstance(messages, list):
        return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    items = body.get("input")
    count, inside = 0, False
    for item in items if isinstance(items, list) else []:
        said = isinstance(item, dict) and (
            item.get("type") == "function_call" or item.get("role") == "assistant"
        )
        if said and not inside:
            count += 1
        inside = said
    return count


# -- what the child sees ------------------------------------------------------------------


class CrashRun:
    """What a scenario gets in the child process (see the module); the kit makes it.

    Args:
        point: where this process is killed (`NO_CRASH` once restarted).
        settings: the test's `settings=` (JSON), as `run.settings`.
        model_url: the scripted model's OpenAI base URL, as `run.model_url`.
        restarted: whether a crash came before (this is the process that finishes).
        crashed_file: a file that exists once the first process is dead
            (`wait_for_crash`).
    """

    def __init__(
        self,
        point: CrashPoint,
        settings: dict[str, Any],
        model_url: str,
        restarted: bool,
        crashed_file: str = "",
    ) -> None:
        self.point = point if not restarted else NO_CRASH
        self.settings = settings
        """The `settings=` the test gave the kit (JSON)."""
        self.model_url = model_url
        """The model endpoint's OpenAI base URL (`http://127.0.0.1:PORT/v1`)."""
        self.restarted = restarted
        """False in the first process; True in the one that runs after the crash."""
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._crashed_file = crashed_file

    def wait_for_crash(self, timeout: float = 60.0) -> None:
        """In the process that finishes the turn: return once the first process is dead
        (at once after a restart; a standby process, started beside the first, waits).

        Raises:
            TimeoutError: the first process is still alive after `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        while not os.path.exists(self._crashed_file):
            if time.monotonic() > deadline:
                raise TimeoutError("CrashRun.wait_for_crash: the first process did not die")
            time.sleep(0.01)

    def tools(self, registry: ToolRegistry) -> ToolRegistry:
        """Watch every tool of `registry` (in place): each run is counted with its
        idempotency key, and the points `while_tool_runs` / `after_tool_returns` hold.
        The tools' definitions do not change (nor their fingerprints)."""
        for tool in registry.tools():
            replaced: dict[str, Any] = {"function": self._watched(tool.name, tool.function)}
            if tool.async_function is not None:
                replaced["async_function"] = self._watched(tool.name, tool.async_function)
            registry.add(dataclasses.replace(tool, **replaced), replace=True)
        return registry

    def store(self, store: Any) -> Any:
        """`store`, its saves watched for the point `before_save`."""
        return _WatchedStore(store, self)

    def _watched(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def watched_async(*args: Any, **kwargs: Any) -> Any:
                self._tool_event("start", name)
                value = await fn(*args, **kwargs)
                self._tool_event("end", name)
                return value

            return watched_async

        @functools.wraps(fn)
        def watched(*args: Any, **kwargs: Any) -> Any:
            self._tool_event("start", name)
            value = fn(*args, **kwargs)
            self._tool_event("end", name)
            return value

        return watched

    def _count(self, kind: str, name: str = "") -> int:
        with self._lock:
            n = self._counts[(kind, name)] = self._counts.get((kind, name), 0) + 1
        return n

    def _tool_event(self, event: str, name: str) -> None:
        call_id = _CALL.get()
        key = _KEYS.get(call_id) if call_id is not None else None
        _note({"ev": event, "tool": name, "call_id": call_id, "key": key})
        n = self._count(event, name)
        point = self.point
        hit = (event, point.kind) in (("start", "tool"), ("end", "after_tool"))
        if hit and point.tool == name and point.nth == n:
            _crash(point)

    def _model_answered(self) -> None:
        n = self._count("model")
        if self.point.kind == "after_model" and self.point.nth == n:
            _crash(self.point)

    def _saving(self) -> None:
        n = self._count("save")
        if self.point.kind == "save" and self.point.nth == n:
            _crash(self.point)


class _WatchedStore:
    """A state store whose saves are counted (sync and async: whichever it has)."""

    def __init__(self, store: Any, run: CrashRun) -> None:
        self._store = store
        self._run = run

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def load(self, id: str) -> Any:
        return self._store.load(id)

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        self._run._saving()
        version: int = self._store.save(id, state, expected_version)
        return version

    def claim(self, id: str, token: str, ttl: float) -> bool:
        return bool(self._store.claim(id, token, ttl))

    def delete(self, id: str) -> bool:
        return bool(self._store.delete(id))

    async def aload(self, id: str) -> Any:
        return await self._store.aload(id)

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        self._run._saving()
        version: int = await self._store.asave(id, state, expected_version)
        return version

    async def aclaim(self, id: str, token: str, ttl: float) -> bool:
        return bool(await self._store.aclaim(id, token, ttl))

    async def adelete(self, id: str) -> bool:
        return bool(await self._store.adelete(id))


_JOURNAL: list[int] = []  # the child's journal file descriptor (one per process)
_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolreg_crash_call", default=None
)
_KEYS: dict[str, str] = {}  # call id -> idempotency key, from the turns' ToolCallReady events


def _note(entry: dict[str, Any]) -> None:
    """One line of the journal: written whole (O_APPEND), unbuffered, before any kill."""
    entry = {**entry, "pid": os.getpid()}
    line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode()
    if _JOURNAL:
        os.write(_JOURNAL[0], line)


def _crash(point: CrashPoint) -> None:
    _note({"ev": "crash", "point": str(point)})
    os.kill(os.getpid(), signal.SIGKILL)


class _Observer:
    """The child's observer (toolreg's instrumentation slot): it learns each call's key
    from the turn's events, which call a dispatch runs, and when a model answer is in."""

    def __init__(self, run: CrashRun) -> None:
        self.run = run

    def tool_call(self, name: object, call_id: str | None, tools: Any) -> _Trace:
        _CALL.set(call_id)  # in the dispatch's own context: the tool runs in it (or a copy)
        return _Trace()

    def model_call(self, request: Any, client: Any, provider: str = "openai") -> _ModelTrace:
        return _ModelTrace(self.run)

    def turn(self, name: str, model: str, provider: str = "openai") -> _TurnTrace:
        return _TurnTrace()

    def guardrail(self, stage: str, tool: str, guardrail: str, verdict: str) -> None:
        pass


class _Trace:
    def end(self, result: ToolResult) -> None:
        pass

    def abort(self, error: BaseException) -> None:
        pass


class _ModelTrace:
    def __init__(self, run: CrashRun) -> None:
        self.run = run

    def end(self, response: Any) -> None:
        self.run._model_answered()

    def fail(self, error: BaseException) -> None:
        pass

    def parent(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def event(self, event: object) -> None:
        _TurnTrace().event(event)


class _TurnTrace:
    def end(self, error: BaseException | None) -> None:
        pass

    def parent(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def event(self, event: object) -> None:
        call = getattr(event, "call", None)
        key = getattr(call, "idempotency_key", None)
        if call is not None and key is not None and call.call_id is not None:
            _KEYS[call.call_id] = key


def _child(config: dict[str, Any]) -> None:
    """A child process: run the scenario once, note what it returned, exit."""
    fd = os.open(config["journal"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _JOURNAL[:] = [fd]
    point = CrashPoint(config["kind"], config["nth"], config["tool"])
    run = CrashRun(
        point, config["settings"], config["model_url"], config["restarted"], config["crashed"]
    )
    OBSERVER.current = _Observer(run)
    _note({"ev": "begin", "restarted": run.restarted})
    try:
        scenario = _scenario(config["scenario"])
        outcome = scenario(run)
        if inspect.isawaitable(outcome):
            import asyncio

            async def awaited() -> Any:
                return await outcome

            outcome = asyncio.run(awaited())
        _note({"ev": "done", "reply": _reply_json(outcome)})
    except BaseException as exc:
        _note({"ev": "error", "error": f"{type(exc).__name__}: {exc}"})
        os._exit(1)
    os._exit(0)  # no interpreter teardown: threads of engines left running do not hold it


def _scenario(target: str) -> Callable[[CrashRun], Any]:
    module, _, name = target.partition(":")
    found = getattr(importlib.import_module(module), name, None)
    if not callable(found):
        raise UsageError(f"CrashKit: {target!r} is not a function (module:function)")
    return found  # type: ignore[no-any-return]


def _reply_json(reply: Any) -> Any:
    """What a scenario returned, as JSON: a `Reply`'s text, stop reason and results."""
    if not hasattr(reply, "tool_results"):
        return None if reply is None else repr(reply)
    return {
        "text": reply.text,
        "stop_reason": reply.stop_reason,
        "rounds": reply.rounds,
        "messages": len(reply.messages),
        "tool_results": [
            {
                "tool": r.tool_name,
                "call_id": r.call_id,
                "ok": r.ok,
                "content": r.content,
                "outcome": r.outcome,
                "key": r.idempotency_key,
            }
            for r in reply.tool_results
        ],
    }


# -- the parent -----------------------------------------------------------------------------


@dataclass(slots=True)
class CrashReport:
    """What happened, over every process of one `CrashKit.run`."""

    point: CrashPoint
    crashed: bool
    """Whether the first process was killed at the point (else it finished, or failed)."""
    runs: dict[str, int]
    """Tool name -> how many times its body began, in every process."""
    keys: dict[str, list[str | None]]
    """Tool name -> the idempotency key of each run, in order."""
    returned: dict[str, int]
    """Tool name -> how many of its runs returned."""
    model_requests: int
    """Requests the model endpoint received (one the crash cut short included)."""
    reply: Any
    """What the last process's scenario returned (`text`, `stop_reason`, `tool_results`
    of a `Reply`), or None."""
    error: str | None
    """What the last process raised (its type and message), or None."""
    processes: int
    journal: list[dict[str, Any]] = field(repr=False)

    def ran_once_each(self) -> bool:
        """Every tool that ran ran exactly once."""
        return all(n == 1 for n in self.runs.values())


class CrashKit:
    """Runs a scenario in child processes, crashing the first at a point (see the module).

    Args:
        scenario: `"module:function"`, the function of a `CrashRun` that does the turn.
        workdir: a directory for the journal (one file per run).
        model: the model's answers by round (`Turn`s: `text`, `tool_calls`, ...; see
            `by_round`), served by a `ScriptedServer` the kit runs.
        settings: JSON the scenario reads as `run.settings` (database URLs, ids, ...).
        preload: modules the fork server imports once (the scenario's module, toolreg's
            conversation, the SDKs and `dbos` when installed are preloaded already).
        timeout: seconds a child may take.

    Raises:
        UsageError: a child process cannot be forked on this platform ("forkserver").
    """

    def __init__(
        self,
        scenario: str,
        *,
        workdir: str | os.PathLike[str],
        model: Sequence[Turn],
        settings: Mapping[str, Any] | None = None,
        preload: Sequence[str] = (),
        timeout: float = 60.0,
    ) -> None:
        if "forkserver" not in multiprocessing.get_all_start_methods():
            raise UsageError("CrashKit needs the 'forkserver' start method (POSIX)")
        module, _, name = scenario.partition(":")
        if not module or not name:
            raise UsageError(f"CrashKit(scenario={scenario!r}): give it as 'module:function'")
        self.scenario = scenario
        self.workdir = Path(workdir)
        self.answer = by_round(model)
        self.settings = dict(settings or {})
        self.timeout = timeout
        self._runs = 0
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload([*_PRELOAD, module, *preload])

    def run(
        self, point: CrashPoint = NO_CRASH, *, standby: bool = False, **settings: Any
    ) -> CrashReport:
        """Run the scenario in a child, killed at `point`; if it was, run it again in a new
        child (`restarted=True`). With `standby`, that second child starts first, beside
        the first one, and finishes the turn when the first dies (`wait_for_crash`): two
        processes sharing one database. `settings` add to the kit's for this run."""
        self._runs += 1
        journal = self.workdir / f"crash-journal-{os.getpid()}-{id(self):x}-{self._runs}.jsonl"
        crashed_file = Path(f"{journal}.crashed")
        journal.unlink(missing_ok=True)
        crashed_file.unlink(missing_ok=True)
        config = {
            "scenario": self.scenario,
            "journal": str(journal),
            "crashed": str(crashed_file),
            "kind": point.kind,
            "nth": point.nth,
            "tool": point.tool,
            "settings": {**self.settings, **settings},
        }
        children: list[Any] = []
        kill_at = point.nth if point.kind == "during_model" else None
        with ScriptedServer([self._killing(children, kill_at)] * _MAX_REQUESTS) as server:
            second = {**config, "model_url": server.base_url, "restarted": True}
            waiting = self._spawn(second) if standby else None
            try:
                first = self._start(
                    children, {**config, "model_url": server.base_url, "restarted": False}
                )
                crashed = first.exitcode == -signal.SIGKILL
                if crashed:
                    crashed_file.touch()
                    if waiting is None:
                        self._start(children, second)
                    else:
                        self._joined(waiting)
                elif waiting is not None:  # nothing to finish: the standby is not needed
                    waiting.kill()
                    waiting.join()
            finally:
                if waiting is not None and waiting.is_alive():
                    waiting.kill()
                    waiting.join()
            processes = 1 + (crashed or waiting is not None)
            requests = len(server.requests)
        return _report(point, crashed, processes, requests, journal)

    def _killing(
        self, children: list[Any], kill_at: int | None
    ) -> Callable[[dict[str, Any]], Turn]:
        """The model's answer; the request `kill_at` kills the first child first."""
        seen = [0]

        def answer(body: dict[str, Any]) -> Turn:
            seen[0] += 1
            if kill_at is not None and seen[0] == kill_at and len(children) == 1:
                child = children[0]
                if child.pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child.pid, signal.SIGKILL)
                    child.join(self.timeout)
            return self.answer(body)

        return answer

    def _spawn(self, config: dict[str, Any]) -> Any:
        child = self._context.Process(target=_child, args=(config,), daemon=True)
        child.start()
        return child

    def _start(self, children: list[Any], config: dict[str, Any]) -> Any:
        child = self._context.Process(target=_child, args=(config,), daemon=True)
        children.append(child)
        child.start()
        return self._joined(child)

    def _joined(self, child: Any) -> Any:
        child.join(self.timeout)
        if child.is_alive():
            child.kill()
            child.join()
            raise TimeoutError(f"CrashKit: {self.scenario} ran over {self.timeout} s")
        return child


_MAX_REQUESTS = 200  # model requests one run may make
# imported once by the fork server (a module that is not installed is skipped): toolreg's
# conversation, the SDK and its HTTP stack, DBOS with its SQLite and PostgreSQL drivers
_PRELOAD = (
    "toolreg.testing.crash",
    "toolreg.conversation",
    "toolreg.stores",
    "openai",
    "openai.resources",
    "openai.lib.streaming",
    "httpx",
    "anyio",
    "h11",
    "jiter",
    "truststore",
    "dbos",
    "toolreg.durable.dbos",
    "sqlalchemy.dialects.sqlite",
    "sqlalchemy.dialects.postgresql",
    "psycopg",
)


def _report(
    point: CrashPoint, crashed: bool, processes: int, requests: int, journal: Path
) -> CrashReport:
    entries = [json.loads(line) for line in _lines(journal)]
    runs: dict[str, int] = {}
    keys: dict[str, list[str | None]] = {}
    returned: dict[str, int] = {}
    reply, error = None, None
    for entry in entries:
        event = entry.get("ev")
        if event == "start":
            runs[entry["tool"]] = runs.get(entry["tool"], 0) + 1
            keys.setdefault(entry["tool"], []).append(entry.get("key"))
        elif event == "end":
            returned[entry["tool"]] = returned.get(entry["tool"], 0) + 1
        elif event == "done":
            reply, error = entry.get("reply"), None
        elif event == "error":
            reply, error = None, entry.get("error")
    noted = point.kind == "during_model" or any(e.get("ev") == "crash" for e in entries)
    return CrashReport(
        point, crashed and noted, runs, keys, returned, requests, reply, error, processes, entries
    )


def _lines(path: Path) -> Iterator[str]:
    if not path.exists():
        return iter(())
    return iter([line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()])
