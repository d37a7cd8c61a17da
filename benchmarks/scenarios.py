"""The toolreg-only scenarios: a concurrent driver round, scale, and profiles.

- concurrency: one `Conversation` round in which the scripted model asks for 8 calls of a
  tool that sleeps 200 ms, against `toolreg.testing.ScriptedServer` (real HTTP, real
  `openai` client); wall time of `send()`, sync tool in `Conversation` and async tool in
  `AsyncConversation`.
- scale: 10 against N registered tools (default 10,000): dispatch, first and cached export,
  memory kept per tool (tracemalloc around registering the N tools).
- profiles: cProfile's top functions of toolreg's registration and dispatch.
"""

import asyncio
import gc
import time
import tracemalloc
from typing import Any

import baselines
import corpus
import measure

__all__ = ["concurrency", "profiles", "scale"]


def _once(op: Any) -> tuple[float, float]:
    gc.disable()  # as in every timed batch
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        op()
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        gc.enable()


def _check(reply: Any) -> None:
    if reply.text != "done" or not all(r.ok for r in reply.tool_results):
        raise RuntimeError(f"the scripted round went wrong: {reply}")


def concurrency(cfg: dict[str, Any]) -> dict[str, Any]:
    import toolreg
    from toolreg.testing import ScriptedServer, call, text, tool_calls

    sync_reg, async_reg = toolreg.ToolRegistry(), toolreg.ToolRegistry()

    @sync_reg.register_tool(name="sleepy")
    def sleepy(i: int) -> str:
        """Sleep 200 ms, then answer.

        Args:
            i: Call number.
        """
        time.sleep(0.2)
        return f"slept {i}"

    @async_reg.register_tool(name="sleepy")
    async def asleepy(i: int) -> str:
        """Sleep 200 ms without blocking, then answer.

        Args:
            i: Call number.
        """
        await asyncio.sleep(0.2)
        return f"slept {i}"

    def script() -> list[Any]:
        return [tool_calls(*[call("sleepy", {"i": i}) for i in range(8)]), text("done")]

    def sync_round() -> float:
        with ScriptedServer(script()) as server:
            chat = toolreg.Conversation(server.client(), server.model, registry=sync_reg)
            start = time.perf_counter()
            reply = chat.send("go")
            took = time.perf_counter() - start
        _check(reply)
        return took

    async def async_round() -> float:
        with ScriptedServer(script()) as server:
            async with server.async_client() as client:
                chat = toolreg.AsyncConversation(client, server.model, registry=async_reg)
                start = time.perf_counter()
                reply = await chat.send("go")
                took = time.perf_counter() - start
        _check(reply)
        return took

    runs = {
        "Conversation, 8 × time.sleep(0.2)": [],
        "AsyncConversation, 8 × asyncio.sleep(0.2)": [],
    }
    for _ in range(cfg["concurrency_runs"]):
        a, b = runs.values()
        a.append(sync_round())
        b.append(asyncio.run(async_round()))
    rows = [{"label": k, "wall": measure.summarize(v).as_dict(1e3)} for k, v in runs.items()]
    return {"rows": rows}


def scale(cfg: dict[str, Any]) -> dict[str, Any]:
    import toolreg

    big_n = cfg["scale_n"]

    def build(n: int) -> list[Any]:
        return [
            corpus.fresh_named(corpus.TOOLS[i % 6], f"{corpus.TOOLS[i % 6].__name__}_{i}")
            for i in range(n)
        ]

    def registry(fns: list[Any]) -> Any:
        reg = toolreg.ToolRegistry()
        for fn in fns:
            reg.register_tool(fn)
        return reg

    small = registry(build(10))
    fns = build(big_n)  # allocated before tracing: only what registration keeps is counted
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    big = registry(fns)
    per_tool = (tracemalloc.get_traced_memory()[0] - before) / big_n
    tracemalloc.stop()
    del fns

    args = corpus.CALLS["get_weather"]
    cases = []
    for key, reg in (("10", small), ("big", big)):
        call = lambda r=reg: r.dispatch_tool("get_weather_0", args)  # noqa: E731
        cases.append(measure.Case(f"dispatch|{key}", measure.sync_batch(call)))
        cases.append(measure.Case(f"cached|{key}", measure.sync_batch(reg.get_tools)))
    stats = measure.interleave(cases, rounds=cfg["rounds"], target=cfg["target"])

    def first_export(reg: Any, reps: int) -> dict[str, measure.Stats]:
        took = []
        for _ in range(reps):
            tool = reg.unregister(reg.names()[0])  # any change empties the export cache
            reg.add(tool)
            took.append(_once(reg.get_tools))
        return {c: measure.summarize([t[i] for t in took]) for i, c in enumerate(("wall", "cpu"))}

    gc.collect()
    first_export(small, 5)  # warm-up
    first = {"10": first_export(small, 50), "big": first_export(big, cfg["export_reps"])}
    return {
        "n": big_n,
        "bytes_per_tool": per_tool,
        "dispatch": {k: measure.clocks(stats[f"dispatch|{k}"]) for k in ("10", "big")},
        "export_first": {k: measure.clocks(v) for k, v in first.items()},
        "export_cached": {k: measure.clocks(stats[f"cached|{k}"]) for k in ("10", "big")},
    }


def profiles(cfg: dict[str, Any]) -> dict[str, Any]:
    """cProfile's top functions (own time) of toolreg's paths, per operation, whole corpus."""
    import toolreg

    n = 600 if cfg["quick"] else 6000
    reg = toolreg.ToolRegistry()
    for tool in corpus.TOOLS:
        reg.register_tool(corpus.fresh(tool))
    register = baselines.toolreg_registration()[0].register
    fresh = iter([corpus.fresh(corpus.TOOLS[i % 6]) for i in range(n)])  # built before profiling
    calls = [(fn.__name__, corpus.CALLS[fn.__name__]) for fn in corpus.TOOLS] * n
    pending = iter(calls)
    return {
        "registration": measure.profile_top(lambda: register(next(fresh)), n=n, top=15),
        "dispatch": measure.profile_top(
            lambda: reg.dispatch_tool(*next(pending)), n=len(calls), top=15
        ),
    }
