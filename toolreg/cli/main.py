"""The `toolreg` command: list, schema, call, lint, chat, demo, serve.

TARGET is a file (`samples/weather.py`), a module (`samples.weather`),
`module:attribute` naming a `ToolRegistry`, or an MCP server (`mcp:URL`, `mcp:'command'`).
Exit status: 0 ok, 1 the result or the lint found errors, 2 usage errors (one line on stderr
with the fix; `--debug` for a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ..errors import UsageError
from ..formats import DIALECTS, FORMATS
from ..registry import ToolRegistry
from ..tool import Tool
from .chat import chat_loop
from .demo import Demo, run_demo
from .lint import lint_registry
from .serve import add_parser as add_serve_parser
from .serve import cmd_serve
from .target import TargetError, load_file, load_target, sample_names, sample_path

__all__ = ["main"]


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _first_line(text: str) -> str:
    """The first sentence of the first paragraph, on one line."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def _param_summary(tool: Tool) -> list[dict[str, Any]]:
    required = set(tool.parameters.get("required", ()))
    return [
        {"name": name, "type": _type_of(schema), "required": name in required}
        for name, schema in tool.parameters.get("properties", {}).items()
    ]


def _type_of(schema: dict[str, Any]) -> str:
    if "type" in schema:
        kind = schema["type"]
        return "|".join(kind) if isinstance(kind, list) else str(kind)
    if "enum" in schema:
        return "enum"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return "|".join(_type_of(o) for o in options)
    return "any"


def _flags(tool: Tool) -> list[str]:
    flags = [f for f in ("read_only", "destructive", "return_direct") if getattr(tool, f)]
    if tool.timeout is not None:
        flags.append(f"timeout={tool.timeout:g}s")
    return flags


