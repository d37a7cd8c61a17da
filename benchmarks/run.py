"""toolreg against its peers, in one run: `python benchmarks/run.py [--quick] [--json]`.

Sections: registration, dispatch, import, concurrency, scale, loop (benchmarks/README.md),
and, when asked for (`--sections mcp`), MCP servers over streamable HTTP.
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
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [p for p in (HERE, ROOT) if p not in sys.path[:2]]  # this checkout's toolreg

import baselines  # noqa: E402
import corpus  # noqa: E402
import loop  # noqa: E402
import mcp_bench  # noqa: E402
import measure  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402
import scenarios  # noqa: E402
import schemas  # noqa: E402

SECTIONS = ("registration", "dispatch", "import", "concurrency", "scale", "loop", "schemas")
OPTIONAL = ("mcp",)  # run only when named: it starts servers and takes a minute


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:160]


def _same(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def _path_result(path: Any, stats: dict[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    per_tool: dict[str, Any] = {}
    for fn in corpus.TOOLS:
        key = f"{path.label}|{fn.__name__}"
        per_tool[fn.__name__] = measure.clocks(stats[key]) if key in stats else errors[key]
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
    paths, skipped = peers.dispatch_paths(fns, selected)
    cases, errors, notes = [], {}, {}
    for path in paths:
        for fn in fns:
            name, args = fn.__name__, corpus.CALLS[fn.__name__]
            key = f"{path.label}|{name}"
            if name in path.unsupported:  # known at set-up (e.g. a schema it cannot compile)
                errors[key] = f"unsupported: {path.unsupported[name]}"
                continue
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
            text = baselines.render(got)
            if not _same(text, baselines.render(fn(**json.loads(args)))):
                notes[key] = f"result differs: {text[:60]!r}"
            cases.append(measure.Case(key, batch))
    stats = measure.interleave(cases, rounds=cfg["rounds"], target=cfg["target"])
    loop.close()
    out = [_path_result(p, stats, errors) for p in paths]
    return {"paths": out, "skipped": skipped, "notes": notes}


def imports(selected: list[str], cfg: dict[str, Any]) -> dict[str, Any]:
    labels = ["toolreg", *(d for d in selected if peers.installed(d))]
    stmts = {label: peers.IMPORTS[label] for label in labels}
    stats, failed = measure.import_times(stmts, reps=cfg["import_reps"], cwd=ROOT)
    skipped = {d: "not installed" for d in selected if d not in labels} | failed
    rows = [{"label": k, "stmt": stmts[k], **measure.clocks(v, 1e3)} for k, v in stats.items()]
    return {"rows": rows, "skipped": skipped}


def configure(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    cfg = {
        "quick": quick,
        "clock": args.clock,
        "rounds": args.rounds or (5 if quick else 15),
        "target": 0.001 if quick else 0.004,
        "import_reps": 2 if quick else 4,
        "concurrency_runs": 1 if quick else 5,
        "scale_n": 500 if quick else 10_000,
        "export_reps": 2 if quick else 5,
        "loop_target": 0.005 if quick else 0.1,
    }
    if args.peers is None:
        cfg["peers"] = [] if quick else list(peers.PEERS)
    elif args.peers.strip() in ("", "none"):
        cfg["peers"] = []
    elif args.peers.strip() == "all":
        cfg["peers"] = list(peers.PEERS)
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
            results[section] = scenarios.concurrency(cfg)
        elif section == "scale":
            results[section] = scenarios.scale(cfg)
        elif section == "loop":
            results[section] = loop.loop_overhead(cfg, peers.installed)
        elif section == "mcp":
            results[section] = mcp_bench.run(cfg)
        elif section == "schemas":
            results[section] = schemas.run(cfg)
        elif section in ("registration", "dispatch", "import"):
            fn = {"registration": registration, "dispatch": dispatch, "import": imports}
            results[section] = fn[section](cfg["peers"], cfg)
        else:
            known = ", ".join((*SECTIONS, *OPTIONAL))
            raise SystemExit(f"unknown section {section!r}; choose from {known}")
        took[section] = round(time.perf_counter() - took[section], 1)
    if cfg.get("profile"):
        results["profile"] = scenarios.profiles(cfg)
    results["targets"] = report.targets(results, cfg["clock"])
    results["meta"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": peers.versions(cfg["peers"]),
        "config": {**cfg, "sections": list(cfg["sections"])},
        "seconds": round(time.perf_counter() - started, 1),
        "section_seconds": took,
    }  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument(
        "--peers", help="comma-separated peers, 'all' or 'none' (default: all; none if --quick)"
    )
    parser.add_argument(
        "--sections", help=f"comma-separated, from {', '.join((*SECTIONS, *OPTIONAL))}"
    )
    parser.add_argument("--rounds", type=int, help="interleaved rounds per timed case")
    parser.add_argument("--profile", action="store_true", help="add cProfile hot spots")
    parser.add_argument(
        "--loop-baseline",
        metavar="CHECKOUT",
        help="loop section: also run another checkout's toolreg (e.g. /path/to/main)",
    )
    parser.add_argument(
        "--schemas-baseline",
        metavar="CHECKOUT",
        help="schemas section: also run another checkout's toolreg (e.g. /path/to/main)",
    )
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="the clock in the tables"
    )
    args = parser.parse_args(argv)
    cfg = configure(args)
    cfg["profile"] = args.profile
    cfg["loop_baseline"] = args.loop_baseline
    cfg["schemas_baseline"] = args.schemas_baseline
    results = run(cfg)
    print(
        json.dumps(results, indent=2, ensure_ascii=False) if args.json else report.markdown(results)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
