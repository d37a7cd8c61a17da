"""`toolreg serve TARGET`: TARGET's tools as an MCP server, over stdio or streamable HTTP.

```
toolreg serve samples/weather.py                                   # stdio (Claude Desktop...)
toolreg serve samples/weather.py --transport http --port 8000      # http://127.0.0.1:8000/mcp
TOOLREG_MCP_TOKEN=... toolreg serve app:registry --transport http --workers 4
toolreg serve app:registry --transport http --workers 4 \
    --rate-limit 60/min --rate-limit-redis redis://127.0.0.1:6379/0   # one bucket for all
toolreg serve app:registry --transport http --workers 4 \
    --tasks redis://127.0.0.1:6379/0      # MCP tasks shared by every worker and machine
```

TARGET may name a toolset as `module:attribute` (a view such as `combined(registry,
prefixed(mount, "remote"))`), not only a registry. Several TARGETs are served as one
(`combined`): `toolreg serve app.py time=mcp:'uvx mcp-server-time'` serves app.py's tools and
the time server's as `time_get_current_time`...: `PREFIX=TARGET` names TARGET's tools
`PREFIX_name` (`prefixed`). Two TARGETs with the same tool name is an error that says which
to prefix.

Stdio: stdout carries the protocol, so whatever the target prints while it loads goes to
stderr. HTTP: stateless unless `--stateful`; several `--workers` share one listening socket
(each worker loads TARGET again; see `toolreg.mcp.serving` for why the socket is made here).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from typing import Any

from ..errors import UsageError as ToolregUsageError
from .target import TargetError, load_target, require_mcp_extra

__all__ = ["add_parser", "cmd_serve", "worker_app"]

_WORKER_ENV = "TOOLREG_SERVE_WORKER"  # the settings a worker process reads, as JSON
TOKEN_ENV = "TOOLREG_MCP_TOKEN"
REDIS_ENV = "TOOLREG_RATE_LIMIT_REDIS"
TASKS_ENV = "TOOLREG_TASKS_URL"


class ServeError(TargetError):
    """A mistake in the serve options: one line on stderr, exit status 2."""


def add_parser(command: Callable[[str, str], argparse.ArgumentParser], target_help: str) -> None:
    """Add `serve` through `command(name, summary)`, which makes a subcommand's parser."""
    p = command("serve", "serve TARGET's tools over MCP (stdio or streamable HTTP)")
    p.add_argument(
        "target",
        metavar="TARGET",
        nargs="+",
        help=f"{target_help}; several are served together, and PREFIX=TARGET names TARGET's "
        "tools PREFIX_name (e.g. time=mcp:'uvx mcp-server-time')",
    )
    p.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (what desktop clients start) or streamable HTTP (default: stdio)",
    )
    p.add_argument("--host", default="127.0.0.1", help="HTTP: the address to bind")
    p.add_argument("--port", type=int, default=8000, help="HTTP: the port (0: any free one)")
    p.add_argument("--path", default="/mcp", help="HTTP: the endpoint's path")
    p.add_argument(
        "--token",
        help=f"HTTP: require 'Authorization: Bearer TOKEN' (default: ${TOKEN_ENV} if set)",
    )
    p.add_argument(
        "--context", help="JSON passed as the context of every call (to injected parameters)"
    )
    p.add_argument("--workers", type=int, default=1, help="HTTP: processes sharing the port")
    p.add_argument("--stateful", action="store_true", help="HTTP: keep sessions (default: none)")
    p.add_argument(
        "--rate-limit",
        action="append",
        metavar="RATE",
        help="HTTP: each caller's tool calls, e.g. 60/min; TOOL=RATE for one tool, e.g. "
        "search=10/min (repeatable; per worker process unless --rate-limit-redis)",
    )
    p.add_argument(
        "--rate-limit-redis",
        metavar="URL",
        help="HTTP: keep the --rate-limit buckets in Redis, shared by every worker and "
        f"machine, e.g. redis://127.0.0.1:6379/0 (default: ${REDIS_ENV} if set)",
    )
    p.add_argument(
        "--tasks",
        metavar="URL",
        help="keep and run MCP tasks in Redis, shared by every worker and machine serving "
        "the same tools, e.g. redis://127.0.0.1:6379/0 (default: in this process, or "
        f"${TASKS_ENV} if set); needs toolreg[tasks]",
    )
    p.add_argument(
        "--tasks-queue",
        metavar="NAME",
        help="with --tasks: the queue the processes serving these tools share (default: "
        "toolreg); servers of other tools on the same Redis need another",
    )
    p.add_argument(
        "--tasks-reclaim",
        metavar="SECONDS",
        type=float,
        help="with --tasks: how long a task whose worker died waits before another worker "
        "takes it over (default: 30)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST",
        help="HTTP: a Host header to accept (repeatable; 'name:*' for any port)",
    )