def cmd_list(registry: ToolRegistry, args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = [
        {
            "name": t.name,
            "parameters": _param_summary(t),
            "flags": _flags(t),
            "description": _first_line(t.description),
        }
        for t in registry.tools()
    ]
    if args.json:
        _print_json(rows)
        return 0
    for row in rows:
        params = ", ".join(
            f"{p['name']}: {p['type']}" + ("" if p["required"] else "?") for p in row["parameters"]
        )
        flags = f"  [{', '.join(row['flags'])}]" if row["flags"] else ""
        print(f"{row['name']}({params}){flags}")
        if row["description"]:
            print(f"    {row['description']}")
    return 0


def cmd_schema(registry: ToolRegistry, args: argparse.Namespace) -> int:
    names = args.name or None
    if names:
        unknown = [n for n in names if n not in registry]
        if unknown:
            raise UsageError(f"no tool named {', '.join(unknown)} (have: {_names(registry)})")
    strict = True if args.strict else None
    _print_json(registry.get_tools(args.format, strict=strict, names=names))
    return 0


def _names(registry: ToolRegistry) -> str:
    return ", ".join(registry.names())


def _read_arguments(raw: str | None) -> str:
    text = sys.stdin.read() if raw == "-" else (raw or "{}")
    try:
        json.loads(text or "{}")
    except ValueError as exc:
        raise UsageError(
            f'ARGS is not valid JSON ({exc}); pass an object like \'{{"city": "Paris"}}\''
        ) from None
    return text


def _confirm_on_terminal(yes: bool) -> Any:
    def confirm(tool: Tool, arguments: dict[str, Any]) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            print(
                f"toolreg: {tool.name} needs confirmation; declined (no terminal, no --yes)",
                file=sys.stderr,
            )
            return False
        shown = json.dumps(arguments, ensure_ascii=False)
        return input(f"Run {tool.name}({shown})? [y/N] ").strip().lower().startswith("y")

    return confirm


def cmd_call(registry: ToolRegistry, args: argparse.Namespace) -> int:
    arguments = _read_arguments(args.arguments)
    context = None
    if args.context is not None:
        try:
            context = json.loads(args.context)
        except ValueError as exc:
            raise UsageError(f"--context is not valid JSON ({exc})") from None
    result = registry.dispatch_tool(
        args.tool, arguments, context=context, call_id="cli", confirm=_confirm_on_terminal(args.yes)
    )
    if result.error_kind == "unknown_tool":
        raise UsageError(result.content)
    print(result.content)
    return 0 if result.ok else 1


def cmd_lint(registry: ToolRegistry, args: argparse.Namespace) -> int:
    findings = lint_registry(registry)
    if args.json:
        _print_json([f.as_dict() for f in findings])
    else:
        for finding in findings:
            print(finding)
        errors = sum(f.severity == "error" for f in findings)
        print(f"{len(registry)} tools, {errors} errors, {len(findings) - errors} other findings")
    return 1 if any(f.severity == "error" for f in findings) else 0


def cmd_chat(registry: ToolRegistry, args: argparse.Namespace) -> int:
    model = args.model or os.environ.get("TOOLREG_MODEL")
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if not model:
        raise UsageError("no model: pass --model or set TOOLREG_MODEL")
    return chat_loop(
        registry,
        model,
        base_url,
        system=args.system,
        max_rounds=args.max_rounds,
        dialect=args.dialect,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    module = load_file(sample_path(args.sample))
    demo = getattr(module, "DEMO", None)
    if not isinstance(demo, Demo):
        raise UsageError(f"sample '{args.sample}' has no DEMO")
    if args.trace:
        _trace_to_stderr()
    run_demo(demo, confirm="y" if args.yes else None)
    return 0


def _trace_to_stderr() -> None:
    """`--trace`: every span to stderr as JSON (the OpenTelemetry SDK's console exporter)."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError:
        raise UsageError(
            "--trace needs the OpenTelemetry SDK: pip install 'toolreg[otel]' opentelemetry-sdk"
        ) from None
    from ..telemetry import instrument

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    instrument(tracer_provider=provider)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolreg", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    target_help = "file.py, module, module:registry, mcp:URL or mcp:'command'"

    p = sub.add_parser("list", help="list the tools of TARGET")
    p.add_argument("target", help=target_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("schema", help="print tool definitions as JSON")
    p.add_argument("target", help=target_help)
    p.add_argument("--format", choices=sorted(FORMATS), default="openai")
    p.add_argument("--strict", action="store_true", help="OpenAI strict (structured outputs)")
    p.add_argument("--name", action="append", help="only this tool (repeatable)")

    p = sub.add_parser("call", help="dispatch one call as a model's call would be")
    p.add_argument("target", help=target_help)
    p.add_argument("tool", metavar="NAME")
    p.add_argument("arguments", nargs="?", metavar="ARGS_JSON", help="JSON object, or - for stdin")
    p.add_argument("--context", help="JSON passed as the context to injected parameters")
    p.add_argument("--yes", action="store_true", help="approve destructive tools")

    p = sub.add_parser("lint", help="find what a model would trip over")
    p.add_argument("target", help=target_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("chat", help="chat with an OpenAI-compatible endpoint using TARGET's tools")
    p.add_argument("target", help=target_help)
    p.add_argument("--model", help="model name (default: $TOOLREG_MODEL)")
    p.add_argument("--base-url", help="endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--system", help="system message")
    p.add_argument("--max-rounds", type=int, default=8)
    p.add_argument("--dialect", choices=sorted(DIALECTS), default="tools")

    p = sub.add_parser("demo", help="run a sample conversation end to end")
    p.add_argument("--sample", default="weather", help=f"one of: {', '.join(sample_names())}")
    p.add_argument("--yes", action="store_true", help="approve destructive tools")
    p.add_argument("--trace", action="store_true", help="print OpenTelemetry spans to stderr")

    add_serve_parser(sub, target_help)
    return parser


_COMMANDS = {
    "list": cmd_list,
    "schema": cmd_schema,
    "call": cmd_call,
    "lint": cmd_lint,
    "chat": cmd_chat,
}


def _fail(message: str) -> NoReturn:
    print(f"toolreg: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            return cmd_demo(args)
        if args.command == "serve":
            return cmd_serve(args)
        with contextlib.ExitStack() as resources:  # an mcp: target's connection
            return _COMMANDS[args.command](load_target(args.target, resources), args)
    except (UsageError, TargetError) as exc:
        if args.debug:
            raise
        _fail(str(exc))
    except BrokenPipeError:  # `toolreg schema ... | head`: the reader left; leave quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        return 141
    except Exception as exc:
        if args.debug:
            raise
        _fail(f"{type(exc).__name__}: {exc} (run with --debug for the traceback)")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
