"""`toolreg serve`'s option errors speak the command's language: options as typed in a shell,
never a Python keyword or list (`--allowed-host 'name:*'`, not `allowed_hosts=['name:*']`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolreg.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
WEATHER = str(ROOT / "samples" / "weather.py")
ORDERS = str(ROOT / "samples" / "orders.py")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--host", "0.0.0.0"],
            "--host 0.0.0.0 listens on every interface, so the Host header cannot be checked "
            "against it; pass --allowed-host 'your.server.name:*' (repeatable: the names "
            "clients use)",
        ),
        (["--path", "mcp"], "--path mcp must start with '/', e.g. --path /mcp"),
        (["--port", "70000"], "--port 70000 must be a whole number from 0 to 65535"),
        (["--workers", "0"], "--workers 0 must be 1 or more"),
        (
            ["--allowed-host", " "],
            "--allowed-host needs a name, e.g. --allowed-host 'mcp.example.com:*'",
        ),
        (["--token", " "], "--token is blank; pass the token, or leave --token out for none"),
        *(
            (
                ["--rate-limit", rate],
                f"--rate-limit {shown}: write calls per period, e.g. --rate-limit 60/min "
                "(s, min or h), or for one tool --rate-limit search=10/min",
            )
            for rate, shown in (("10", "10"), ("=5/min", "=5/min"), ("5/week", "5/week"))
        ),
        (
            ["--rate-limit-redis", "redis://127.0.0.1:6379/0"],
            "--rate-limit-redis keeps the --rate-limit buckets: add the limits, e.g. "
            "--rate-limit 60/min",
        ),
        (  # the password is not repeated
            ["--rate-limit", "5/min", "--rate-limit-redis", "http://ops:hunter2@cache:6379"],
            "--rate-limit-redis http://cache:6379: a Redis URL starts with redis://, "
            "rediss:// or unix://, e.g. --rate-limit-redis redis://127.0.0.1:6379/0",
        ),
        (  # the password is not repeated
            ["--tasks", "http://ops:hunter2@cache:6379"],
            "--tasks http://cache:6379: a Redis URL starts with redis://, rediss:// or "
            "unix://, e.g. --tasks redis://127.0.0.1:6379/0",
        ),
        (
            ["--tasks-queue", "billing"],
            "--tasks-queue applies to tasks kept in Redis: add --tasks URL, e.g. "
            "--tasks redis://127.0.0.1:6379/0",
        ),
        (
            ["--tasks-reclaim", "5"],
            "--tasks-reclaim applies to tasks kept in Redis: add --tasks URL, e.g. "
            "--tasks redis://127.0.0.1:6379/0",
        ),
        (
            ["--tasks", "redis://127.0.0.1:6379/0", "--tasks-queue", "a b"],
            "--tasks-queue 'a b': 1 to 64 letters, digits, '_', '.' or '-'",
        ),
        (
            ["--tasks", "redis://127.0.0.1:6379/0", "--tasks-reclaim", "0"],
            "--tasks-reclaim 0: a number of seconds > 0, e.g. 30",
        ),
    ],
)
def test_http_option_errors_name_the_option_as_typed(
    capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", WEATHER, "--transport", "http", *options])
    out, err = capsys.readouterr()
    assert (exit_info.value.code, out) == (2, "")
    assert err == f"toolreg: {message}\n"
    assert "allowed_hosts" not in err
    assert "[" not in err


def test_tools_that_need_a_context_say_pass_context_json() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", "serve", ORDERS],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "toolreg: get_order_detail, list_my_orders, cancel_order need a context: pass "
        '--context JSON (the deps every call gets), e.g. --context \'{"user_id": "u1"}\'\n'
    )
