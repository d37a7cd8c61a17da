"""The `schemas` section: tools built from JSON Schema definitions, per tool, beside FastMCP.

`python benchmarks/run.py --sections schemas` (part of the default run), or alone:
`python benchmarks/schemas.py [--rounds N] [--baseline CHECKOUT] [--json]`.

The corpus is real: the 524 tool definitions of `data/search_corpus.json` (BFCL, the GitHub
MCP server's tool snapshots, the amap and 12306 MCP servers, OpenAPI routes, Discord bots),
each `{name, description, parameters}`, and the same definitions as MCP `types.Tool`s (what
a client's tools/list returns) for the mount rows. One operation builds every tool of the
corpus; the table shows its time divided by the number of tools. Rows:

- `toolreg register_schema`: a fresh `ToolRegistry`, `register_schema` for each tool (the
  metaschema, the `$ref`s, the compiled validator, the call plan);
- `toolreg register_schema, as draft-07`: the same schemas written as draft 7 (`$schema`,
  `definitions`), rewritten as 2020-12 on the way;
- `toolreg mount`: what `mount` does with a tools/list answer: each remote tool as a `Tool`
  (untrusted: bounded in size, older drafts rewritten, the schema checked, its patterns
  bounded, compiled) and its descriptions scanned for instructions to the model; a new
  `Mount` each time (one keeps the tools it built);
- `FastMCP ProxyTool.from_mcp_tool`: what FastMCP's proxy builds for each remote tool (a
  pydantic model; no validator: the proxy passes arguments on to the server unchecked);
- `FastMCP add_tool`: the same, each added to a `FastMCP` server's own tool index.

With `--baseline CHECKOUT` (`--schemas-baseline` for run.py), that checkout's toolreg runs
the toolreg rows too, in the same rounds ("baseline ..." rows).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [p for p in (HERE, ROOT) if p not in sys.path[:2]]  # this checkout's toolreg

import measure  # noqa: E402

CORPUS = os.path.join(HERE, "data", "search_corpus.json")
DRAFT7 = "http://json-schema.org/draft-07/schema#"
FASTMCP_PROXY = "FastMCP ProxyTool.from_mcp_tool"
FASTMCP_INDEX = "FastMCP add_tool"


def definitions() -> list[dict[str, Any]]:
    """The corpus: `{name, description, parameters}` per tool, names valid for every API."""
    with open(CORPUS, encoding="utf-8") as f:
        tools = json.load(f)["tools"]
    seen: set[str] = set()
    out = []
    for tool in tools:
        name = tool["name"][:64]
        if name not in seen:
            seen.add(name)
            out.append({k: tool[k] for k in ("description", "parameters")} | {"name": name})
    return out


def as_draft_7(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as draft 7 says it: its `$schema`, `definitions` for `$defs`."""
    text = json.dumps(schema).replace('"$defs"', '"definitions"')
    text = text.replace('"#/$defs/', '"#/definitions/')
    return {"$schema": DRAFT7, **json.loads(text)}


def _noop(**arguments: Any) -> dict[str, Any]:
    return arguments


def _registering(package: Any, tools: list[dict[str, Any]]) -> Callable[[], Any]:
    def op() -> Any:
        registry = package.ToolRegistry()
        for tool in tools:
            registry.register_schema(
                tool["name"], tool["parameters"], _noop, description=tool["description"]
            )
        return registry

    return op


def _mounting(package: Any, items: list[Any]) -> Callable[[], Any]:
    mount_module = sys.modules[package.__name__ + ".mcp.mount"]

    def op() -> Any:
        # what Mount does with each tools/list answer (it connects to nothing here)
        handle = mount_module.Mount("http://127.0.0.1:9/mcp")
        catalog = getattr(handle, "_catalog", None)
        if catalog is None:  # a checkout from before the mount's catalog had a room of its own
            listed = handle._built_tools(items)
            handle._warn_of_instructions(listed)
            return listed
        listed = catalog.built(items)
        catalog.warn_of_instructions(listed)
        return listed

    return op


