"""Durable turns: what a turn costs on DBOS over a plain stored turn, and how long a restart
takes to finish a turn a killed process left.

    python benchmarks/durable_bench.py                 # markdown tables (SQLite, and a
                                                        # PostgreSQL of its own when installed)
    python benchmarks/durable_bench.py --json          # the same as JSON
    python benchmarks/durable_bench.py --quick         # a smoke run: few turns
    python benchmarks/durable_bench.py --postgres URL  # a PostgreSQL of your own

One turn: the model asks for `charge`, then answers (a `ScriptedServer` on 127.0.0.1, over
the OpenAI SDK); the conversation lives in a `SQLiteStore`. Each database is measured in a
process of its own (DBOS is one per process):

- **plain**: `Conversation.send` with the store (a new conversation each turn);
- **durable**: `DurableTurns.send` on `DBOSEngine` (five recorded steps a turn: the store's
  load, two model requests, the tool call, the store's save); the added cost per step is
  (durable - plain) / 5, wall time and this process's CPU;
- **write**: one committed insert of a 1 KiB row into the same database, with the same
  driver settings as DBOS's (sqlite3 in rollback-journal mode; psycopg, autocommit): the
  ratio says how much of a step's cost is its database write;
- **pydantic-ai** (when `pydantic_ai` and `dbos` import): its `Agent` and its `DBOSAgent` on
  the same turn and database (DBOS's default serializer; pydantic-ai records model requests
  as steps, and runs function tools inside the workflow without recording them);
- **recovery**: the crash kit kills a durable turn while its tool runs; the new process's
  time from its start (modules already imported) through `engine.launch()` to the
  recovered turn's reply.

Medians over the turns (after two warm-up turns). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's toolreg
from toolreg import ToolContext, ToolRegistry  # noqa: E402 - after the path

STEPS = 5  # recorded steps of one durable turn (see the module)
WARMUP = 2


def _script(turns: int) -> list[Any]:
    from toolreg.testing import text, tool_call

    return [tool_call("charge", order="A1", amount=5), text("Charged.")] * turns


def _tools() -> Any:
    tools = ToolRegistry()

    @tools.register_tool
    def charge(order: str, amount: int, ctx: ToolContext) -> str:
        """Charge a customer for an order."""
        return f"charged {amount} for {order}"

    return tools


def _timed(fn: Any, turns: int) -> dict[str, float]:
    """Median wall and CPU milliseconds of `fn(i)` over `turns` turns (after a warm-up)."""
    walls, cpus = [], []
    for i in range(turns + WARMUP):
        w, c = time.perf_counter(), time.process_time()
        fn(i)
        if i >= WARMUP:
            walls.append((time.perf_counter() - w) * 1000)
            cpus.append((time.process_time() - c) * 1000)
    return {"wall_ms": statistics.median(walls), "cpu_ms": statistics.median(cpus)}


def _write_cost(url: str, folder: Path, turns: int) -> dict[str, float]:
    """One committed insert of a 1 KiB row, the way DBOS's driver writes."""
    row = "x" * 1024
    if url.startswith("sqlite"):
        conn = sqlite3.connect(folder / "writes.sqlite", isolation_level=None)
        conn.execute("create table if not exists w (id text primary key, v text)")

        def write(_: int) -> None:
            conn.execute("begin")
            conn.execute("insert into w values (?, ?)", (uuid.uuid4().hex, row))
            conn.execute("commit")

        took = _timed(write, turns * 2)
        conn.close()
        return took
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute("create table if not exists bench_writes (id text primary key, v text)")

        def pg_write(_: int) -> None:
            pg.execute("insert into bench_writes values (%s, %s)", (uuid.uuid4().hex, row))

        return _timed(pg_write, turns * 2)


