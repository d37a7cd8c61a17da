"""What the model reads when a tool raises: `errors="redact"` (default), `"mask"`, `"full"`;
and the application's logs, which get the whole story."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest

from toolreg import Injected, ToolContext, ToolError, ToolRegistry, UsageError

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


@dataclass
class Session:
    user: str
    database_url: str


def leaky_registry(errors: Any = "redact") -> ToolRegistry:
    reg = ToolRegistry(errors=errors)

    @reg.register_tool
    def connect(ctx: ToolContext[Session]) -> str:
        """Connect to the user's database."""
        raise ConnectionError(
            f"cannot reach postgres://admin:hunter2@db.internal:5432/app for "
            f"{ctx.deps.user} (key {TOKEN}) from /srv/app/settings.py and "
            f"C:\\Users\\ada\\app.ini: {ctx.deps.database_url}"
        )

    @reg.register_tool
    def refuse(reason: str) -> str:
        """Refuse with a reason."""
        raise ToolError(f"Not allowed: {reason} (see /srv/rules.txt, key {TOKEN})")

    @reg.register_tool
    def plain() -> str:
        """Fail plainly."""
        raise ValueError("the amount must be positive, got -3")

    return reg


SESSION = Session(user="ada.lovelace", database_url="sqlite:///var/lib/app/private.db")


def test_redact_is_the_default_and_removes_what_must_not_leave() -> None:
    result = leaky_registry().dispatch_tool("connect", "{}", context=SESSION)
    assert result.error_kind == "execution_error"
    assert result.content == (
        "Tool 'connect' failed: ConnectionError: cannot reach postgres://[redacted]@"
        "db.internal:5432/app for [redacted] (key [redacted]) from [redacted] and "
        "[redacted]: [redacted]"
    )
    for secret in ("hunter2", "admin", "ada.lovelace", TOKEN, "/srv/app", "Users", "private.db"):
        assert secret not in result.content
    assert "hunter2" in str(result.exception)  # the application keeps the original


def test_an_ordinary_message_is_sent_unchanged_when_redacting() -> None:
    result = leaky_registry().dispatch_tool("plain", "{}")
    assert result.content == "Tool 'plain' failed: ValueError: the amount must be positive, got -3"


def test_mask_sends_only_that_the_tool_failed() -> None:
    result = leaky_registry("mask").dispatch_tool("connect", "{}", context=SESSION)
    assert result.content == "Tool 'connect' failed."


def test_full_sends_the_message_as_it_is() -> None:
    result = leaky_registry("full").dispatch_tool("connect", "{}", context=SESSION)
    assert "postgres://admin:hunter2@db.internal" in result.content
    assert TOKEN in result.content


@pytest.mark.parametrize("mode", ["redact", "mask", "full"])
def test_tool_errors_and_validation_messages_are_sent_as_written(mode: str) -> None:
    reg = leaky_registry(mode)
    refused = reg.dispatch_tool("refuse", '{"reason": "quota"}')
    assert refused.content == f"Not allowed: quota (see /srv/rules.txt, key {TOKEN})"
    invalid = reg.dispatch_tool("refuse", '{"reason": 5}')
    assert (
        invalid.content
        == "Invalid arguments for tool 'refuse': reason: expected string, got integer."
    )


def test_an_unknown_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"errors='loud'.*'redact', 'mask', 'full'"):
        ToolRegistry(errors="loud")  # type: ignore[arg-type]


def test_raw_injected_context_values_are_redacted_too() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def lookup(token: Annotated[dict[str, Any], Injected]) -> str:
        """Look something up."""
        raise PermissionError(f"token {token['api_key']} rejected for {token['tenant']}")

    result = reg.dispatch_tool(
        "lookup", "{}", context={"api_key": "abc-123", "tenant": "acme-corp"}
    )
    assert (
        result.content
        == "Tool 'lookup' failed: PermissionError: token [redacted] rejected for [redacted]"
    )


def test_without_any_logging_setup_a_failure_is_one_line_on_stderr() -> None:
    code = (
        "import sys, toolreg\n"
        "assert 'logging' not in sys.modules\n"
        "reg = toolreg.ToolRegistry()\n"
        "@reg.register_tool\n"
        "def boom() -> str:\n"
        "    '''Fail.'''\n"
        "    raise RuntimeError('disk full at /srv/data')\n"
        "print(reg.dispatch_tool('boom', '{}').content)\n"
        "@reg.register_tool\n"
        "def nope() -> str:\n"
        "    '''Refuse.'''\n"
        "    raise toolreg.ToolError('no')\n"
        "print(reg.dispatch_tool('nope', '{}').content)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Tool 'boom' failed: RuntimeError: disk full at [redacted]",
        "no",
    ]
    # logging's last resort: the one WARNING line (the logs get the text whole), no traceback
    assert done.stderr == "tool 'boom' failed: RuntimeError: disk full at /srv/data\n"


def test_failures_reach_the_applications_logger_as_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="toolreg"):
        leaky_registry().dispatch_tool("plain", "{}")
    (record,) = caplog.records
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        "tool 'plain' failed: ValueError: the amount must be positive, got -3"
    )
    assert record.exc_info is None  # no traceback at WARNING
    assert isinstance(record.tool_exception, ValueError)  # for a handler that wants it


