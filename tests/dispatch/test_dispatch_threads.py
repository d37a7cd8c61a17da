"""Thread safety: registrations and dispatches on one registry from many threads at once."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from toolreg import ToolRegistry

THREADS = 8
ROUNDS = 25


@dataclasses.dataclass
class Pair:
    a: int
    b: int


def run_threads(target: Callable[[int], None], count: int = THREADS) -> list[BaseException]:
    """Start `count` threads together (behind a barrier); return what they raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def body(index: int) -> None:
        try:
            barrier.wait()
            target(index)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    return errors


def test_registrations_and_dispatches_from_many_threads() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def shared(pair: Pair, scale: float = 1.0) -> float:
        """Registered before the threads start; its call plan is built on first use, by all."""
        return (pair.a + pair.b) * scale

    wrong: list[tuple[str, Any, Any]] = []
    lock = threading.Lock()

    def expect(name: str, got: Any, want: Any) -> None:
        if got != want:
            with lock:
                wrong.append((name, got, want))

    def worker(index: int) -> None:
        for r in range(ROUNDS):
            name = f"t{index}_{r}"

            def own(x: int, offset: int = index * 1000 + r) -> int:
                return x + offset

            reg.register_tool(own, name=name)
            result = reg.dispatch_tool(name, {"x": "1"})
            expect(name, result.content, str(1 + index * 1000 + r))
            shared_result = reg.dispatch_tool(
                "shared", {"pair": {"a": index, "b": r}, "scale": 2}, call_id=name
            )
            expect(
                "shared", (shared_result.value, shared_result.call_id), (2.0 * (index + r), name)
            )
            previous = f"t{index}_{r - 1}"
            if r and r % 5 == 0:
                reg.unregister(previous)
                gone = reg.dispatch_tool(previous, "{}")
                expect(previous, gone.error_kind, "unknown_tool")
            missing = reg.dispatch_tool(f"nope_{index}", "{}")
            expect("nope", missing.error_kind, "unknown_tool")

    errors = run_threads(worker)
    assert errors == []
    assert wrong == []
    expected = 1 + THREADS * (ROUNDS - (ROUNDS - 1) // 5)
    assert len(reg) == expected
    assert len(set(reg.names())) == len(reg)


def test_concurrent_first_use_of_many_tools() -> None:
    reg = ToolRegistry()
    for i in range(40):

        def tool(p: Pair, i: int = i) -> int:
            return p.a * p.b + i

        reg.register_tool(tool, name=f"tool_{i}")

    results: dict[tuple[int, int], Any] = {}
    lock = threading.Lock()

    def worker(index: int) -> None:
        for i in range(40):
            value = reg.dispatch_tool(f"tool_{i}", {"p": {"a": index, "b": 2}}).value
            with lock:
                results[(index, i)] = value

    assert run_threads(worker) == []
    assert results == {(t, i): t * 2 + i for t in range(THREADS) for i in range(40)}


def test_async_and_many_dispatches_from_many_threads() -> None:
    reg = ToolRegistry(max_concurrency=4)

    @reg.register_tool
    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return 2 * x

    @reg.register_tool(timeout=5)
    def triple(x: int) -> int:
        return 3 * x

    wrong: list[Any] = []

    def worker(index: int) -> None:
        calls = [("double", {"x": index}), ("triple", {"x": index}), ("double", '{"x": "2"}')]
        for _ in range(5):
            values = [r.value for r in reg.dispatch_many(calls)]
            avalues = [r.value for r in asyncio.run(reg.adispatch_many(calls))]
            if values != avalues or values != [2 * index, 3 * index, 4]:
                wrong.append((index, values, avalues))

    assert run_threads(worker) == []
    assert wrong == []


def test_exports_while_registering() -> None:
    reg = ToolRegistry()

    def worker(index: int) -> None:
        for r in range(20):

            def tool(q: str) -> str:
                return q

            reg.register_tool(tool, name=f"w{index}_{r}")
            names = {entry["function"]["name"] for entry in reg.get_tools()}
            assert f"w{index}_{r}" in names
            assert reg.dispatch_tool(f"w{index}_{r}", {"q": "x"}).content == "x"

    assert run_threads(worker) == []
    assert len(reg) == THREADS * 20