def child(url: str, turns: int) -> dict[str, Any]:
    """In a process of its own: plain and durable turns on one database."""
    from toolreg import Conversation
    from toolreg.durable import DurableTurns
    from toolreg.durable.dbos import DBOSEngine
    from toolreg.stores import SQLiteStore
    from toolreg.testing import ScriptedServer

    folder = Path(tempfile.mkdtemp(prefix="toolreg-durable-bench-"))
    tools = _tools()
    store = SQLiteStore(folder / "store.sqlite")
    n = turns + WARMUP
    out: dict[str, Any] = {}
    with ScriptedServer(_script(2 * n)) as server:
        client = server.client()

        def make(conversation_id: str) -> Conversation:
            return Conversation(
                client,
                "any-model",
                registry=tools,
                state_store=store,
                conversation_id=conversation_id,
                context="bench",
            )

        out["plain"] = _timed(lambda i: make(f"plain-{i}").send("Charge A1"), turns)
        engine = DBOSEngine(url, application_version=f"bench-{uuid.uuid4().hex[:6]}")
        durable = DurableTurns(engine, "bench", make)
        engine.launch()
        try:
            out["durable"] = _timed(lambda i: durable.send(f"durable-{i}", "Charge A1"), turns)
        finally:
            engine.shutdown()
    out["write"] = _write_cost(url, folder, turns)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def pydantic_ai_child(url: str, turns: int) -> dict[str, Any]:
    """pydantic-ai's Agent and DBOSAgent on the same turn (DBOS's default serializer)."""
    import asyncio
    import warnings

    from dbos import DBOS
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    warnings.simplefilter("ignore")
    from pydantic_ai.durable_exec.dbos import DBOSAgent

    from toolreg.testing import ScriptedServer

    n = turns + WARMUP
    with ScriptedServer(_script(2 * n)) as server:
        model = OpenAIChatModel(
            "scripted-model", provider=OpenAIProvider(openai_client=server.async_client())
        )
        agent: Any = Agent(model, name="bench")

        @agent.tool_plain
        def charge(order: str, amount: int) -> str:
            """Charge a customer for an order."""
            return f"charged {amount} for {order}"

        durable = DBOSAgent(agent)
        DBOS(
            config={
                "name": "bench-pydantic-ai",
                "system_database_url": url,
                "log_level": "WARNING",
                "application_version": f"bench-{uuid.uuid4().hex[:6]}",
            }
        )
        DBOS.launch()
        loop = asyncio.new_event_loop()
        try:
            out = {
                "plain": _timed(lambda i: loop.run_until_complete(agent.run("Charge A1")), turns),
                "durable": _timed(
                    lambda i: loop.run_until_complete(durable.run("Charge A1")), turns
                ),
            }
        finally:
            loop.close()
            DBOS.destroy()
    return out


def recovery_scenario(run: Any) -> Any:
    """The crash kit's scenario: a durable turn; after the crash, the time from the new
    process's start to the recovered turn's reply goes to `settings["timing"]`."""
    import openai

    from toolreg import Conversation
    from toolreg.durable import DurableTurns
    from toolreg.durable.dbos import DBOSEngine
    from toolreg.stores import SQLiteStore

    began = time.perf_counter()
    tools = run.tools(_tools())
    store = SQLiteStore(run.settings["store"])

    def make(conversation_id: str) -> Conversation:
        client = openai.OpenAI(base_url=run.model_url, api_key="bench", max_retries=0)
        return Conversation(
            client,
            "any-model",
            registry=tools,
            state_store=store,
            conversation_id=conversation_id,
            context="bench",
        )

    engine = DBOSEngine(run.settings["db"], application_version=run.settings["version"])
    turns = DurableTurns(engine, "bench", make)
    engine.launch()
    launched = time.perf_counter()
    if not run.restarted:
        return turns.send(run.settings["tid"], "Charge A1", turn_id=run.settings["tid"])
    reply = turns.result(run.settings["tid"], timeout=60)
    took = {
        "restart_to_reply_ms": (time.perf_counter() - began) * 1000,
        "launch_ms": (launched - began) * 1000,
    }
    Path(run.settings["timing"]).write_text(json.dumps(took))
    return reply


