"""Timing utilities: interleaved batches with medians, fresh-interpreter import times, profiles.

Every timed case is a `Case` whose `batch(n)` runs `n` operations and returns the seconds
they took, measured inside the batch so that set-up (building fresh functions, entering an
event loop) is never counted. `interleave` calibrates each case to a batch of about
`target` seconds, then runs every case once per round, in a new random order each round, and
keeps the per-operation time of each batch; the reported value is the median over rounds.
The garbage collector is off during a batch (as in `timeit`) and runs between rounds.

Two clocks run side by side: "wall" (`perf_counter`) and "cpu" (`process_time`: the CPU time
of every thread of this process). On a shared, loaded VM the CPU clock is the stable one: it
does not count the time the process waits for a core. It does not count idle waits either,
such as a peer's hop to a worker thread, so it flatters peers that make one; the wall clock
counts it.
"""

import asyncio
import cProfile
import gc
import os
import pstats
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

__all__ = [
    "Case",
    "Pair",
    "Stats",
    "async_batch",
    "clocks",
    "fresh_batch",
    "import_times",
    "interleave",
    "interleave_pairs",
    "pair_batch",
    "profile_top",
    "summarize",
    "sync_batch",
]

perf = time.perf_counter
cpu_clock = time.process_time
Batch = Callable[[int], tuple[float, float]]


@dataclass
class Case:
    """One timed operation; `batch(n)` runs it `n` times and returns the elapsed seconds."""

    key: str
    batch: Batch


@dataclass(frozen=True)
class Stats:
    """Per-operation seconds over the rounds: median, quartiles, minimum, and the sample count."""

    median: float
    p25: float
    p75: float
    minimum: float
    rounds: int
    per_batch: int

    def as_dict(self, scale: float = 1e6) -> dict[str, float]:
        return {
            "median": self.median * scale,
            "p25": self.p25 * scale,
            "p75": self.p75 * scale,
            "min": self.minimum * scale,
            "rounds": self.rounds,
            "per_batch": self.per_batch,
        }


def clocks(stats: dict[str, Stats], scale: float = 1e6) -> dict[str, dict[str, float]]:
    """`{"wall": Stats, "cpu": Stats}` as plain dicts, in µs (or ms with scale=1e3)."""
    return {clock: s.as_dict(scale) for clock, s in stats.items()}


def summarize(samples: list[float], per_batch: int = 1) -> Stats:
    ordered = sorted(samples)
    if len(ordered) >= 4:
        q = statistics.quantiles(ordered, n=4)
        p25, p75 = q[0], q[2]
    else:
        p25, p75 = ordered[0], ordered[-1]
    return Stats(statistics.median(ordered), p25, p75, ordered[0], len(ordered), per_batch)


def sync_batch(op: Callable[[], Any]) -> Batch:
    """A batch that calls `op()` n times."""

    def batch(n: int) -> tuple[float, float]:
        wall, cpu = perf(), cpu_clock()
        for _ in range(n):
            op()
        return perf() - wall, cpu_clock() - cpu

    return batch


def fresh_batch(make: Callable[[], Any], op: Callable[[Any], Any]) -> Batch:
    """A batch that calls `op(x)` on n inputs built by `make()` before the clock starts."""

    def batch(n: int) -> tuple[float, float]:
        items = [make() for _ in range(n)]
        wall, cpu = perf(), cpu_clock()
        for item in items:
            op(item)
        return perf() - wall, cpu_clock() - cpu

    return batch


def async_batch(loop: asyncio.AbstractEventLoop, op: Callable[[], Awaitable[Any]]) -> Batch:
    """A batch that awaits `op()` n times inside one `run_until_complete` on `loop`."""

    async def run(n: int) -> tuple[float, float]:
        wall, cpu = perf(), cpu_clock()
        for _ in range(n):
            await op()
        return perf() - wall, cpu_clock() - cpu

    def batch(n: int) -> tuple[float, float]:
        return loop.run_until_complete(run(n))

    return batch


def _timed(case: Case, n: int) -> tuple[float, float]:
    gc.disable()
    try:
        return case.batch(n)
    finally:
        gc.enable()


