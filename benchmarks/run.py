"""toolreg against its peers, in one run: `python benchmarks/run.py [--quick] [--json]`.

Sections: registration, dispatch, import, concurrency, scale (see benchmarks/README.md).
Everything is reported as a median of interleaved batches and as a ratio against a
baseline measured in the same run. `--quick` is a smoke run of a few seconds (toolreg and
the floors only, unless `--peers` names some); `--profile` adds cProfile's top functions
of toolreg's registration and dispatch.
"""

import argparse
import asyncio
import json
import os
import platform
import sys
import time
import tracemalloc
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [p for p in (HERE, ROOT) if p not in sys.path[:2]]  # this checkout's toolreg

import corpus  # noqa: E402
import measure  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402

SECTIONS = ("registration", "dispatch", "import", "concurrency", "scale")


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:160]


def _same(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def _clocks(stats: dict[str, measure.Stats], scale: float = 1e6) -> dict[str, Any]:
    return {clock: s.as_dict(scale) for clock, s in stats.items()}


def _once(op: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    op()
    return time.perf_counter() - wall, time.process_time() - cpu


def _path_result(path: Any, stats: dict[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    per_tool: dict[str, Any] = {}
    for fn in corpus.TOOLS:
        key = f"{path.label}|{fn.__name__}"
        per_tool[fn.__name__] = _clocks(stats[key]) if key in stats else errors[key]
    return {"label": path.label, "kind": path.kind, "note": path.note, "per_tool": per_tool}


def registration(selected: list[str], cfg: dict[str, Any]) -> dict[str, Any]:
    paths, skipped = peers.registration_paths(selected)
    cases, errors = [], {}
    for path in paths:
        for fn in corpus.TOOLS:
            key = f"{path.label}|{fn.__name__}"
            try:
                path.register(corpus.fresh(fn))
            except Exception as exc:
                errors[key] = f"unsupported: {_error(exc)}"
                continue
            make = lambda fn=fn: corpus.fresh(fn)  # noqa: E731
            cases.append(measure.Case(key, measure.fresh_batch(make, path.register)))
    stats = measure.interleave(cases, rounds=cfg["rounds"], target=cfg["target"])
    return {"paths": [_path_result(p, stats, errors) for p in paths], "skipped": skipped}


def dispatch(selected: list[str], cfg: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.new_event_loop()
    fns = [corpus.fresh(fn) for fn in corpus.TOOLS]
    paths, skipped = peers.dispatch_paths(fns, selected, loop)
    cases, errors, notes = [], {}, {}
    for path in paths:
        for fn in fns:
            name, args = fn.__name__, corpus.CALLS[fn.__name__]
            key = f"{path.label}|{name}"
            if path.acall is not None:
                acall = path.acall
                op = lambda a=acall, n=name, s=args: loop.run_until_complete(a(n, s))  # noqa: E731
                batch = measure.async_batch(loop, lambda a=acall, n=name, s=args: a(n, s))
            else:
                op = lambda c=path.call, n=name, s=args: c(n, s)  # noqa: E731
                batch = measure.sync_batch(op)
            try:
                got = op()
            except Exception as exc:
                errors[key] = f"failed: {_error(exc)}"
                continue
            if not _same(peers.render(got), peers.render(fn(**json.loads(args)))):
                notes[key] = f"result differs: {got[:60]!r}"
            cases.append(measure.Case(key, batch))
    stats = measure.interleave(cases, rounds=cfg["rounds"], target=cfg["target"])
    loop.close()
    out = [_path_result(p, stats, errors) for p in paths]
    return {"paths": out, "skipped": skipped, "notes": notes}


def imports(selected: list[str], cfg: dict[str, Any]) -> dict[str, Any]:
    labels = ["toolreg", *(d for d in selected if peers.installed(d))]
    stmts = {label: peers.IMPORTS[label] for label in labels}
    stats = measure.import_times(stmts, reps=cfg["import_reps"], cwd=ROOT)
    skipped = {d: "not installed" for d in selected if d not in labels}
    rows = [{"label": k, "stmt": stmts[k], **_clocks(v, 1e3)} for k, v in stats.items()]
    return {"rows": rows, "skipped": skipped}


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
        assert reply.text == "done" and all(r.ok for r in reply.tool_results), reply
        return took

    async def async_round() -> float:
        with ScriptedServer(script()) as server:
            async with server.async_client() as client:
                chat = toolreg.AsyncConversation(client, server.model, registry=async_reg)
                start = time.perf_counter()
                reply = await chat.send("go")
                took = time.perf_counter() - start
        assert reply.text == "done" and all(r.ok for r in reply.tool_results), reply
        return took

    runs = {"Conversation, 8 × time.sleep(0.2)": [], "AsyncConversation, 8 × asyncio.sleep(0.2)": []}
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

    def registry(fns: list[Any]) -> tuple[Any, float]:
        reg = toolreg.ToolRegistry()
        start = time.perf_counter()
        for fn in fns:
            reg.register_tool(fn)
        return reg, time.perf_counter() - start

    small, _ = registry(build(10))
    big, reg_s = registry(build(big_n))
    fns = build(big_n)  # allocated before tracing: only what registration keeps is counted
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept, _ = registry(fns)
    per_tool = (tracemalloc.get_traced_memory()[0] - before) / big_n
    tracemalloc.stop()
    del kept, fns

    def first_export(reg: Any, reps: int) -> dict[str, measure.Stats]:
        took = []
        for _ in range(reps):
            tool = reg.unregister(reg.names()[0])  # any change empties the export cache
            reg.add(tool)
            took.append(_once(reg.get_tools))
        return {c: measure.summarize([t[i] for t in took]) for i, c in enumerate(("wall", "cpu"))}

    first_export(small, 5)  # warm-up
    first = {"10": first_export(small, 50), "big": first_export(big, cfg["export_reps"])}
    args = corpus.CALLS["get_weather"]
    cases = [
        measure.Case("dispatch|10", measure.sync_batch(lambda: small.dispatch_tool("get_weather_0", args))),
        measure.Case("dispatch|big", measure.sync_batch(lambda: big.dispatch_tool("get_weather_0", args))),
        measure.Case("cached|10", measure.sync_batch(small.get_tools)),
        measure.Case("cached|big", measure.sync_batch(big.get_tools)),
    ]  # fmt: skip
    stats = measure.interleave(cases, rounds=cfg["rounds"], target=cfg["target"])
    return {
        "n": big_n,
        "register_us_per_tool": reg_s / big_n * 1e6,
        "bytes_per_tool": per_tool,
        "dispatch": {k: _clocks(stats[f"dispatch|{k}"]) for k in ("10", "big")},
        "export_first": {k: _clocks(v) for k, v in first.items()},
        "export_cached": {k: _clocks(stats[f"cached|{k}"]) for k in ("10", "big")},
    }


def profiles(cfg: dict[str, Any]) -> dict[str, Any]:
    import toolreg

    fn = corpus.TOOLS[1]  # record_expense: five parameters, an optional, a docstring
    reg = toolreg.ToolRegistry()
    for tool in corpus.TOOLS:
        reg.register_tool(corpus.fresh(tool))
    args = corpus.CALLS[fn.__name__]
    register = peers.registration_paths([])[0][0].register
    n = 300 if cfg["quick"] else 3000
    return {
        "registration": measure.profile_top(lambda: register(corpus.fresh(fn)), n=n, top=15),
        "dispatch": measure.profile_top(
            lambda: reg.dispatch_tool(fn.__name__, args), n=n * 3, top=15
        ),
    }


def configure(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    cfg = {
        "quick": quick,
        "clock": args.clock,
        "rounds": args.rounds or (5 if quick else 25),
        "target": 0.001 if quick else 0.004,
        "import_reps": 2 if quick else 7,
        "concurrency_runs": 1 if quick else 5,
        "scale_n": 500 if quick else 10_000,
        "export_reps": 2 if quick else 5,
    }
    if args.peers is None:
        cfg["peers"] = [] if quick else list(peers.PEERS)
    elif args.peers.strip() in ("", "none"):
        cfg["peers"] = []
    else:
        cfg["peers"] = [p.strip() for p in args.peers.split(",") if p.strip()]
        unknown = set(cfg["peers"]) - set(peers.PEERS)
        if unknown:
            raise SystemExit(f"unknown peers {sorted(unknown)}; known: {', '.join(peers.PEERS)}")
    cfg["sections"] = [s.strip() for s in args.sections.split(",")] if args.sections else SECTIONS
    return cfg


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run the selected sections; the result is what `--json` prints."""
    started = time.perf_counter()
    results: dict[str, Any] = {}
    took: dict[str, float] = {}
    for section in cfg["sections"]:
        took[section] = time.perf_counter()
        if section == "concurrency":
            results[section] = concurrency(cfg)
        elif section == "scale":
            results[section] = scale(cfg)
        elif section in ("registration", "dispatch", "import"):
            fn = {"registration": registration, "dispatch": dispatch, "import": imports}
            results[section] = fn[section](cfg["peers"], cfg)
        else:
            raise SystemExit(f"unknown section {section!r}; choose from {', '.join(SECTIONS)}")
        took[section] = round(time.perf_counter() - took[section], 1)
    if cfg.get("profile"):
        results["profile"] = profiles(cfg)
    results["targets"] = report.targets(results, cfg["clock"])
    results["meta"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": peers.versions(cfg["peers"]),
        "config": {k: v for k, v in cfg.items() if k != "sections"} | {"sections": list(cfg["sections"])},
        "seconds": round(time.perf_counter() - started, 1),
        "section_seconds": took,
    }  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--peers", help="comma-separated peers, or 'none' (default: all)")
    parser.add_argument("--sections", help=f"comma-separated, from {', '.join(SECTIONS)}")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per timed case")
    parser.add_argument("--profile", action="store_true", help="add cProfile hot spots")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="the clock in the tables"
    )
    args = parser.parse_args(argv)
    cfg = configure(args)
    cfg["profile"] = args.profile
    results = run(cfg)
    print(json.dumps(results, indent=2, ensure_ascii=False) if args.json else report.markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
