"""Results -> the issue's targets, and -> markdown tables."""

from typing import Any

import corpus
import schemas

__all__ = ["loop_overheads", "markdown", "means", "state_total", "str_ratio", "targets"]

DOC_FLOOR = "floor: docstring (Google)"
FULL_FLOOR = "floor: signature + hints + docstring"
DISPATCH_FLOOR = "floor: json.loads + fn"
TEXT_FLOOR = "floor: json.loads + fn + render"
SCHEMA_FLOOR = "floor: json.loads + fastjsonschema + fn"


def _stats(path: dict[str, Any], tool: str) -> dict[str, Any] | None:
    """A tool's timings in `path`, per clock, or None when the path does not support it."""
    value = path["per_tool"].get(tool)
    return value if isinstance(value, dict) else None


def _working(paths: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paths that ran at least one tool (a path that failed on all of them is broken)."""
    return [p for p in paths if any(isinstance(v, dict) for v in p["per_tool"].values())]


def common_tools(paths: list[dict[str, Any]]) -> list[str]:
    """The corpus tools that every working path supports."""
    names = [fn.__name__ for fn in corpus.TOOLS]
    return [t for t in names if all(_stats(p, t) is not None for p in _working(paths))]


def means(section: dict[str, Any], clock: str) -> tuple[list[str], dict[str, float]]:
    """The common tools and, per working path, the mean of its medians over them (µs)."""
    paths = _working(section["paths"])
    tools = common_tools(paths)
    if not tools:
        return tools, {}
    out = {
        p["label"]: sum(_stats(p, t)[clock]["median"] for t in tools) / len(tools) for p in paths
    }
    return tools, out


def str_ratio(
    section: dict[str, Any], clock: str, label: str = "toolreg", floor: str = SCHEMA_FLOOR
) -> tuple[list[str], float | None, float | None]:
    """Over the corpus tools that return str and that both paths ran: the tools and the
    mean µs of `label` and of `floor` (None when a path is missing or shares no such tool)."""
    found = {p["label"]: p for p in section["paths"]}
    if label not in found or floor not in found:
        return [], None, None
    pair = (found[label], found[floor])
    tools = [t for t in corpus.STR_TOOLS if all(_stats(p, t) is not None for p in pair)]
    if not tools:
        return [], None, None
    a, b = (sum(_stats(p, t)[clock]["median"] for t in tools) / len(tools) for p in pair)
    return tools, a, b


def loop_overheads(section: dict[str, Any], clock: str) -> dict[str, float]:
    """Per loop path: ms per turn more than its floor (the raw SDK loop over the same API),
    the median of the differences measured op by op."""
    return {r["label"]: r["overhead"][clock]["median"] for r in section["rows"]}


_STATE_STEPS = {
    "export": "export_state() + json.dumps",
    "rebuild": "json.loads + from_state()",
    "resume overhead": "resume(), less its one model call",
}


def state_steps(section: dict[str, Any], clock: str) -> dict[str, float]:
    """µs per step of pausing and resuming (resume: less the same model call by hand)."""
    rows = section["state"]["rows"]
    return {key: rows[key][clock]["median"] for key in _STATE_STEPS}


def state_total(section: dict[str, Any], clock: str) -> float:
    """ms for export + rebuild + resume, less the model call."""
    return sum(state_steps(section, clock).values()) / 1e3


def _import_ms(results: dict[str, Any], label: str, clock: str) -> float | None:
    rows = results.get("import", {}).get("rows", [])
    return next((r[clock]["median"] for r in rows if r["label"] == label), None)


def targets(results: dict[str, Any], clock: str) -> list[dict[str, Any]]:
    """The issue's targets that this run measured (on `clock`), with value and verdict."""
    out: list[dict[str, Any]] = []

    def add(
        name: str, value: float | None, limit: float, unit: str, higher: bool = False, **extra: Any
    ) -> None:
        if value is not None:
            met = value >= limit if higher else value <= limit
            row = {"target": name, "value": value, "limit": limit, "unit": unit, "met": met}
            out.append({**row, **extra})

    if "registration" in results:
        _, mean = means(results["registration"], clock)
        reg = mean.get("toolreg")
        add("registration, µs per tool (mean of common tools)", reg, 50, "µs")
        if reg and "pydantic-ai-slim" in mean:
            add(
                "registration, pydantic-ai ÷ toolreg", mean["pydantic-ai-slim"] / reg, 10, "×", True
            )
        if reg and DOC_FLOOR in mean:
            add("registration ÷ docstring floor", reg / mean[DOC_FLOOR], 1.3, "×")
        if reg and FULL_FLOOR in mean:
            name = "registration ÷ (signature + hints + docstring floor)"
            add(name, reg / mean[FULL_FLOOR], 1, "×")
    if "dispatch" in results:
        _, mean = means(results["dispatch"], clock)
        if "toolreg" in mean and DISPATCH_FLOOR in mean:
            add("dispatch ÷ (json.loads + fn)", mean["toolreg"] / mean[DISPATCH_FLOOR], 1.5, "×")
        tools, ours, floor = str_ratio(results["dispatch"], clock)
        if ours and floor:
            name = f"dispatch ÷ (json.loads + fastjsonschema + fn), str tools: {', '.join(tools)}"
            add(name, ours / floor, 1.3, "×", tools=tools)
    imported = _import_ms(results, "toolreg", clock)
    add("import toolreg, ms net of interpreter start", imported, 50, "ms")
    if "concurrency" in results:
        first = results["concurrency"]["rows"][0]["wall"]
        add("8 parallel calls of 200 ms (Conversation round, wall)", first["median"], 300, "ms")
    if "loop" in results:
        overheads = loop_overheads(results["loop"], clock)
        for label, over in overheads.items():
            if label.startswith("toolreg"):
                add(f"loop overhead per turn, {label} (over its raw SDK floor)", over, 0.3, "ms")
                before = overheads.get(label.replace("toolreg", "baseline", 1))
                if before is not None:
                    add(f"loop overhead per turn, {label}, ≤ the baseline's", over, before, "ms")
        total = state_total(results["loop"], clock)
        add("state export + rebuild + resume, 50 messages (less the model call)", total, 1, "ms")
    if "mcp" in results and "rows" in results["mcp"]:
        cells = [r for r in results["mcp"]["rows"] if r["server"] == "toolreg" and "calls" in r]
        cpu = [r["server_cpu_ms"] for r in cells if r["server_cpu_ms"] is not None]
        if cpu:
            name = "MCP tools/call over HTTP: toolreg's server CPU per call (worst of 1/8/64)"
            add(name, max(cpu), 0.5, "ms")
        if cells:
            errors = sum(r["errors"] for r in cells)
            add("MCP tools/call errors (toolreg, all cells)", errors, 0, "")
    if "schemas" in results:
        built = schemas.per_tool(results["schemas"], clock)
        for label in ("toolreg register_schema", "toolreg mount"):
            add(f"a tool from JSON Schema, {label}, µs per tool", built.get(label), 300, "µs")
    if "scale" in results:
        s = results["scale"]
        ratio = s["dispatch"]["big"][clock]["median"] / s["dispatch"]["10"][clock]["median"]
        add(f"dispatch with {s['n']:,} tools ÷ with 10", ratio, 1.2, "×")
        cached = s["export_cached"]["big"][clock]["median"] / 1e3
        add(f"cached export of {s['n']:,} tools", cached, 1, "ms")
        add("memory per registered tool", s["bytes_per_tool"] / 1024, 10, "KB")
    return out


# -- markdown -----------------------------------------------------------------------------
def _num(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if not a or not b else f"{a / b:.2f}×"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def _skipped(section: dict[str, Any]) -> list[str]:
    return [f"- skipped **{k}**: {v}" for k, v in section.get("skipped", {}).items()]


def _timed_section(
    title: str, section: dict[str, Any], floors: list[str], unit: str, clock: str
) -> list[str]:
    other = "wall" if clock == "cpu" else "cpu"
    tools, mean = means(section, clock)
    _, other_mean = means(section, other)
    lines = [f"### {title}", "", f"Mean over the common tools: {', '.join(tools)}.", ""]
    rows = [
        [p["label"], _num(mean.get(p["label"])), _num(other_mean.get(p["label"])),
         *(_ratio(mean.get(p["label"]), mean.get(f)) for f in floors),
         _ratio(mean.get(p["label"]), mean.get("toolreg")), p["note"]]
        for p in section["paths"]
    ]  # fmt: skip
    header = ["path", f"{unit} ({clock})", f"{unit} ({other})", *(f"× {f}" for f in floors)]
    header.append("× toolreg")
    lines += _table([*header, "what runs"], rows)
    names = [fn.__name__ for fn in corpus.TOOLS]
    per_tool = [
        [p["label"], *(_num(s[clock]["median"]) if (s := _stats(p, t)) else "—" for t in names)]
        for p in section["paths"]
    ]
    lines += ["", f"Per tool ({unit}, {clock} clock; — = not supported):", ""]
    lines += _table(["path", *names], per_tool)
    unsupported = [
        f"- {p['label']} / {t}: {v}"
        for p in section["paths"]
        for t, v in p["per_tool"].items()
        if isinstance(v, str)
    ]
    notes = [f"- {k.replace('|', ' / ')}: {v}" for k, v in section.get("notes", {}).items()]
    extra = unsupported + notes + _skipped(section)
    return [*lines, "", *extra, ""] if extra else [*lines, ""]


def _str_tools(section: dict[str, Any], clock: str) -> list[str]:
    tools, ours, floor = str_ratio(section, clock)
    if not tools:
        return []
    line = (
        f"Tools that return str ({', '.join(tools)}), the set the fastjsonschema target is "
        f"taken over (their result needs no rendering): toolreg {_num(ours)} µs/call, "
        f"{SCHEMA_FLOOR} {_num(floor)} µs/call, {_ratio(ours, floor)} ({clock} clock)."
    )
    return [line, ""]


def _imports(section: dict[str, Any], clock: str) -> list[str]:
    other = "wall" if clock == "cpu" else "cpu"
    base = next((r[clock]["median"] for r in section["rows"] if r["label"] == "toolreg"), None)
    rows = [
        [r["label"], _num(r[clock]["median"]), _num(r[other]["median"]),
         _ratio(r[clock]["median"], base), f"`{r['stmt'].splitlines()[0]}`"]
        for r in section["rows"]
    ]  # fmt: skip
    lines = ["### 3. Import time (ms, fresh interpreter, net of `python -c pass`)", ""]
    lines += _table(["module", f"ms ({clock})", f"ms ({other})", "× toolreg", "statement"], rows)
    return [*lines, "", *_skipped(section), ""]


def _concurrency(section: dict[str, Any]) -> list[str]:
    rows = [
        [r["label"], _num(r["wall"]["median"]), _ratio(r["wall"]["median"], 200)]
        for r in section["rows"]
    ]
    lines = ["### 4. Concurrency (one round: 8 tool calls of 200 ms, ScriptedServer over HTTP)"]
    return [*lines, "", *_table(["driver", "wall ms", "× 200 ms"], rows), ""]


def _scale(s: dict[str, Any], clock: str) -> list[str]:
    n = f"{s['n']:,} tools"

    def row(name: str, part: dict[str, Any], scale: float, unit: str) -> list[str]:
        a, b = part["10"][clock]["median"] * scale, part["big"][clock]["median"] * scale
        return [f"{name} ({unit})", _num(a), _num(b), _ratio(b, a)]

    rows = [
        row("dispatch get_weather", s["dispatch"], 1, "µs"),
        row("first export (get_tools)", s["export_first"], 1e-3, "ms"),
        row("cached export (get_tools)", s["export_cached"], 1, "µs"),
    ]
    header = ["metric", "10 tools", n, "ratio"]
    lines = [f"### 5. Scale ({clock} clock)", "", *_table(header, rows), ""]
    lines.append(
        f"Memory kept per registered tool (tracemalloc around registering {n}): "
        f"{_num(s['bytes_per_tool'] / 1024)} KB."
    )
    return [*lines, ""]


def _loop(section: dict[str, Any], clock: str) -> list[str]:
    other = "wall" if clock == "cpu" else "cpu"
    rows = [
        [r["label"], _num(r["path"][clock]["median"]), _num(r["floor"][clock]["median"]),
         _signed(r["overhead"][clock]["median"]), _signed(r["overhead"][other]["median"]),
         _ratio(r["path"][clock]["median"], r["floor"][clock]["median"]), r["floor_label"]]
        for r in section["rows"]
    ]  # fmt: skip
    header = ["path", f"ms/turn ({clock})", f"floor ms/turn ({clock})"]
    header += [f"overhead ms ({clock})", f"overhead ms ({other})", "× floor", "floor"]
    lines = [
        "### 6. Loop overhead per turn (a tool call, then the answer; endpoint in another process)",
        "",
        f"openai {section.get('openai', '?')}, anthropic {section.get('anthropic', '—')}"
        + (f", litellm {section['litellm']}." if "litellm" in section else ".")
        + f" The {clock} clock counts what this process does,"
        " not the wait for the model. Each path runs turn by turn alternately with its floor,"
        " the hand-written loop over the same SDK calls; overhead is the median of the"
        " differences.",
        "",
        *_table(header, rows),
        "",
    ]
    steps, other_steps = state_steps(section, clock), state_steps(section, other)
    state = section["state"]
    body = [[_STATE_STEPS[k], _signed(v), _signed(other_steps[k])] for k, v in steps.items()]
    body.append(["total", _signed(sum(steps.values())), _signed(sum(other_steps.values()))])
    lines += [
        f"Pausing a conversation of {state['messages']} messages for approval and resuming it"
        f" (state: {state['state_bytes'] / 1024:.1f} KB of JSON):",
        "",
        *_table(["step", f"µs ({clock})", f"µs ({other})"], body),
        "",
    ]
    return [*lines, *_skipped(section), ""] if section.get("skipped") else lines


def _signed(x: float | None) -> str:
    return "—" if x is None else ("+" if x >= 0 else "−") + _num(abs(x))


def _mcp(section: dict[str, Any]) -> list[str]:
    title = "### 7. MCP: tools/call over streamable HTTP (stateless, 127.0.0.1)"
    if "skipped" in section:
        return [title, "", f"- skipped: {section['skipped']}", ""]
    base = {
        r["clients"]: r["server_cpu_ms"]
        for r in section["rows"]
        if r["server"] == "toolreg" and r.get("server_cpu_ms")
    }
    rows = []
    for r in section["rows"]:
        if "error" in r:
            rows.append([r["server"], "—", "—", "—", "—", "—", "—", "—", "—", r["error"]])
            continue
        cpu = r["server_cpu_ms"]
        rows.append(
            [r["server"], str(r["clients"]), _num(r["calls_per_s"]), _num(r["p50_ms"]),
             _num(r["p99_ms"]), _num(cpu), _ratio(cpu, base.get(r["clients"])),
             _num(r["client_cpu_ms"]), str(r["errors"]), r["note"]]
        )  # fmt: skip
    header = ["server", "clients", "calls/s", "p50 ms", "p99 ms", "server CPU ms/call",
              "× toolreg", "client CPU ms/call", "errors", "what runs"]  # fmt: skip
    call = section["call"]
    lines = [
        title,
        "",
        f"Each client: the SDK's `Client`, calling `{call[0]}({call[1]})` in a loop for "
        f"{section['seconds_per_cell']:g} s; all clients in one process.",
        "",
    ]
    return [*lines, *_table(header, rows), ""]


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    body = [
        [r["target"], f"{'≥' if r['target'].startswith('registration, pyd') else '≤'} "
         f"{r['limit']:.3g} {r['unit']}", f"{_num(r['value'])} {r['unit']}",
         "met" if r["met"] else f"**missed** ({r['value'] / r['limit']:.2f}× the limit)"]
        for r in rows
    ]  # fmt: skip
    return ["### Targets", "", *_table(["target", "limit", "measured", "verdict"], body)]


def _profile(prof: dict[str, Any]) -> list[str]:
    lines = ["### Profile: toolreg hot spots (cProfile, own time per operation)", ""]
    for part, rows in prof.items():
        body = [
            [r["function"], _num(r["own_us"]), _num(r["cum_us"]), f"{r['share']:.0%}"] for r in rows
        ]
        lines += [f"{part} (per operation, averaged over the corpus):", ""]
        lines += [*_table(["function", "own µs", "cum µs", "share"], body), ""]
    return lines


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    cfg = meta["config"]
    clock = cfg["clock"]
    lines = [
        f"## toolreg benchmark — Python {meta['python']}, {meta['cpus']} CPUs, "
        f"{'quick' if cfg['quick'] else 'full'} run ({meta['seconds']} s)",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        f"Medians of {cfg['rounds']} interleaved rounds; ratios are within this run and use "
        f"the {clock} clock.",
        "",
    ]
    if "registration" in results:
        lines += _timed_section(
            "1. Registration (function → OpenAI tool definition, µs per tool)",
            results["registration"], [FULL_FLOOR, DOC_FLOOR], "µs/tool", clock,
        )  # fmt: skip
    if "dispatch" in results:
        lines += _timed_section(
            "2. Dispatch ((name, JSON) → validated call → text, µs per call)",
            results["dispatch"], [DISPATCH_FLOOR, TEXT_FLOOR, SCHEMA_FLOOR], "µs/call", clock,
        )  # fmt: skip
        lines += _str_tools(results["dispatch"], clock)
    if "import" in results:
        lines += _imports(results["import"], clock)
    if "concurrency" in results:
        lines += _concurrency(results["concurrency"])
    if "scale" in results:
        lines += _scale(results["scale"], clock)
    if "loop" in results:
        lines += _loop(results["loop"], clock)
    if "mcp" in results:
        lines += _mcp(results["mcp"])
    if "schemas" in results:
        lines += schemas.markdown(results["schemas"], clock)
    lines += _targets(results["targets"])
    if "profile" in results:
        lines += ["", *_profile(results["profile"])]
    return "\n".join(lines)
