"""Dispatch step 7: calling sync and async tools, time limits, and the tool's exceptions."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Coroutine
from typing import Any

import pytest

from toolreg import ToolError, ToolExecutionError, ToolRegistry, ToolTimeoutError

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

INTERRUPTED = "interrupted while running, so it may have had effects."


class Broken(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")


def make_registry(**settings: Any) -> ToolRegistry:
    reg = ToolRegistry(**settings)

    @reg.register_tool
    def add(a: int, b: int = 2) -> int:
        """Add."""
        return a + b

    @reg.register_tool
    async def aadd(a: int, b: int = 2) -> int:
        """Add, asynchronously."""
        await asyncio.sleep(0)
        return a + b

    @reg.register_tool
    def where() -> dict[str, Any]:
        """Which thread runs me."""
        return {"thread": threading.get_ident(), "request": request_id.get()}

    @reg.register_tool
    async def awhere() -> dict[str, Any]:
        """Which thread runs me (async)."""
        return {"thread": threading.get_ident(), "request": request_id.get()}

    @reg.register_tool
    def boom(kind: str) -> str:
        """Fails in many ways."""
        if kind == "tool":
            raise ToolError("The city 'Atlantis' does not exist. Ask the user for another.")
        if kind == "value":
            raise ValueError("bad value")
        if kind == "multiline":
            raise ValueError('line one\n  line two\n\tFile "/srv/app/secret.py", line 3')
        if kind == "long":
            raise ValueError("x" * 2000)
        if kind == "empty":
            raise RuntimeError()
        if kind == "broken":
            raise Broken()
        if kind == "timeout":
            raise TimeoutError("upstream took too long")
        if kind == "keyboard":
            raise KeyboardInterrupt
        if kind == "exit":
            raise SystemExit(3)
        if kind == "key":
            raise KeyError("missing")
        return "fine"

    @reg.register_tool
    async def aboom(kind: str) -> str:
        """Fails in many ways, asynchronously."""
        await asyncio.sleep(0)
        return boom(kind)

    @reg.register_tool(timeout=0.1)
    def slow(seconds: float) -> str:
        """Sleeps."""
        time.sleep(seconds)
        return "done"

    @reg.register_tool(timeout=0.1)
    async def aslow(seconds: float) -> str:
        """Sleeps, asynchronously."""
        await asyncio.sleep(seconds)
        return "done"

    @reg.register_tool(timeout=0.25)
    def slow_boom(kind: str) -> str:
        """Fails inside its time limit, in a worker thread."""
        return boom(kind)

    return reg


# -- sync and async -----------------------------------------------------------------------


def test_sync_tool_from_sync_dispatch_runs_in_the_calling_thread() -> None:
    reg = make_registry()
    assert reg.dispatch_tool("add", '{"a": 1}').value == 3
    assert reg.dispatch_tool("where", "{}").value["thread"] == threading.get_ident()


def test_async_tool_from_sync_dispatch() -> None:
    reg = make_registry()
    result = reg.dispatch_tool("aadd", '{"a": 40}')
    assert result.ok
    assert result.value == 42
    assert result.content == "42"


def test_async_tool_from_sync_dispatch_inside_a_running_loop() -> None:
    reg = make_registry()

    async def run() -> list[Any]:
        return [reg.dispatch_tool("aadd", {"a": 1}).value, reg.dispatch_tool("add", {"a": 1}).value]

    assert asyncio.run(run()) == [3, 3]


def test_async_tool_in_async_dispatch_runs_on_the_loop() -> None:
    reg = make_registry()

    async def run() -> tuple[int, Any]:
        result = await reg.adispatch_tool("awhere", "{}")
        return threading.get_ident(), result.value["thread"]

    loop_thread, tool_thread = asyncio.run(run())
    assert loop_thread == tool_thread


def test_sync_tool_in_async_dispatch_runs_in_a_thread_without_blocking_the_loop() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def block(seconds: float) -> int:
        time.sleep(seconds)
        return threading.get_ident()

    async def run() -> tuple[int, int, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        result = await reg.adispatch_tool("block", {"seconds": 0.2})
        task.cancel()
        return threading.get_ident(), result.value, ticks

    loop_thread, tool_thread, ticks = asyncio.run(run())
    assert tool_thread != loop_thread
    assert ticks >= 5  # the loop kept running while the tool slept


def test_context_variables_reach_the_tool() -> None:
    reg = make_registry()
    token = request_id.set("req-1")
    try:
        assert reg.dispatch_tool("where", "{}").value["request"] == "req-1"
        assert reg.dispatch_tool("awhere", "{}").value["request"] == "req-1"
        assert asyncio.run(reg.adispatch_tool("where", "{}")).value["request"] == "req-1"
    finally:
        request_id.reset(token)


def test_positional_only_parameters() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def span(a: int = 1, b: int = 2, /, c: int = 3) -> str:
        return f"{a} {b} {c}"

    assert reg.dispatch_tool("span", "{}").content == "1 2 3"
    assert reg.dispatch_tool("span", {"b": 5}).content == "1 5 3"  # a keeps its default
    assert reg.dispatch_tool("span", {"a": 7}).content == "7 2 3"
    assert reg.dispatch_tool("span", {"c": 0, "b": 9, "a": 8}).content == "8 9 0"


def test_sync_function_returning_a_coroutine_is_awaited() -> None:
    reg = ToolRegistry()

    async def impl(x: int) -> int:
        return x * 2

    @reg.register_tool
    def wrapper(x: int) -> Coroutine[Any, Any, int]:
        return impl(x)

    assert reg.dispatch_tool("wrapper", {"x": 2}).value == 4
    assert asyncio.run(reg.adispatch_tool("wrapper", {"x": 3})).value == 6


# -- time limits --------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["slow", "aslow"])
def test_timeout_in_sync_dispatch(tool: str) -> None:
    reg = make_registry()
    start = time.perf_counter()
    result = reg.dispatch_tool(tool, {"seconds": 1.0}, call_id="t1")
    waited = time.perf_counter() - start
    assert not result.ok
    assert result.error_kind == "timeout"
    assert result.content == f"Tool '{tool}' timed out after 0.1 s: {INTERRUPTED}"
    assert isinstance(result.error, ToolTimeoutError)
    assert result.error.timeout == 0.1
    assert result.call_id == "t1"
    assert result.tool_name == tool
    assert 0.09 <= waited < 0.8
    assert result.elapsed >= 0.09


@pytest.mark.parametrize("tool", ["slow", "aslow"])
def test_timeout_in_async_dispatch(tool: str) -> None:
    reg = make_registry()
    start = time.perf_counter()
    result = asyncio.run(reg.adispatch_tool(tool, {"seconds": 1.0}))
    assert time.perf_counter() - start < 0.8
    assert result.error_kind == "timeout"
    assert result.content == f"Tool '{tool}' timed out after 0.1 s: {INTERRUPTED}"


@pytest.mark.parametrize("tool", ["slow", "aslow"])
def test_within_the_time_limit(tool: str) -> None:
    reg = make_registry()
    assert reg.dispatch_tool(tool, {"seconds": 0.001}).content == "done"
    assert asyncio.run(reg.adispatch_tool(tool, {"seconds": 0.001})).content == "done"


def test_timed_out_async_tool_is_cancelled() -> None:
    reg = ToolRegistry()
    events: list[str] = []

    @reg.register_tool(timeout=0.05)
    async def sleeper() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return "done"

    async def run() -> str:
        result = await reg.adispatch_tool("sleeper", "{}")
        await asyncio.sleep(0.01)
        return result.content

    assert asyncio.run(run()) == f"Tool 'sleeper' timed out after 0.05 s: {INTERRUPTED}"
    assert events == ["cancelled"]


def test_cancelling_async_dispatch_cancels_the_tool() -> None:
    reg = ToolRegistry()
    events: list[str] = []

    @reg.register_tool(timeout=10)
    async def sleeper() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return "done"

    async def run() -> None:
        task = asyncio.create_task(reg.adispatch_tool("sleeper", "{}"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.01)

    asyncio.run(run())
    assert events == ["cancelled"]


def test_sync_dispatch_of_a_slow_async_tool_returns_at_its_limit() -> None:
    reg = ToolRegistry()

    @reg.register_tool(timeout=0.2)
    async def slow() -> str:
        """Wait on a blocking call in a thread."""
        await asyncio.to_thread(time.sleep, 2)
        return "done"

    started = time.perf_counter()
    result = reg.dispatch_tool("slow")
    took = time.perf_counter() - started
    assert result.content == f"Tool 'slow' timed out after 0.2 s: {INTERRUPTED}"
    assert took < 1.5  # not the 2 s the cancelled tool takes to wind down


def test_one_time_limit_covers_a_sync_wrapper_and_the_awaitable_it_returns() -> None:
    async def part_two() -> str:
        await asyncio.sleep(0.3)
        return "done"

    reg = ToolRegistry()

    @reg.register_tool(timeout=0.4)
    def wrapper() -> Any:
        """Half the work now, half in a coroutine."""
        time.sleep(0.3)
        return part_two()

    assert (
        reg.dispatch_tool("wrapper").content
        == f"Tool 'wrapper' timed out after 0.4 s: {INTERRUPTED}"
    )

    async def in_async() -> str:
        return (await reg.adispatch_tool("wrapper")).content

    assert asyncio.run(in_async()) == f"Tool 'wrapper' timed out after 0.4 s: {INTERRUPTED}"


def test_timeout_is_not_confused_with_a_timeout_error_raised_by_the_tool() -> None:
    reg = make_registry()
    result = reg.dispatch_tool("slow_boom", {"kind": "timeout"})
    assert result.error_kind == "execution_error"
    assert result.content == "Tool 'slow_boom' failed: TimeoutError: upstream took too long"


# -- the tool's exceptions ----------------------------------------------------------------


@pytest.mark.parametrize("tool", ["boom", "aboom", "slow_boom"])
def test_tool_error_sends_exactly_its_message(tool: str) -> None:
    reg = make_registry()
    for result in (
        reg.dispatch_tool(tool, {"kind": "tool"}),
        asyncio.run(reg.adispatch_tool(tool, {"kind": "tool"})),
    ):
        assert result.error_kind == "execution_error"
        assert result.content == "The city 'Atlantis' does not exist. Ask the user for another."
        assert isinstance(result.exception, ToolError)
        assert isinstance(result.error, ToolExecutionError)
        assert result.error.__cause__ is result.exception


def test_tool_error_message_is_sent_even_when_errors_are_masked() -> None:
    reg = make_registry(errors="mask")
    result = reg.dispatch_tool("boom", {"kind": "tool"})
    assert result.content == "The city 'Atlantis' does not exist. Ask the user for another."


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        ("value", "Tool '{}' failed: ValueError: bad value"),
        ("key", "Tool '{}' failed: KeyError: 'missing'"),
        ("empty", "Tool '{}' failed: RuntimeError"),
        ("broken", "Tool '{}' failed: Broken"),
        (
            "multiline",
            "Tool '{}' failed: ValueError: line one line two File \"[redacted]\", line 3",
        ),
        ("long", "Tool '{}' failed: ValueError: " + "x" * 500),
    ],
)
@pytest.mark.parametrize("tool", ["boom", "aboom", "slow_boom"])
def test_other_exceptions_become_a_one_line_message(tool: str, kind: str, content: str) -> None:
    reg = make_registry()
    for result in (
        reg.dispatch_tool(tool, {"kind": kind}),
        asyncio.run(reg.adispatch_tool(tool, {"kind": kind})),
    ):
        assert result.error_kind == "execution_error"
        assert result.content == content.format(tool)
        assert "\n" not in result.content
        assert "Traceback" not in result.content
        assert __file__ not in result.content
        assert result.exception is not None
        assert type(result.exception).__name__ in result.content
        assert result.value is None


def test_a_tool_error_with_a_broken_message_is_still_a_result() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    reg = ToolRegistry()

    @reg.register_tool
    def boom() -> str:
        """Fail oddly."""
        raise ToolError(Broken())  # type: ignore[arg-type]

    assert reg.dispatch_tool("boom").content == "Tool 'boom' failed: ToolError"


def test_original_exception_is_kept_for_logging() -> None:
    reg = make_registry()
    result = reg.dispatch_tool("boom", {"kind": "value"})
    assert isinstance(result.exception, ValueError)
    assert str(result.exception) == "bad value"
    assert result.exception.__traceback__ is not None
    assert result.error is not None
    assert result.error.__cause__ is result.exception
    assert "exception" not in repr(result)  # kept out of reprs and logs of the result


@pytest.mark.parametrize("tool", ["boom", "aboom", "slow_boom"])
def test_errors_mask_hides_the_message(tool: str) -> None:
    reg = make_registry(errors="mask")
    for result in (
        reg.dispatch_tool(tool, {"kind": "value"}),
        asyncio.run(reg.adispatch_tool(tool, {"kind": "value"})),
    ):
        assert result.error_kind == "execution_error"
        assert result.content == f"Tool '{tool}' failed."
        assert isinstance(result.exception, ValueError)


def test_errors_mask_does_not_hide_the_models_own_mistakes() -> None:
    reg = make_registry(errors="mask")
    assert reg.dispatch_tool("add", {}).content == (
        "Invalid arguments for tool 'add': missing required property 'a'."
    )
    assert reg.dispatch_tool("slow", {"seconds": 1}).content == (
        "Tool 'slow' timed out after 0.1 s: interrupted while running, so it may have had effects."
    )


@pytest.mark.parametrize("kind", ["keyboard", "exit"])
@pytest.mark.parametrize("tool", ["boom", "aboom", "slow_boom"])
def test_keyboard_interrupt_and_system_exit_propagate_from_sync_dispatch(
    tool: str, kind: str
) -> None:
    reg = make_registry()
    expected = KeyboardInterrupt if kind == "keyboard" else SystemExit
    with pytest.raises(expected):
        reg.dispatch_tool(tool, {"kind": kind})


@pytest.mark.parametrize("kind", ["keyboard", "exit"])
@pytest.mark.parametrize("tool", ["boom", "aboom", "slow_boom"])
def test_keyboard_interrupt_and_system_exit_propagate_from_async_dispatch(
    tool: str, kind: str
) -> None:
    reg = make_registry()
    expected = KeyboardInterrupt if kind == "keyboard" else SystemExit
    caught: list[type[BaseException]] = []

    async def run() -> None:
        try:
            await reg.adispatch_tool(tool, {"kind": kind})
        except BaseException as exc:  # caught inside, so asyncio.run itself is not disturbed
            caught.append(type(exc))

    asyncio.run(run())
    assert caught == [expected]


def test_a_failing_tool_does_not_break_the_next_call() -> None:
    reg = make_registry()
    assert not reg.dispatch_tool("boom", {"kind": "value"}).ok
    assert reg.dispatch_tool("boom", {"kind": "none"}).content == "fine"


def test_tool_raising_a_call_error_reports_that_kind_under_its_own_name() -> None:
    from toolreg import InvalidArgumentsError

    reg = ToolRegistry()

    @reg.register_tool
    def outer(q: str) -> str:
        raise InvalidArgumentsError("q must name a known city.", tool_name="inner")

    result = reg.dispatch_tool("outer", {"q": "x"})
    assert result.error_kind == "invalid_arguments"
    assert result.content == "q must name a known city."
    assert result.tool_name == "outer"


def test_sync_tools_under_async_dispatch_reuse_idle_threads_and_never_queue() -> None:
    """Starting a thread per call costs more than thirty dispatches: an idle one is reused.
    Calls at the same time still each get a thread of their own, and a stuck tool holds
    only its own."""
    reg = ToolRegistry()

    @reg.register_tool
    def where(seconds: float = 0) -> int:
        time.sleep(seconds)
        return threading.get_native_id()  # the OS's id: not handed to a new thread at once

    async def run() -> tuple[set[int], set[int], float]:
        one_by_one = {(await reg.adispatch_tool("where", {})).value for _ in range(20)}
        stuck = asyncio.ensure_future(reg.adispatch_tool("where", {"seconds": 0.6}))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        together = await asyncio.gather(
            *(reg.adispatch_tool("where", {"seconds": 0.2}) for _ in range(6))
        )
        elapsed = time.monotonic() - started
        await stuck
        return one_by_one, {r.value for r in together}, elapsed

    one_by_one, together, elapsed = asyncio.run(run())
    assert len(one_by_one) == 1  # one thread served all twenty, one after the other
    assert len(together) == 6  # six at once: six threads
    assert elapsed < 0.55  # none waited for another, nor for the stuck one


def test_call_threads_work_in_a_forked_child() -> None:
    """A forked child inherits the list of idle threads but not the threads."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    reg = make_registry()
    asyncio.run(reg.adispatch_tool("add", {"a": 1}))  # leaves an idle thread behind
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_dispatch_in_child, args=(reg,))
    child.start()
    child.join(20)
    assert child.exitcode == 0


def _dispatch_in_child(reg: ToolRegistry) -> None:
    result = asyncio.run(asyncio.wait_for(reg.adispatch_tool("add", {"a": 1}), 5))
    raise SystemExit(0 if result.value == 3 else 1)