def recovery(url: str, repeats: int) -> dict[str, Any]:
    from toolreg.testing.crash import CrashKit, while_tool_runs

    folder = Path(tempfile.mkdtemp(prefix="toolreg-durable-bench-"))
    times, launches = [], []
    try:
        for _ in range(repeats):
            made = uuid.uuid4().hex[:8]
            db = f"sqlite:///{folder}/dbos-{made}.sqlite" if url.startswith("sqlite") else url
            settings = {
                "db": db,
                "store": str(folder / "store.sqlite"),
                "tid": f"turn-{made}",
                "version": f"bench-{made}",
                "timing": str(folder / f"timing-{made}.json"),
            }
            kit = CrashKit(
                "durable_bench:recovery_scenario",
                workdir=folder,
                model=_script(1),
                settings=settings,
            )
            report = kit.run(while_tool_runs("charge"))
            if not report.crashed or report.error:
                raise RuntimeError(f"the recovery run failed: {report!r}")
            timing = json.loads(Path(settings["timing"]).read_text())
            times.append(timing["restart_to_reply_ms"])
            launches.append(timing["launch_ms"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "restart_to_reply_ms": statistics.median(times),
        "launch_ms": statistics.median(launches),
        "runs": len(times),
    }


def _in_child(mode: str, url: str, turns: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--url", url, "--turns", str(turns)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _own_postgres() -> Any:
    """A PostgreSQL of the benchmark's own (tests/_services.py's), or None."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    try:
        from _services import PostgresServer

        return PostgresServer()
    except BaseException:  # pytest's skip when there is none: no PostgreSQL rows
        return None


def run(turns: int, postgres: str | None, repeats: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="toolreg-durable-bench-"))
    server = None
    if postgres is None:
        server = _own_postgres()
        postgres = None if server is None else server.database("bench")
    databases = {"sqlite": f"sqlite:///{folder}/dbos.sqlite"}
    if postgres is not None:
        databases["postgresql"] = postgres
    results: dict[str, Any] = {}
    try:
        for name, url in databases.items():
            row = _in_child("toolreg", url, turns)
            if "durable" in row:
                extra = {k: row["durable"][k] - row["plain"][k] for k in ("wall_ms", "cpu_ms")}
                per_step = {k: v / STEPS for k, v in extra.items()}
                row["added_per_step"] = per_step
                row["step_to_write"] = per_step["wall_ms"] / row["write"]["wall_ms"]
            row["pydantic_ai"] = _in_child(
                "pydantic-ai", url.replace("dbos.sqlite", "pai.sqlite"), turns
            )
            row["recovery"] = recovery(url, repeats)
            results[name] = row
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return {"turns": turns, "steps_per_turn": STEPS, "databases": results}


def _ms(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def table(results: dict[str, Any]) -> str:
    lines = [
        f"Durable turns ({results['turns']} turns each; median ms a turn, wall / CPU)",
        "",
        "| database | plain turn | durable turn | added per step | one write | step / write "
        "| pydantic-ai Agent | DBOSAgent | restart to reply |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in results["databases"].items():
        if "durable" not in row:
            lines.append(f"| {name} | {row.get('error')} |||||||")
            continue
        pai = row.get("pydantic_ai", {})
        cells = [
            name,
            f"{_ms(row['plain']['wall_ms'])} / {_ms(row['plain']['cpu_ms'])}",
            f"{_ms(row['durable']['wall_ms'])} / {_ms(row['durable']['cpu_ms'])}",
            f"{_ms(row['added_per_step']['wall_ms'])} / {_ms(row['added_per_step']['cpu_ms'])}",
            _ms(row["write"]["wall_ms"]),
            f"{row['step_to_write']:.1f}x",
            _ms(pai.get("plain", {}).get("wall_ms")) if "plain" in pai else str(pai.get("error")),
            _ms(pai.get("durable", {}).get("wall_ms")) if "durable" in pai else "-",
            _ms(row["recovery"]["restart_to_reply_ms"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 turns")
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: one of its own)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=["toolreg", "pydantic-ai"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    turns = 5 if args.quick else args.turns
    if args.child:
        fn = child if args.child == "toolreg" else pydantic_ai_child
        print(json.dumps(fn(args.url, turns)))
        sys.stdout.flush()
        os._exit(0)  # DBOS's threads do not hold the process
    results = run(turns, args.postgres, 2 if args.quick else 5)
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
