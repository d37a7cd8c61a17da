"""The toolreg command: list, schema, call, lint, chat, demo, serve, mcp pin.

TARGET is a file (`samples/weather.py`), a module (`samples.weather`),
`module:attribute` naming a `ToolRegistry`, an MCP server (`mcp:URL`, `mcp:'command'`), or
an HTTP API's OpenAPI document (`openapi:URL`, `openapi:FILE`).

Exit status: 0 ok; 1 the result was an error, the lint found errors, or the endpoint of
`chat` or `demo` failed (one line on stderr naming its URL); 2 usage errors (one line on
stderr with the fix). `--debug`, before or after the command, shows tracebacks instead: of
toolreg's own errors, and of a failing tool starting at its own frames. Functions are named
as `file.py:function`, never by the module name a target file is loaded under.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from ..errors import ConversationError, ToolDefinitionError, UsageError
from ..formats import DIALECTS, FORMATS
from ..jsonvalues import safe_text
from ..registry import ToolRegistry
from ..result import ToolResult
from ..tool import Tool
from ..toolsets import Toolset
from ..toolsets.lock import PinFile, drift, locked
from ..types import to_json
from .arguments import read_arguments, shown_arguments
from .chat import chat_loop, endpoint_failed
from .demo import Demo, run_demo, tool_demo
from .failures import tool_failures
from .lint import lint_lock, lint_registry
from .mcp_pin import add_parser as add_mcp_parser
from .mcp_pin import cmd_mcp
from .serve import add_parser as add_serve_parser
from .serve import cmd_serve
from .target import (
    TargetError,
    function_label,
    load_file,
    load_module,
    load_target,
    readable,
    sample_names,
    sample_path,
)

__all__ = ["build_parser", "main"]


def _print(text: str) -> None:
    """Print `text`; a lone surrogate (which no UTF-8 stream accepts) shows as U+FFFD."""
    print(safe_text(text))


def _print_json(value: Any) -> None:
    _print(json.dumps(value, indent=2, ensure_ascii=False))


def _first_line(text: str) -> str:
    """The first sentence of the first paragraph, on one line."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def _param_summary(tool: Tool) -> list[dict[str, Any]]:
    required = set(tool.parameters.get("required", ()))
    rows = []
    for name, schema in tool.parameters.get("properties", {}).items():
        row: dict[str, Any] = {"name": name, "type": _type_of(schema), "required": name in required}
        values = _enum_of(schema)
        if values is not None:
            row["enum"] = values
        row["description"] = schema.get("description", "")
        rows.append(row)
    return rows


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


_MAX_SHOWN_VALUES = 12


def _shown_type(schema: dict[str, Any]) -> str:
    """The type `list` shows: an enum as its values (`celsius|fahrenheit`), else the type."""
    values = (
        schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
    )
    if values is not None:
        shown = [v if isinstance(v, str) else json.dumps(v) for v in values]
        if len(shown) > _MAX_SHOWN_VALUES:
            shown = [*shown[:_MAX_SHOWN_VALUES], "..."]
        return "|".join(shown)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options and "type" not in schema:
        return "|".join(_shown_type(o) for o in options)
    return _type_of(schema)


def _enum_of(schema: dict[str, Any]) -> list[Any] | None:
    """The values an enum parameter allows (an optional one's include None); None when the
    parameter is not an enum."""
    if "enum" in schema:
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    if schema.get("type") == "null":
        return [None]
    options = schema.get("anyOf") or schema.get("oneOf")
    if not options:
        return None
    found = [_enum_of(o) for o in options]
    if any(values is None for values in found) or all(values == [None] for values in found):
        return None
    return [v for values in found for v in (values or ())]


def _flags(tool: Tool) -> list[str]:
    flags = [f for f in ("read_only", "destructive", "return_direct") if getattr(tool, f)]
    if tool.timeout is not None:
        flags.append(f"timeout={tool.timeout:g}s")
    if tool.version is not None:
        flags.append(f"version={tool.version}")
    return flags