def calibrate(case: Case, target: float, max_n: int = 100_000) -> int:
    """How many operations make a batch of about `target` seconds (after a warm-up).

    Each size is tried three times and the fastest counts, so that one hiccup (a page
    fault, the process losing its core) cannot shrink the batches to a few operations.
    """
    _timed(case, 2)
    n = 1
    while True:
        elapsed = min(_timed(case, n)[0] for _ in range(3))
        if elapsed >= target / 4 or n >= max_n:
            break
        n = min(max_n, n * 4 if elapsed < target / 50 else n * 2)
    per_op = max(elapsed / n, 1e-9)
    return max(1, min(max_n, round(target / per_op)))


def interleave(
    cases: Iterable[Case], *, rounds: int, target: float, seed: int = 1
) -> dict[str, dict[str, Stats]]:
    """Per case, per clock ("wall", "cpu"): per-operation seconds over interleaved rounds."""
    cases = list(cases)
    sizes = {c.key: calibrate(c, target) for c in cases}
    walls: dict[str, list[float]] = {c.key: [] for c in cases}
    cpus: dict[str, list[float]] = {c.key: [] for c in cases}
    rng = random.Random(seed)
    for _ in range(rounds):
        order = cases[:]
        rng.shuffle(order)
        for case in order:
            n = sizes[case.key]
            wall, cpu = _timed(case, n)
            walls[case.key].append(wall / n)
            cpus[case.key].append(cpu / n)
        gc.collect()
    return {
        key: {"wall": summarize(walls[key], sizes[key]), "cpu": summarize(cpus[key], sizes[key])}
        for key in sizes
    }


# -- paired: a path and its floor, op by op ------------------------------------------------

PairTimes = tuple[tuple[float, float], tuple[float, float]]  # (path wall, cpu), (floor ...)


@dataclass
class Pair:
    """A path and its floor: `batch(n)` runs n of each, alternating, and returns the time of
    each side. Alternating op by op, the two see the same machine: a slow moment slows both,
    so their difference (the path's overhead) is measured far more tightly than as the
    difference of two medians taken seconds apart."""

    key: str
    batch: Callable[[int], PairTimes]


def pair_batch(
    op: Callable[[Any], Any],
    floor: Callable[[], Any],
    *,
    make: Callable[[], Any] = lambda: None,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Callable[[int], PairTimes]:
    """n × (op(make()), floor()), alternating which goes first; with `loop`, both return
    awaitables, awaited inside one `run_until_complete`. `make()` runs before the clock."""

    def tick() -> tuple[float, float]:
        return perf(), cpu_clock()

    async def run_async(items: list[Any]) -> PairTimes:
        path, base = [0.0, 0.0], [0.0, 0.0]
        for i, item in enumerate(items):
            for side in (0, 1) if i % 2 == 0 else (1, 0):
                w, c = tick()
                await (op(item) if side == 0 else floor())
                w, c = perf() - w, cpu_clock() - c
                target = path if side == 0 else base
                target[0] += w
                target[1] += c
        return (path[0], path[1]), (base[0], base[1])

    def batch(n: int) -> PairTimes:
        items = [make() for _ in range(n)]
        if loop is not None:
            return loop.run_until_complete(run_async(items))
        path, base = [0.0, 0.0], [0.0, 0.0]
        for i, item in enumerate(items):
            for side in (0, 1) if i % 2 == 0 else (1, 0):
                w, c = tick()
                if side == 0:
                    op(item)
                else:
                    floor()
                w, c = perf() - w, cpu_clock() - c
                target = path if side == 0 else base
                target[0] += w
                target[1] += c
        return (path[0], path[1]), (base[0], base[1])

    return batch


def interleave_pairs(
    pairs: Iterable[Pair], *, rounds: int, target: float, seed: int = 1
) -> dict[str, dict[str, dict[str, Stats]]]:
    """Per pair: {"path", "floor", "overhead"} -> per clock -> per-operation seconds over
    interleaved rounds (every pair once per round, in a new random order; gc off in a batch).
    "overhead" is the median over rounds of (path - floor) within the same batch."""
    pairs = list(pairs)
    sizes = {}
    for pair in pairs:
        gc.disable()
        try:
            pair.batch(1)  # warm-up
            once = min(sum(side[0] for side in pair.batch(1)) for _ in range(3))
        finally:
            gc.enable()
        sizes[pair.key] = max(1, round(target / max(once, 1e-9)))
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        p.key: {part: {"wall": [], "cpu": []} for part in ("path", "floor", "overhead")}
        for p in pairs
    }
    rng = random.Random(seed)
    for _ in range(rounds):
        order = pairs[:]
        rng.shuffle(order)
        for pair in order:
            n = sizes[pair.key]
            gc.disable()
            try:
                path, base = pair.batch(n)
            finally:
                gc.enable()
            got = samples[pair.key]
            for i, clock in enumerate(("wall", "cpu")):
                got["path"][clock].append(path[i] / n)
                got["floor"][clock].append(base[i] / n)
                got["overhead"][clock].append((path[i] - base[i]) / n)
        gc.collect()
    return {
        key: {
            part: {clock: summarize(values, sizes[key]) for clock, values in clocks.items()}
            for part, clocks in parts.items()
        }
        for key, parts in samples.items()
    }