def cmd_serve(args: argparse.Namespace) -> int:
    require_mcp_extra("toolreg serve needs")
    if args.transport == "stdio":
        options = (
            ("--token", args.token),
            ("--workers", args.workers != 1),
            ("--rate-limit", args.rate_limit),
            ("--rate-limit-redis", args.rate_limit_redis),
        )
        for flag, given in options:
            if given:
                raise ServeError(f"{flag} applies to --transport http")
    targets = [_split_target(target) for target in args.target]  # checked before loading
    if args.workers > 1:
        if any(target.startswith("mcp:") for _, target in targets):
            raise ServeError("an mcp: target is served by one worker; drop --workers")
        if args.stateful:
            raise ServeError("--stateful sessions live in one process: use one worker")
    _check_options(args)
    _tasks(args)  # checked before anything loads
    _serve(args, _context(args.context))
    return 0


_PREFIXED = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,62})=(.*)", re.DOTALL)


def _split_target(text: str) -> tuple[str | None, str]:
    """`PREFIX=TARGET` as (PREFIX, TARGET); any other TARGET as (None, TARGET) (an `=`
    after a `:` or `/`, as in `mcp:http://host/mcp?a=b`, is the target's own)."""
    found = _PREFIXED.fullmatch(text)
    if found is None:
        return None, text
    prefix, target = found.groups()
    if not target:
        raise ServeError(f"{shlex.quote(text)}: name a TARGET after {prefix}=")
    return prefix, target


def _load(targets: list[str], resources: contextlib.ExitStack | None = None) -> Any:
    """The toolset the TARGETs make: one TARGET's own, or several `combined`, each
    `PREFIX=TARGET` `prefixed`."""
    from ..toolsets import combined, prefixed

    parts = []
    for text in targets:
        prefix, target = _split_target(text)
        found = load_target(target, resources, toolset=True)
        try:
            parts.append(found if prefix is None else prefixed(found, prefix))
        except ToolregUsageError as exc:
            raise ServeError(f"{shlex.quote(text)}: {exc}") from None
    if len(parts) == 1:
        return parts[0]
    try:
        return combined(*parts)
    except ToolregUsageError as exc:
        clash = str(exc).removeprefix("combined(): ").split(";")[0]
        raise ServeError(
            f"{clash}: serve one of the TARGETs under a prefix, PREFIX=TARGET "
            "(e.g. remote=mcp:'uvx mcp-server-time')"
        ) from None


def _option(flag: str, value: object) -> str:
    """An option as the user types it in a shell: `--allowed-host 'name:*'`."""
    return f"{flag} {shlex.quote(str(value))}"


def _check_options(args: argparse.Namespace) -> None:
    """The HTTP options, checked before anything loads; messages in the command's terms."""
    if args.transport != "http":
        return
    for host in args.allowed_host or ():
        if not host.strip():
            example = _option("--allowed-host", "mcp.example.com:*")
            raise ServeError(f"--allowed-host needs a name, e.g. {example}")
    if not args.path.startswith("/"):
        raise ServeError(f"{_option('--path', args.path)} must start with '/', e.g. --path /mcp")
    if not 0 <= args.port <= 65535:
        raise ServeError(f"--port {args.port} must be a whole number from 0 to 65535")
    if args.workers < 1:
        raise ServeError(f"--workers {args.workers} must be 1 or more")
    if args.rate_limit_redis is None and not args.rate_limit and _redis_url(args) is not None:
        raise ServeError(
            f"${REDIS_ENV} is set, but there are no limits to keep in Redis: add them, e.g. "
            f"--rate-limit 60/min, or unset ${REDIS_ENV}"
        )
    _rate_limit(args.rate_limit, _redis_url(args), _redis_flag(args))
    if args.token is not None and not args.token.strip():
        raise ServeError("--token is blank; pass the token, or leave --token out for none")
    if args.token is None and TOKEN_ENV in os.environ and not os.environ[TOKEN_ENV].strip():
        raise ServeError(f"${TOKEN_ENV} is blank; set the token, or unset it for none")


