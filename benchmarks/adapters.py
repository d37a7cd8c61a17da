"""Per-call overhead of toolreg's framework adapters against each framework's own function tool.

    python benchmarks/adapters.py            # markdown table
    python benchmarks/adapters.py --json     # the same as JSON
    python benchmarks/adapters.py --quick    # a smoke run: few calls, few rounds

One tool, `lookup(query: str, limit: int = 5) -> list[str]`, is called the way each
framework's loop calls a tool, with no model: pydantic-ai validates the arguments with the
tool's `args_validator` and awaits the toolset's `call_tool`; the Agents SDK awaits the
`FunctionTool`'s `on_invoke_tool` with the JSON text; LangChain `ainvoke`s the tool with a
`ToolCall`. Each framework's native tool (`FunctionToolset`, `function_tool`,
`StructuredTool`) and toolreg's adapter of a `ToolRegistry` holding the same function run
the same calls, in interleaved rounds; the table gives the median CPU microseconds per call
(all threads: a sync tool runs in a worker thread in each of them) and the adapter's
difference. A framework that is not installed is reported as skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's toolreg

ARGUMENTS = '{"query": "weather in Paris", "limit": 3}'
Call = Callable[[], Awaitable[Any]]


def lookup(query: str, limit: int = 5) -> list[str]:
    """Look a query up.

    Args:
        query: what to look for.
        limit: how many answers.
    """
    return [query] * limit


def _registry() -> Any:
    from toolreg import ToolRegistry

    registry = ToolRegistry()
    registry.register_tool(lookup)
    return registry


def _pydantic_ai() -> tuple[Call, Call]:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    from toolreg.adapters.pydantic_ai import ToolregToolset

    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())

    def path(toolset: Any) -> Call:
        tool = asyncio.run(toolset.get_tools(ctx))["lookup"]

        async def call() -> Any:
            args = tool.args_validator.validate_json(ARGUMENTS, allow_partial="off")
            return await toolset.call_tool("lookup", args, ctx, tool)

        return call

    return path(FunctionToolset([lookup])), path(ToolregToolset(_registry()))


def _agents() -> tuple[Call, Call]:
    from agents import function_tool
    from agents.tool_context import ToolContext

    from toolreg.adapters.agents import function_tools

    ctx = ToolContext(context=None, tool_name="lookup", tool_call_id="c", tool_arguments=ARGUMENTS)

    def path(tool: Any) -> Call:
        return lambda: tool.on_invoke_tool(ctx, ARGUMENTS)

    (adapted,) = function_tools(_registry())
    return path(function_tool(lookup)), path(adapted)


def _langchain() -> tuple[Call, Call]:
    from langchain_core.tools import StructuredTool

    from toolreg.adapters.langchain import langchain_tools

    call = {"type": "tool_call", "name": "lookup", "args": json.loads(ARGUMENTS), "id": "c"}

    def path(tool: Any) -> Call:
        return lambda: tool.ainvoke(call)

    (adapted,) = langchain_tools(_registry())
    return path(StructuredTool.from_function(lookup)), path(adapted)


FRAMEWORKS: dict[str, Callable[[], tuple[Call, Call]]] = {
    "pydantic-ai": _pydantic_ai,
    "openai-agents": _agents,
    "langchain-core": _langchain,
}


CLOCK = time.process_time
"""The process's CPU time (every thread's): what a call costs, whatever else the machine
runs; `--clock wall` measures elapsed time instead."""


async def _per_call(call: Call, calls: int) -> float:
    """Microseconds per call over `calls` awaited calls."""
    start = CLOCK()
    for _ in range(calls):
        await call()
    return (CLOCK() - start) / calls * 1e6


async def _rounds(native: Call, adapted: Call, calls: int, rounds: int) -> dict[str, list[float]]:
    """Per-call times of both paths, round by round, interleaved: a loaded machine slows
    both alike."""
    times: dict[str, list[float]] = {"native": [], "adapter": []}
    await native()
    await adapted()  # warm both up
    for _ in range(rounds):
        times["native"].append(await _per_call(native, calls))
        times["adapter"].append(await _per_call(adapted, calls))
    return times


def measure(calls: int, rounds: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for name, make in FRAMEWORKS.items():
        try:
            native, adapted = make()
        except ImportError as exc:
            skipped[name] = f"not installed ({exc.name})"
            continue
        times = asyncio.run(_rounds(native, adapted, calls, rounds))
        native_us = statistics.median(times["native"])
        adapter_us = statistics.median(times["adapter"])
        rows.append(
            {
                "framework": name,
                "native_us": round(native_us, 1),
                "adapter_us": round(adapter_us, 1),
                "difference_us": round(adapter_us - native_us, 1),
            }
        )
    clock = "cpu" if CLOCK is time.process_time else "wall"
    return {"rows": rows, "skipped": skipped, "calls": calls, "rounds": rounds, "clock": clock}


def table(report: dict[str, Any]) -> str:
    lines = [
        "| framework | native tool (µs/call) | toolreg adapter (µs/call) | difference |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['framework']} | {row['native_us']} | {row['adapter_us']} | "
            f"{row['difference_us']:+} |"
        )
    for name, why in report["skipped"].items():
        lines.append(f"| {name} | skipped: {why} | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--calls", type=int, default=None, help="calls per round")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu", help="the clock")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    calls = args.calls or (20 if args.quick else 2000)
    rounds = args.rounds or (2 if args.quick else 9)
    report = measure(calls, rounds)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
