"""Dispatch step 6: tools that need the user's confirmation."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from toolreg import Tool, ToolRegistry

DECLINED = "Tool '{}' was not run: the user declined. Do not retry it unless the user asks."
UNASKED = (
    "Tool '{}' was not run: it needs the user's confirmation and none was asked for. "
    "Do not retry it unless the user asks."
)
FAILED = (
    "Tool '{}' was not run: the confirmation step failed. Do not retry it unless the user asks."
)


def make_registry() -> tuple[ToolRegistry, list[Any]]:
    reg = ToolRegistry()
    ran: list[Any] = []

    @reg.register_tool(destructive=True)
    def delete_file(path: Path, force: bool = False) -> str:
        """Delete a file."""
        ran.append(("delete_file", path, force))
        return f"deleted {path}"

    @reg.register_tool(requires_confirmation=True)
    def send_mail(to: str, body: str) -> str:
        """Send an e-mail."""
        ran.append(("send_mail", to))
        return "sent"

    @reg.register_tool(destructive=True)
    async def adrop(table: str) -> str:
        """Drop a table."""
        ran.append(("adrop", table))
        return "dropped"

    @reg.register_tool
    def harmless(n: int = 0) -> int:
        """Needs no confirmation."""
        ran.append(("harmless", n))
        return n

    return reg, ran


class Recorder:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[tuple[Tool, dict[str, Any]]] = []

    def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Any:
        self.asked.append((tool, arguments))
        return self.answer


@pytest.mark.parametrize("tool", ["delete_file", "send_mail"])
def test_without_a_callback_the_call_is_denied(tool: str) -> None:
    reg, ran = make_registry()
    args = {"path": "/x"} if tool == "delete_file" else {"to": "a", "body": "b"}
    result = reg.dispatch_tool(tool, args, call_id="c")
    assert not result.ok
    assert result.error_kind == "denied"
    assert result.content == UNASKED.format(tool)
    assert result.call_id == "c"
    assert ran == []


def test_approved_call_runs_and_the_callback_saw_the_exact_call() -> None:
    reg, ran = make_registry()
    confirm = Recorder(True)
    result = reg.dispatch_tool(
        "delete_file", '{"path": "/tmp/a.txt", "force": "true"}', confirm=confirm
    )
    assert result.ok
    assert result.content == "deleted /tmp/a.txt"
    assert len(confirm.asked) == 1
    tool, arguments = confirm.asked[0]
    assert tool is reg["delete_file"]
    assert tool.name == "delete_file"
    assert tool.destructive
    # validated, coerced and converted: exactly what the function receives
    assert arguments == {"path": Path("/tmp/a.txt"), "force": True}
    assert ran == [("delete_file", Path("/tmp/a.txt"), True)]


@pytest.mark.parametrize("answer", [False, None, 1, "yes", [True]])
def test_anything_but_true_denies(answer: Any) -> None:
    reg, ran = make_registry()
    confirm = Recorder(answer)
    result = reg.dispatch_tool("send_mail", {"to": "bob", "body": "hi"}, confirm=confirm)
    assert result.error_kind == "denied"
    assert result.content == DECLINED.format("send_mail")
    assert confirm.asked[0][1] == {"to": "bob", "body": "hi"}
    assert ran == []


def test_callback_decides_per_call() -> None:
    reg, ran = make_registry()

    def only_tmp(tool: Tool, arguments: dict[str, Any]) -> bool:
        return str(arguments["path"]).startswith("/tmp/")

    assert reg.dispatch_tool("delete_file", {"path": "/tmp/x"}, confirm=only_tmp).ok
    denied = reg.dispatch_tool("delete_file", {"path": "/etc/passwd"}, confirm=only_tmp)
    assert denied.content == DECLINED.format("delete_file")
    assert ran == [("delete_file", Path("/tmp/x"), False)]


def test_failing_callback_denies_and_keeps_the_exception() -> None:
    reg, ran = make_registry()

    def broken(tool: Tool, arguments: dict[str, Any]) -> bool:
        raise RuntimeError("prompt crashed")

    result = reg.dispatch_tool("send_mail", {"to": "a", "body": "b"}, confirm=broken)
    assert result.error_kind == "denied"
    assert result.content == FAILED.format("send_mail")
    assert isinstance(result.exception, RuntimeError)
    assert "crashed" not in result.content
    assert ran == []


def test_callback_is_not_asked_for_tools_that_need_no_confirmation() -> None:
    reg, _ = make_registry()
    confirm = Recorder(False)
    assert reg.dispatch_tool("harmless", {"n": 2}, confirm=confirm).value == 2
    assert confirm.asked == []


def test_callback_is_not_asked_for_invalid_calls() -> None:
    reg, _ = make_registry()
    confirm = Recorder(True)
    result = reg.dispatch_tool("delete_file", {"path": 5}, confirm=confirm)
    assert result.error_kind == "invalid_arguments"
    assert confirm.asked == []


def test_callback_may_not_change_the_arguments() -> None:
    reg, ran = make_registry()

    def meddle(tool: Tool, arguments: dict[str, Any]) -> bool:
        arguments["path"] = Path("/")
        return True

    assert reg.dispatch_tool("delete_file", {"path": "/tmp/x"}, confirm=meddle).ok
    assert ran == [("delete_file", Path("/tmp/x"), False)]


def test_async_callback_in_async_dispatch() -> None:
    reg, ran = make_registry()
    asked: list[tuple[str, dict[str, Any]]] = []

    async def confirm(tool: Tool, arguments: dict[str, Any]) -> bool:
        await asyncio.sleep(0)
        asked.append((tool.name, arguments))
        return arguments.get("table") != "users"

    async def run() -> list[str]:
        ok = await reg.adispatch_tool("adrop", {"table": "tmp"}, confirm=confirm)
        no = await reg.adispatch_tool("adrop", {"table": "users"}, confirm=confirm)
        sync_tool = await reg.adispatch_tool("delete_file", {"path": "/a"}, confirm=confirm)
        unasked = await reg.adispatch_tool("adrop", {"table": "tmp"})
        return [ok.content, no.content, sync_tool.content, unasked.content]

    assert asyncio.run(run()) == [
        "dropped",
        DECLINED.format("adrop"),
        "deleted /a",
        UNASKED.format("adrop"),
    ]
    assert asked == [
        ("adrop", {"table": "tmp"}),
        ("adrop", {"table": "users"}),
        ("delete_file", {"path": Path("/a")}),  # what the model sent; defaults are not added
    ]
    assert ran == [("adrop", "tmp"), ("delete_file", Path("/a"), False)]


def test_sync_callback_in_async_dispatch_and_async_callback_in_sync_dispatch() -> None:
    reg, _ = make_registry()

    async def yes(tool: Tool, arguments: dict[str, Any]) -> bool:
        return True

    async def no(tool: Tool, arguments: dict[str, Any]) -> bool:
        return False

    assert reg.dispatch_tool("send_mail", {"to": "a", "body": "b"}, confirm=yes).ok
    assert reg.dispatch_tool("send_mail", {"to": "a", "body": "b"}, confirm=no).content == (
        DECLINED.format("send_mail")
    )
    result = asyncio.run(reg.adispatch_tool("adrop", {"table": "t"}, confirm=Recorder(True)))
    assert result.ok


def test_async_callback_in_sync_dispatch_under_a_running_loop() -> None:
    reg, _ = make_registry()

    async def yes(tool: Tool, arguments: dict[str, Any]) -> bool:
        await asyncio.sleep(0)
        return True

    async def run() -> str:
        return reg.dispatch_tool("send_mail", {"to": "a", "body": "b"}, confirm=yes).content

    assert asyncio.run(run()) == "sent"


def test_failing_async_callback_denies() -> None:
    reg, _ = make_registry()

    async def broken(tool: Tool, arguments: dict[str, Any]) -> bool:
        raise ValueError("nope")

    result = asyncio.run(reg.adispatch_tool("adrop", {"table": "t"}, confirm=broken))
    assert result.content == FAILED.format("adrop")
    assert isinstance(result.exception, ValueError)


def test_dispatch_many_asks_for_each_call() -> None:
    reg, _ = make_registry()
    confirm = Recorder(True)
    results = reg.dispatch_many(
        [("delete_file", {"path": "/a"}), ("harmless", {}), ("delete_file", {"path": "/b"})],
        confirm=confirm,
    )
    assert [r.ok for r in results] == [True, True, True]
    assert sorted(str(a["path"]) for _, a in confirm.asked) == ["/a", "/b"]


def test_confirmations_of_concurrent_calls_are_asked_one_at_a_time() -> None:
    reg = ToolRegistry()

    @reg.register_tool(destructive=True)
    def remove(item: int) -> int:
        """Remove an item."""
        return item

    lock, active, peak = threading.Lock(), [0], [0]

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return True

    results = reg.dispatch_many([("remove", {"item": i}) for i in range(5)], confirm=confirm)
    assert [r.content for r in results] == ["0", "1", "2", "3", "4"]
    assert peak[0] == 1


def test_the_callback_gets_a_deep_copy() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool(destructive=True)
    def purge(paths: list[str], options: dict[str, list[int]]) -> str:
        """Purge paths."""
        seen.append((paths, options))
        return "purged"

    def meddle(tool: Tool, args: dict[str, Any]) -> bool:
        args["paths"].append("/etc")  # a nested change: must not reach the call
        args["options"]["keep"].clear()
        return True

    result = reg.dispatch_tool(
        "purge", '{"paths": ["/tmp/a"], "options": {"keep": [1, 2]}}', confirm=meddle
    )
    assert result.ok
    assert seen == [(["/tmp/a"], {"keep": [1, 2]})]


def _in_time(fn: Any, seconds: float = 10.0) -> Any:
    """Run `fn` in a thread; fail (instead of hanging the suite) if it deadlocks."""
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "deadlock: the dispatch never returned"
    return box["value"]


def test_a_callback_may_dispatch_and_dispatch_many_without_deadlock() -> None:
    reg, ran = make_registry()

    def approve_after_a_dry_run(tool: Tool, args: dict[str, Any]) -> bool:
        if tool.name == "delete_file":  # asks about send_mail calls, from pool threads too
            results = reg.dispatch_many(
                [
                    ("send_mail", '{"to": "a@x", "body": "1"}'),
                    ("send_mail", '{"to": "b@x", "body": "2"}'),
                ],
                confirm=lambda t, a: True,
            )
            single = reg.dispatch_tool("send_mail", '{"to": "c@x", "body": "3"}', confirm=yes)
            return all(r.ok for r in [*results, single])
        return True

    def yes(tool: Tool, args: dict[str, Any]) -> bool:
        return True

    result = _in_time(
        lambda: reg.dispatch_tool(
            "delete_file", '{"path": "/tmp/x"}', confirm=approve_after_a_dry_run
        )
    )
    assert result.ok, result.content
    assert sorted(r[1] for r in ran if r[0] == "send_mail") == ["a@x", "b@x", "c@x"]


def test_an_async_callback_may_dispatch_without_deadlock() -> None:
    reg, ran = make_registry()

    async def approve(tool: Tool, args: dict[str, Any]) -> bool:
        if tool.name == "delete_file":
            inner = await reg.adispatch_many(
                [("send_mail", '{"to": "a@x", "body": "1"}')], confirm=lambda t, a: True
            )
            return inner[0].ok
        return True

    async def main() -> Any:
        return await asyncio.wait_for(
            reg.adispatch_tool("delete_file", '{"path": "/tmp/x"}', confirm=approve), 10
        )

    assert asyncio.run(main()).ok
    assert [r[0] for r in ran] == ["send_mail", "delete_file"]


def test_no_event_loop_is_kept_alive_after_it_is_closed() -> None:
    import gc
    import weakref

    reg, _ = make_registry()
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def slow_yes(tool: Tool, args: dict[str, Any]) -> bool:
        await asyncio.sleep(0.01)
        return True

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        calls = [("delete_file", f'{{"path": "/tmp/{i}"}}') for i in range(3)]
        results = await reg.adispatch_many(calls, confirm=slow_yes)  # they wait for each other
        assert all(r.ok for r in results)

    for _ in range(3):
        asyncio.run(main())
    deadline = time.monotonic() + 5  # the tools' own threads may still be finishing
    while any(ref() is not None for ref in loops) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert [ref() for ref in loops] == [None, None, None]


def test_a_cancelled_waiter_does_not_block_the_next_question() -> None:
    reg, ran = make_registry()

    async def main() -> None:
        release = asyncio.Event()

        async def hold(tool: Tool, args: dict[str, Any]) -> bool:
            await release.wait()
            return True

        first = asyncio.create_task(
            reg.adispatch_tool("delete_file", '{"path": "/a"}', confirm=hold)
        )
        await asyncio.sleep(0.01)
        waiter = asyncio.create_task(
            reg.adispatch_tool("delete_file", '{"path": "/b"}', confirm=hold)
        )
        await asyncio.sleep(0.01)
        waiter.cancel()  # gave up while waiting for its turn
        release.set()
        assert (await first).ok
        third = await asyncio.wait_for(
            reg.adispatch_tool("delete_file", '{"path": "/c"}', confirm=hold), 5
        )
        assert third.ok
        with pytest.raises(asyncio.CancelledError):
            await waiter

    asyncio.run(main())
    assert [str(r[1]) for r in ran] == ["/a", "/c"]
