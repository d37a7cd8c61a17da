"""Resource locks (`register_tool(lock=...)`): calls that use one resource run one at a time.

`ResourceLocks` holds one lock per resource key, made when a call first takes it and gone
when nobody holds or waits for it (so a million accounts cost nothing once their calls are
done). A lock is taken by sync dispatch (a thread waits) and by async dispatch (a task
awaits, never blocking its event loop) alike, first come, first served; a `Lease` gives it
back once, when the tool has really stopped.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = ["Lease", "ResourceLocks"]


class _Waiter:
    """One call waiting for a lock: `wake()` tells it the lock is its own now."""

    __slots__ = ("granted", "wake")

    def __init__(self, wake: Callable[[], None]) -> None:
        self.granted = False
        self.wake = wake


class Lease:
    """A call's hold on one resource's lock; `release()` gives it back (once)."""

    __slots__ = ("_key", "_locks", "_released")

    def __init__(self, locks: ResourceLocks, key: Hashable) -> None:
        self._locks = locks
        self._key = key
        self._released = False

    def release(self) -> None:
        with self._locks.guard:
            if self._released:
                return
            self._released = True
        self._locks.hand_over(self._key)


class ResourceLocks:
    """The locks of one dispatcher's calls, by resource key."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self._held: dict[Hashable, deque[_Waiter]] = {}  # a key here is held; its waiters

    def __len__(self) -> int:
        """Resources held now."""
        return len(self._held)

    def acquire(self, key: Hashable, timeout: float | None) -> Lease | None:
        """Take `key`'s lock, waiting at most `timeout` seconds (None: as long as it takes);
        its lease, or None when the time ran out."""
        event = threading.Event()
        waiter = _Waiter(event.set)
        with self.guard:
            waiting = self._held.get(key)
            if waiting is None:
                self._held[key] = deque()
                return Lease(self, key)
            waiting.append(waiter)
        if event.wait(timeout):
            return Lease(self, key)
        return self._gave_up(key, waiter)

    async def aacquire(self, key: Hashable, timeout: float | None) -> Lease | None:
        """`acquire` for async code: the task awaits its turn."""
        import asyncio  # loaded by the running event loop already

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        waiter = _Waiter(functools.partial(_wake_on, loop, future))
        with self.guard:
            waiting = self._held.get(key)
            if waiting is None:
                self._held[key] = deque()
                return Lease(self, key)
            waiting.append(waiter)
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            return self._gave_up(key, waiter)
        except BaseException:  # cancelled while waiting: the lock goes on if it came
            lease = self._gave_up(key, waiter)
            if lease is not None:
                lease.release()
            raise
        return Lease(self, key)

    def _gave_up(self, key: Hashable, waiter: _Waiter) -> Lease | None:
        """A waiter stops waiting: the lease, if the lock came meanwhile; else None."""
        with self.guard:
            if not waiter.granted:
                waiting = self._held.get(key)
                if waiting is not None:
                    with contextlib.suppress(ValueError):
                        waiting.remove(waiter)
                return None
        return Lease(self, key)

    def hand_over(self, key: Hashable) -> None:
        """The holder of `key` is done: the first waiter takes the lock, or it is free."""
        while True:
            with self.guard:
                waiting = self._held.get(key)
                if waiting is None:
                    return
                if not waiting:
                    del self._held[key]
                    return
                waiter = waiting.popleft()
                waiter.granted = True
            try:
                waiter.wake()
                return
            except RuntimeError:  # its event loop is closed: nobody takes it there
                continue


def _wake_on(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]) -> None:
    loop.call_soon_threadsafe(_resolve, future)  # RuntimeError: the loop is closed


def _resolve(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)