def _children_cpu() -> float:
    if resource is None:  # not POSIX: no CPU clock for children
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_times(
    statements: dict[str, str], *, reps: int, cwd: str, seed: int = 2
) -> tuple[dict[str, dict[str, Stats]], dict[str, str]]:
    """Per statement, per clock: seconds in a fresh interpreter, net of `python -c pass`;
    and the statements that failed, with the last line of their error.

    Each round runs the baseline and every statement once, in a random order; the net time
    of a statement in a round is its time minus that round's baseline. The "cpu" clock is
    the child's user + system time (POSIX).
    """
    env = dict(os.environ, PYTHONPATH=cwd + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # Installed packages come with bytecode; so must the checkout, or every toolreg import
    # would compile its sources (~35 ms here). The warm-up run below writes the .pyc files.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def once(stmt: str) -> tuple[float, float, str]:
        wall, cpu = perf(), _children_cpu()
        done = subprocess.run(
            [sys.executable, "-c", stmt], cwd=cwd, env=env, capture_output=True, text=True
        )
        error = "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]
        return perf() - wall, _children_cpu() - cpu, error

    code = {"": "pass"}
    failed: dict[str, str] = {}
    for label, stmt in {"": "pass", **statements}.items():  # warm the caches; drop failures
        error = once(stmt)[2]
        if error:
            failed[label] = f"failed: {error}"[:200]
        else:
            code[label] = stmt
    if "" in failed:
        raise RuntimeError(f"`python -c pass` failed: {failed['']}")
    labels = list(code)
    net: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in labels[1:]}
    rng = random.Random(seed)
    for _ in range(reps):
        rng.shuffle(labels)
        took = {label: once(code[label]) for label in labels}
        for label, clocks in net.items():
            clocks["wall"].append(took[label][0] - took[""][0])
            clocks["cpu"].append(took[label][1] - took[""][1])
    stats = {k: {c: summarize(v) for c, v in clocks.items()} for k, clocks in net.items()}
    return stats, failed


def profile_top(op: Callable[[], Any], *, n: int, top: int, only: str = "") -> list[dict[str, Any]]:
    """cProfile `op` run `n` times; the `top` functions by own time (optionally only paths
    containing `only`), each with its share of the total, own and cumulative µs per call of op.
    """
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        op()
    prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values()) or 1e-12
    rows = []
    for (path, line, func), (_cc, calls, tottime, cumtime, _callers) in raw.items():
        if only and only not in path:
            continue
        rows.append(
            {
                "function": f"{_short(path)}:{line}:{func}",
                "share": tottime / total,
                "own_us": tottime / n * 1e6,
                "cum_us": cumtime / n * 1e6,
                "calls_per_op": calls / n,
            }
        )
    rows.sort(key=lambda r: r["own_us"], reverse=True)
    return rows[:top]


def _short(path: str) -> str:
    for marker in ("site-packages" + os.sep, os.sep + "lib" + os.sep + "python"):
        if marker in path:
            return path.split(marker, 1)[1]
    cwd = os.getcwd() + os.sep
    return path[len(cwd) :] if path.startswith(cwd) else path