def _allowed_hosts(host: str) -> list[str]:
    """The Host headers to accept when no --allowed-host is given."""
    from ..mcp import serving

    try:
        return serving.allowed_hosts_for(host)
    except ToolregUsageError:  # a wildcard bind: no name to check against
        raise ServeError(
            f"{_option('--host', host)} listens on every interface, so the Host header "
            f"cannot be checked against it; pass {_option('--allowed-host', 'your.server.name:*')}"
            " (repeatable: the names clients use)"
        ) from None


def _check_context(registry: Any, context: Any) -> None:
    """Tools that need a context, served without --context: say so as the command's fix."""
    if context is not None:
        return
    needy = [tool.name for tool in registry.tools() if tool.plan.needs_context]
    if needy:
        names = ", ".join(needy)
        raise ServeError(
            f"{names} {'needs' if len(needy) == 1 else 'need'} a context: pass --context JSON "
            '(the deps every call gets), e.g. --context \'{"user_id": "u1"}\''
        )


def _serve(args: argparse.Namespace, context: Any) -> None:
    from ..mcp import serving  # needs the `mcp` extra: loaded only for this command

    with contextlib.ExitStack() as resources:
        if args.transport == "stdio":
            with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol's
                registry = _load(args.target, resources)
            _check_context(registry, context)
            server = serving.build_server(  # checked before serving
                registry, context=context, tasks=_tasks(args)
            )
            with contextlib.suppress(KeyboardInterrupt):
                serving.serve_stdio(server)
            return
        token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
        hosts = args.allowed_host or _allowed_hosts(args.host)
        registry = _load(args.target, resources)
        _check_context(registry, context)
        limits = _rate_limit(args.rate_limit, _redis_url(args), _redis_flag(args))
        tasks = _tasks(args)
        app = _app(registry, args.path, not args.stateful, token, hosts, context, limits, tasks)
        if args.workers == 1:
            serving.run_http(app, host=args.host, port=args.port, path=args.path)
            return
        settings = {
            "target": args.target,
            "path": args.path,
            "stateless": not args.stateful,
            "allowed_hosts": hosts,
            "context": args.context,
            "rate_limit": args.rate_limit,
            "tasks_queue": args.tasks_queue,
            "tasks_reclaim": args.tasks_reclaim,
        }
        os.environ[_WORKER_ENV] = json.dumps(settings)
        if token is not None:
            os.environ[TOKEN_ENV] = token  # read by each worker, never on a command line
        redis_url = _redis_url(args)
        if redis_url is not None:
            os.environ[REDIS_ENV] = redis_url  # it may hold a password: the same way
        tasks_url = _tasks_url(args)
        if tasks_url is not None:
            os.environ[TASKS_ENV] = tasks_url
        serving.run_http(
            f"{__name__}:worker_app",
            host=args.host,
            port=args.port,
            path=args.path,
            workers=args.workers,
            factory=True,
        )


def _context(text: str | None) -> Any:
    """`--context JSON` as a `context=` factory: the same deps for every call."""
    if text is None:
        return None
    try:
        deps = json.loads(text)
    except ValueError as exc:
        raise ServeError(f"--context is not valid JSON ({exc})") from None
    return lambda request: deps


def _tasks_url(args: argparse.Namespace) -> str | None:
    """`--tasks`, else `$TOOLREG_TASKS_URL`, else None (tasks in the serving process)."""
    if args.tasks is not None:
        return str(args.tasks)
    return os.environ.get(TASKS_ENV) or None


def _tasks(args: argparse.Namespace) -> Any:
    """The `TaskOptions` of `--tasks`, `--tasks-queue` and `--tasks-reclaim` (None: the
    defaults, in the serving process)."""
    url = _tasks_url(args)
    return _task_options(url, args.tasks_queue, args.tasks_reclaim, _tasks_flag(args))


def _tasks_flag(args: argparse.Namespace) -> str:
    return "--tasks" if args.tasks is not None else f"${TASKS_ENV}"