def cmd_list(registry: ToolRegistry, args: argparse.Namespace) -> int:
    tools = registry.tools()
    if args.json:  # everything, descriptions in full
        _print_json(
            [
                {
                    "name": t.name,
                    "parameters": _param_summary(t),
                    "flags": _flags(t),
                    "description": t.description,
                }
                for t in tools
            ]
        )
        return 0
    for tool in tools:
        required = set(tool.parameters.get("required", ()))
        params = ", ".join(
            f"{name}: {_shown_type(schema)}" + ("" if name in required else "?")
            for name, schema in tool.parameters.get("properties", {}).items()
        )
        flags = _flags(tool)
        shown_flags = f"  [{', '.join(flags)}]" if flags else ""
        _print(f"{tool.name}({params}){shown_flags}")
        summary = _first_line(tool.description)
        if summary:
            _print(f"    {summary}")
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


@dataclasses.dataclass
class _Approver:
    """`toolreg call`'s confirm callback: `--yes` approves; otherwise a terminal is asked
    (on stderr), and without one the call is declined unasked (`unasked` says so)."""

    yes: bool
    unasked: bool = False

    def __call__(self, tool: Tool, arguments: dict[str, Any]) -> bool:
        if self.yes:
            return True
        if not sys.stdin.isatty():
            self.unasked = True
            return False
        shown = shown_arguments(arguments)
        print(f"Run {tool.name}({shown})? [y/N] ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline()  # stdout carries only the result (also with --json)
        return answer.strip().lower().startswith("y")


def _json_value(value: Any) -> Any:
    """A tool's return value as a JSON value (None when JSON cannot hold it)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        value = value._asdict()  # a NamedTuple is an object, as the model reads it
    try:
        return json.loads(to_json(value))
    except (TypeError, ValueError, RecursionError):
        return None


def _result_json(result: ToolResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "error_kind": result.error_kind,
        "content": result.content,
        "value": _json_value(result.value) if result.ok else None,
        "elapsed": result.elapsed,
    }


def cmd_call(registry: ToolRegistry, args: argparse.Namespace) -> int:
    arguments = read_arguments(args.arguments, registry.get(args.tool), sys.stdin)
    context = None
    if args.context is not None:
        try:
            context = json.loads(args.context)
        except ValueError as exc:
            raise UsageError(f"--context is not valid JSON ({exc})") from None
    approver = _Approver(args.yes)
    result = registry.dispatch_tool(
        args.tool, arguments, context=context, call_id="cli", confirm=approver
    )
    if result.error_kind == "unknown_tool":
        raise UsageError(result.content)
    if args.json:
        _print_json(_result_json(result))
    elif approver.unasked and result.error_kind == "denied":  # one message: why, and the fix
        print(
            f"toolreg: {result.tool_name} needs confirmation; declined (no terminal, no --yes)",
            file=sys.stderr,
        )
    else:
        _print(result.content)
    return 0 if result.ok else 1


def cmd_lint(registry: Toolset, args: argparse.Namespace) -> int:
    found = lint_registry(registry)
    if args.update and args.lock is None:
        raise UsageError("--update writes the lock file: pass --lock FILE too")
    written: list[str] = []
    if args.lock is not None:
        lock = PinFile(args.lock)
        update = f"toolreg lint {args.target} --lock {args.lock} --update"
        pins = lock.read()
        if args.update:
            written = _update_lock(lock, registry, pins or {})
        elif pins is None:
            raise UsageError(
                f"no lock file {args.lock}: write it with {update}, review it and commit it"
            )
        else:
            found += lint_lock(registry, pins, args.lock, update)
    findings = [dataclasses.replace(f, message=readable(f.message)) for f in found]
    if args.json:
        _print_json([f.as_dict() for f in findings])
    else:
        for finding in findings:
            _print(str(finding))
        for line in written:
            _print(line)
        errors = sum(f.severity == "error" for f in findings)
        count = len(registry.tools())
        print(f"{count} tools, {errors} errors, {len(findings) - errors} other findings")
    return 1 if any(f.severity == "error" for f in findings) else 0


def _update_lock(lock: PinFile, toolset: Toolset, pins: dict[str, dict[str, Any]]) -> list[str]:
    """Write the lock file from the tools as they are; what changed in it, a line each."""
    changed = drift(toolset, pins)
    lock.write(locked(toolset))
    lines = []
    for each in changed:
        lines.append(f"{each.kind}: {each.key}")
        lines.extend(f"    {line}" for line in each.changes)
    count = len(locked(toolset))
    entries = f"{count} definition" + ("" if count == 1 else "s")
    if changed:
        lines.append(f"wrote {lock.path} ({entries}; {len(changed)} new, changed or gone)")
    else:
        lines.append(f"{lock.path} is up to date ({entries})")
    return lines


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
    with contextlib.ExitStack() as resources:  # an mcp: target's connection
        demo = _demo(args, resources)
        if args.trace:
            _trace_to_stderr()
        try:
            run_demo(demo, confirm="y" if args.yes else None)
        except ConversationError as exc:
            url = os.environ.get("OPENAI_BASE_URL")
            if not url or not os.environ.get("TOOLREG_MODEL"):
                raise  # the scripted model failed: toolreg's own bug, not an endpoint's
            return endpoint_failed(url, exc)
    return 0


def _a_target(word: str) -> bool:
    """Whether a word of --call is TARGET put after it (`--call NAME ARGS` takes the rest)."""
    return "=" not in word and not word.lstrip().startswith(("{", "[", '"', "-"))


def _demo(args: argparse.Namespace, resources: contextlib.ExitStack) -> Demo:
    """The demo to play: a sample's or a file's own `DEMO`, or one `tool_demo` writes (for a
    file without one, and with --call or --prompt)."""
    if args.target is not None and args.sample is not None:
        raise UsageError("pass TARGET or --sample, not both")
    context = None
    if args.context is not None:
        try:
            context = json.loads(args.context)
        except ValueError as exc:
            raise UsageError(f"--context is not valid JSON ({exc})") from None
    written = args.call is not None or args.prompt is not None
    if (
        args.target is None
        and args.sample is None
        and args.call
        and any(_a_target(w) for w in args.call[1:])
    ):
        raise UsageError("put TARGET before --call: toolreg demo FILE.py --call NAME ARGS...")
    if args.target is None:
        name = args.sample or "weather"
        demo = getattr(load_file(sample_path(name)), "DEMO", None)
        if not isinstance(demo, Demo):
            raise UsageError(f"sample '{name}' has no DEMO")
        registry = demo.registry
    else:
        registry = load_target(args.target, resources)
        remote = args.target.startswith(("mcp:", "openapi:"))
        found = None if remote else load_module(args.target)
        demo = getattr(found, "DEMO", None)
        if not isinstance(demo, Demo) or demo.registry is not registry:
            demo, written = None, True
    if written or demo is None:
        return tool_demo(registry, args.call, prompt=args.prompt, context=context)
    return demo if args.context is None else dataclasses.replace(demo, context=context)


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


def _version() -> str:
    try:
        return importlib.metadata.version("toolreg")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The command's parser. `--debug` is accepted before or after the command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,  # absent unless given: the command's does not undo the top's
        help="show tracebacks: of toolreg's errors, and of a failing tool from its own frames",
    )
    parser = argparse.ArgumentParser(
        prog="toolreg",
        description="Inspect, call, lint, chat with and serve the tools of a Python file, a "
        "module or an MCP server.",
        epilog="Exit status: 0 ok; 1 an error result, lint errors, or an endpoint that failed "
        "in chat or demo; 2 a usage error (one line on stderr saying how to fix it).",
        parents=[common],
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"toolreg {_version()}",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="what to do (COMMAND --help)"
    )
    target_help = "file.py, module, module:registry, mcp:URL, mcp:'command' or openapi:URL_OR_FILE"

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary, parents=[common])

    p = command("list", "list the tools of TARGET")
    p.add_argument("target", metavar="TARGET", help=target_help)
    p.add_argument(
        "--json", action="store_true", help="machine-readable output, with full descriptions"
    )

    p = command("schema", "print tool definitions as JSON")
    p.add_argument("target", metavar="TARGET", help=target_help)
    p.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="openai",
        help="the provider's shape (default: openai)",
    )
    p.add_argument("--strict", action="store_true", help="OpenAI strict (structured outputs)")
    p.add_argument("--name", action="append", help="only this tool (repeatable)")

    p = command("call", "dispatch one call as a model's call would be")
    p.add_argument("target", metavar="TARGET", help=target_help)
    p.add_argument("tool", metavar="NAME", help="the tool to call")
    p.add_argument(
        "arguments",
        nargs="*",
        metavar="ARGS",
        help="key=value pairs (values are JSON when they parse, else text), one JSON object, "
        "or - for a JSON object on stdin",
    )
    p.add_argument("--context", help="JSON passed as the context to injected parameters")
    p.add_argument("--yes", action="store_true", help="approve destructive tools")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON: ok, error_kind, content, value, elapsed (seconds)",
    )

    p = command("lint", "find what a model would trip over")
    p.add_argument("target", metavar="TARGET", help=target_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--lock",
        metavar="FILE",
        help="also fail when a tool's definition differs from the one FILE locks for its "
        "name and version (a changed tool needs a new version=)",
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="write FILE (--lock) from the tools as they are, and say what changed",
    )

    p = command("chat", "chat with an OpenAI-compatible endpoint using TARGET's tools")
    p.add_argument("target", metavar="TARGET", help=target_help)
    p.add_argument("--model", help="model name (default: $TOOLREG_MODEL)")
    p.add_argument("--base-url", help="endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--system", help="system message")
    p.add_argument(
        "--max-rounds", type=int, default=8, help="model requests per user line (default: 8)"
    )
    p.add_argument(
        "--dialect",
        choices=sorted(DIALECTS),
        default="tools",
        help="how tools are offered to the model (default: tools)",
    )

    p = command(
        "demo", "run a sample, or the tools of TARGET, in a conversation with a scripted model"
    )
    p.add_argument(
        "target",
        nargs="?",
        metavar="TARGET",
        help=f"{target_help}: its DEMO if it has one, else one call of its first "
        "non-destructive tool with example arguments from the schema",
    )
    p.add_argument(
        "--sample", help=f"a bundled sample: one of {', '.join(sample_names())} (default: weather)"
    )
    p.add_argument(
        "--call",
        nargs="+",
        metavar=("NAME", "ARGS"),
        help="the call the scripted model makes: a tool and its ARGS as toolreg call reads "
        "them (none: example arguments); put it after TARGET",
    )
    p.add_argument("--prompt", help="the user's message (default: asks for the call)")
    p.add_argument("--context", help="JSON passed as the context to injected parameters")
    p.add_argument("--yes", action="store_true", help="approve destructive tools")
    p.add_argument("--trace", action="store_true", help="print OpenTelemetry spans to stderr")

    add_serve_parser(command, target_help)
    add_mcp_parser(command, common)
    return parser


_COMMANDS = {
    "list": cmd_list,
    "schema": cmd_schema,
    "call": cmd_call,
    "lint": cmd_lint,
    "chat": cmd_chat,
}


def _message(exc: BaseException) -> str:
    """`exc`'s text with the functions it names as `file.py:function`."""
    text = readable(str(exc))  # the target's own functions
    if isinstance(exc, ToolDefinitionError):  # a function of a module the target imported
        for name in (exc.function, getattr(exc, "existing", None)):
            if name:
                text = text.replace(name, function_label(name))
    return text


def _fail(exc: BaseException, message: str, debug: bool) -> NoReturn:
    """One line on stderr (with --debug: the traceback), exit status 2."""
    if debug:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        print(readable("".join(lines)), end="", file=sys.stderr)
    else:
        print(f"toolreg: {message}", file=sys.stderr)
    raise SystemExit(2)


def _server_errlog() -> TextIO:
    """Where a mounted stdio server's stderr goes without --debug: a temporary file, not
    ours (its tools' failures are the printed observations; a server that cannot start is
    quoted in the error); with --debug it goes to our stderr, as it is."""
    import tempfile

    return tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    try:
        with tool_failures(debug, args.command):
            if args.command == "demo":
                return cmd_demo(args)
            if args.command == "serve":
                return cmd_serve(args)
            if args.command == "mcp":
                with _server_errlog() if not debug else contextlib.nullcontext() as errlog:
                    return cmd_mcp(args, errlog)
            with contextlib.ExitStack() as resources:  # an mcp: target's connection
                errlog = None if debug else resources.enter_context(_server_errlog())
                registry = load_target(
                    args.target,
                    resources,
                    server_errlog=errlog,
                    toolset=args.command == "lint",  # a lint holds any toolset to its lock
                )
                return _COMMANDS[args.command](registry, args)
    except (UsageError, TargetError) as exc:
        _fail(exc, _message(exc), debug)
    except BrokenPipeError:  # `toolreg schema ... | head`: the reader left; leave quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        return 141
    except Exception as exc:
        message = f"{type(exc).__name__}: {_message(exc)} (run with --debug for the traceback)"
        _fail(exc, message, debug)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