def _fastmcp(items: list[Any]) -> dict[str, Callable[[], Any]]:
    from fastmcp import FastMCP
    from fastmcp.server.providers.proxy import ProxyTool

    def factory() -> Any:
        raise RuntimeError("not called: nothing is sent")

    def proxy() -> Any:
        return [ProxyTool.from_mcp_tool(factory, item) for item in items]

    def index() -> Any:
        server = FastMCP("bench")
        for item in items:
            server.add_tool(ProxyTool.from_mcp_tool(factory, item))
        return server

    return {FASTMCP_PROXY: proxy, FASTMCP_INDEX: index}


def load_baseline(checkout: str) -> Any:
    import loop  # its baseline loader: `toolreg_baseline`, beside this checkout's

    package = loop.load_baseline(checkout)
    __import__(package.__name__ + ".mcp.mount")
    return package


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    import logging

    import mcp_types as types

    import toolreg
    import toolreg.mcp.mount  # the mount rows reach its Mount

    logging.getLogger("toolreg.mcp").setLevel(logging.ERROR)  # the corpus's own warnings
    tools = definitions()
    if cfg.get("quick"):
        tools = tools[::5]  # a smoke run: every fifth tool, from every source
    items = [
        types.Tool(name=t["name"], description=t["description"], input_schema=t["parameters"])
        for t in tools
    ]
    older = [t | {"parameters": as_draft_7(t["parameters"])} for t in tools]
    ops: dict[str, Callable[[], Any]] = {
        "toolreg register_schema": _registering(toolreg, tools),
        "toolreg register_schema, as draft-07": _registering(toolreg, older),
        "toolreg mount": _mounting(toolreg, items),
    }
    skipped: dict[str, str] = {}
    if cfg.get("schemas_baseline"):
        base = load_baseline(cfg["schemas_baseline"])
        ops["baseline register_schema"] = _registering(base, tools)
        ops["baseline mount"] = _mounting(base, items)
    try:
        ops |= _fastmcp(items)
    except ImportError as exc:
        skipped["fastmcp"] = f"not installed ({exc.name})"
    failed: dict[str, str] = {}
    for label, op in list(ops.items()):
        try:
            op()
        except Exception as exc:  # e.g. a baseline that refuses a draft-07 schema
            failed[label] = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            del ops[label]
    cases = [measure.Case(label, measure.sync_batch(op)) for label, op in ops.items()]
    stats = measure.interleave(cases, rounds=cfg["rounds"], target=cfg.get("target", 0.004))
    scale = 1e6 / len(tools)  # seconds per corpus -> µs per tool
    rows = [{"label": label, **measure.clocks(stats[label], scale)} for label in ops]
    return {"tools": len(tools), "rows": rows, "failed": failed, "skipped": skipped}


def per_tool(section: dict[str, Any], clock: str) -> dict[str, float]:
    """µs per tool of each row (the median over rounds)."""
    return {row["label"]: row[clock]["median"] for row in section["rows"]}


def markdown(section: dict[str, Any], clock: str) -> list[str]:
    other = "wall" if clock == "cpu" else "cpu"
    mine, theirs = per_tool(section, clock), per_tool(section, other)
    lines = [
        f"### Tools from JSON Schema ({section['tools']} real definitions, µs per tool)",
        "",
        "| path | µs/tool (" + clock + ") | µs/tool (" + other + ") | × " + FASTMCP_PROXY
        + " | × " + FASTMCP_INDEX + " |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    for label, value in mine.items():
        ratios = [
            f"{value / mine[peer]:.1f}×" if mine.get(peer) else "—"
            for peer in (FASTMCP_PROXY, FASTMCP_INDEX)
        ]
        lines.append(f"| {label} | {value:,.1f} | {theirs[label]:,.1f} | {' | '.join(ratios)} |")
    for label, why in {**section["failed"], **section["skipped"]}.items():
        lines.append(f"- not measured **{label}**: {why}")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    parser.add_argument("--baseline", metavar="CHECKOUT", help="also run another toolreg")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = parser.parse_args(argv)
    section = run({"rounds": args.rounds, "schemas_baseline": args.baseline})
    print(json.dumps(section, indent=2) if args.json else "\n".join(markdown(section, args.clock)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