def _task_options(
    url: str | None, queue: str | None, reclaim: float | None, flag: str = "--tasks"
) -> Any:
    if url is None:
        for option, given in (("--tasks-queue", queue), ("--tasks-reclaim", reclaim)):
            if given is not None:
                raise ServeError(
                    f"{option} applies to tasks kept in Redis: add --tasks URL, e.g. "
                    "--tasks redis://127.0.0.1:6379/0"
                )
        return None
    from ..mcp.tasks import TaskOptions
    from ..stores.redis import redacted

    settings: dict[str, Any] = {"backend": url}
    if queue is not None:
        settings["queue"] = queue
    if reclaim is not None:
        settings["reclaim_after"] = reclaim
    try:
        return TaskOptions(**settings)
    except ToolregUsageError as exc:
        if queue is not None and "queue=" in str(exc):
            raise ServeError(
                f"{_option('--tasks-queue', queue)}: 1 to 64 letters, digits, '_', '.' or '-'"
            ) from None
        if reclaim is not None and "reclaim_after=" in str(exc):
            raise ServeError(
                f"--tasks-reclaim {reclaim:g}: a number of seconds > 0, e.g. 30"
            ) from None
        raise ServeError(
            f"{flag} {redacted(url)}: a Redis URL starts with redis://, rediss:// or unix://, "
            "e.g. --tasks redis://127.0.0.1:6379/0"
        ) from None


def _redis_url(args: argparse.Namespace) -> str | None:
    """`--rate-limit-redis`, else `$TOOLREG_RATE_LIMIT_REDIS` (HTTP only), else None."""
    if args.rate_limit_redis is not None:
        return str(args.rate_limit_redis)
    if args.transport != "http":
        return None
    return os.environ.get(REDIS_ENV) or None


def _redis_flag(args: argparse.Namespace) -> str:
    """Where the Redis URL came from, as the user wrote it."""
    return "--rate-limit-redis" if args.rate_limit_redis is not None else f"${REDIS_ENV}"


def _rate_limit(
    rates: list[str] | None, redis_url: str | None = None, flag: str = "--rate-limit-redis"
) -> Any:
    """`--rate-limit 60/min --rate-limit search=10/min` as a `RateLimit` (None: none),
    its buckets in Redis at `redis_url` when given (`flag`: where that URL came from)."""
    if not rates:
        if redis_url is not None:
            raise ServeError(
                "--rate-limit-redis keeps the --rate-limit buckets: add the limits, e.g. "
                "--rate-limit 60/min"
            )
        return None
    from ..mcp.limits import RateLimit, parse_rate
    from ..stores.redis import redacted

    overall: str | None = None
    tools: dict[str, str] = {}
    for rate in rates:
        tool, equals, value = rate.rpartition("=")
        try:
            if equals and not tool.strip():
                raise ToolregUsageError("no tool name")
            parse_rate(value)
        except ToolregUsageError:
            raise ServeError(
                f"{_option('--rate-limit', rate)}: write calls per period, e.g. "
                "--rate-limit 60/min (s, min or h), or for one tool --rate-limit search=10/min"
            ) from None
        if equals:
            tools[tool.strip()] = value
        else:
            overall = value
    try:
        return RateLimit(overall, tools=tools, redis=redis_url)
    except ToolregUsageError:
        shown = "" if redis_url is None else redacted(redis_url)
        raise ServeError(
            f"{flag} {shown}: a Redis URL starts with redis://, rediss:// or unix://, e.g. "
            "--rate-limit-redis redis://127.0.0.1:6379/0"
        ) from None


def _app(
    registry: Any,
    path: str,
    stateless: bool,
    token: str | None,
    hosts: list[str],
    context: Any,
    rate_limit: Any = None,
    tasks: Any = None,
) -> Any:
    from ..mcp import asgi_app

    return asgi_app(
        registry,
        path=path,
        stateless=stateless,
        token=token,
        allowed_hosts=hosts,
        context=context,
        rate_limit=rate_limit,
        tasks=tasks,
    )


def worker_app() -> Any:
    """The ASGI app of one `--workers` process (uvicorn calls this factory in each)."""
    settings = json.loads(os.environ[_WORKER_ENV])
    registry = _load(settings["target"])
    token = os.environ.get(TOKEN_ENV) or None
    context = _context(settings["context"])
    stateless, hosts = settings["stateless"], settings["allowed_hosts"]
    rates = _rate_limit(settings.get("rate_limit"), os.environ.get(REDIS_ENV) or None)
    tasks = _task_options(
        os.environ.get(TASKS_ENV) or None,
        settings.get("tasks_queue"),
        settings.get("tasks_reclaim"),
    )
    return _app(registry, settings["path"], stateless, token, hosts, context, rates, tasks)