def test_the_traceback_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG", logger="toolreg"):
        leaky_registry().dispatch_tool("plain", "{}")
    warning, debug = caplog.records
    assert (warning.levelname, debug.levelname) == ("WARNING", "DEBUG")
    assert warning.exc_info is None
    assert debug.getMessage() == warning.getMessage()
    assert debug.exc_info is not None
    assert isinstance(debug.exc_info[1], ValueError)
    assert "Traceback (most recent call last):" in caplog.text


def test_a_refusal_is_logged_at_info_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("DEBUG", logger="toolreg"):
        leaky_registry().dispatch_tool("refuse", {"reason": "not today"})
    (record,) = caplog.records
    assert record.levelname == "INFO"
    assert record.getMessage() == (
        f"tool 'refuse' refused: Not allowed: not today (see /srv/rules.txt, key {TOKEN})"
    )
    assert record.exc_info is None


@pytest.mark.parametrize(
    "text",
    [
        "x" * 100_000,  # oversized
        "line one\nline two\r\n\tthree",  # several lines
        "bad \ud800 half \udfff",  # lone surrogates
    ],
    ids=["oversized", "multiline", "surrogates"],
)
def test_the_logged_line_is_bounded_one_line_and_encodable(
    caplog: pytest.LogCaptureFixture, text: str
) -> None:
    reg = ToolRegistry(errors="full")

    @reg.register_tool
    def crash() -> str:
        """Crash."""
        raise ValueError(text)

    @reg.register_tool
    def refuse() -> str:
        """Refuse."""
        raise ToolError(text)

    with caplog.at_level("INFO", logger="toolreg"):
        reg.dispatch_tool("crash", "{}")
        reg.dispatch_tool("refuse", "{}")
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]
    for record in caplog.records:
        line = record.getMessage()
        assert len(line) <= 600
        assert "\n" not in line
        assert "\r" not in line
        line.encode("utf-8")  # no lone surrogate


class _Counted(Exception):
    """An exception whose text is costly: its `__str__` counts how often it is made."""

    calls = 0

    def __str__(self) -> str:
        type(self).calls += 1
        return "the ledger is locked"


class _Broken(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def _raising_registry(exc: Exception, errors: Any = "redact") -> ToolRegistry:
    reg = ToolRegistry(errors=errors)

    @reg.register_tool
    def post() -> str:
        """Post the ledger."""
        raise exc

    @reg.register_tool
    async def post_later() -> str:
        """Post the ledger, later."""
        raise exc

    return reg


@pytest.mark.parametrize("errors", ["redact", "mask", "full"])
def test_an_exceptions_text_is_made_once_per_failure(
    caplog: pytest.LogCaptureFixture, errors: str
) -> None:
    import asyncio

    reg = _raising_registry(_Counted(), errors)
    with caplog.at_level("WARNING", logger="toolreg"):
        _Counted.calls = 0
        sync = reg.dispatch_tool("post", "{}")
        assert _Counted.calls == 1
        later = asyncio.run(reg.adispatch_tool("post_later", "{}"))
        assert _Counted.calls == 2
        reg.dispatch_many([("post", "{}"), ("post_later", "{}")])
        assert _Counted.calls == 4
    assert [r.getMessage() for r in caplog.records][:2] == [
        "tool 'post' failed: _Counted: the ledger is locked",
        "tool 'post_later' failed: _Counted: the ledger is locked",
    ]
    if errors == "mask":
        assert sync.content == "Tool 'post' failed."
    else:
        assert sync.content == "Tool 'post' failed: _Counted: the ledger is locked"
        assert later.content == "Tool 'post_later' failed: _Counted: the ledger is locked"


def test_an_exception_whose_str_raises_is_named_by_its_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reg = _raising_registry(_Broken(), "full")
    with caplog.at_level("WARNING", logger="toolreg"):
        result = reg.dispatch_tool("post", "{}")
    assert not result.ok
    assert result.content == "Tool 'post' failed: _Broken"
    assert isinstance(result.exception, _Broken)
    (record,) = caplog.records
    assert record.getMessage() == "tool 'post' failed: _Broken"


def test_a_failed_call_leaves_no_reference_cycle() -> None:
    """A failed result holds the exception, whose traceback holds dispatch's frames: nothing
    in those frames may point back at the result, or every failure would wait for the
    cycle collector (and keep the tool's arguments alive until then). What the collector
    finds is looked at, not counted: other threads of the test run make garbage of their
    own."""
    import asyncio
    import gc
    import logging
    import types

    from toolreg import ToolResult

    reg = ToolRegistry()

    @reg.register_tool
    def boom(a: int) -> int:
        """Always fails."""
        raise ValueError("boom")

    async def many() -> None:
        for _ in range(20):
            assert not (await reg.adispatch_tool("boom", {"a": 1})).ok

    def ours(found: object) -> bool:
        if isinstance(found, (ToolResult, ValueError)):
            return True
        code = found.f_code if isinstance(found, types.FrameType) else None
        return code is not None and "dispatch" in code.co_filename

    logger = logging.getLogger("toolreg")
    level = logger.level
    logger.setLevel(logging.ERROR)  # a kept log record would keep the failures alive
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage
    try:
        for _ in range(20):
            result = reg.dispatch_tool("boom", {"a": 1})
            assert result.exception is not None
            assert not reg.dispatch_tool("nope", {}).ok
        asyncio.run(many())
        del result
        gc.collect()
        assert [type(found).__name__ for found in gc.garbage if ours(found)] == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
        logger.setLevel(level)
