"""What the store tests share: a real `redis-server` on a free loopback port, and stores."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith((b"+PONG", b"-NOAUTH"))  # up (with a password)
    except OSError:
        return False


class RedisServer:
    """A `redis-server` of its own on a free loopback port (no disk); `stop()` kills it,
    `start()` starts it again on the same port. Skips the test when it cannot start."""

    def __init__(self, folder: Path, *options: str) -> None:
        if REDIS_SERVER is None:
            pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
        pytest.importorskip("redis", reason="the redis package is not installed (toolreg[redis])")
        self.folder = folder
        self.options = options
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        for _attempt in range(3):  # another process may take the free port first
            self.port = _free_port()
            if self.start():
                return
        pytest.skip("redis-server did not start on a loopback port")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> bool:
        assert REDIS_SERVER is not None
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.folder), "--protected-mode", "yes"]
        server = subprocess.Popen(
            [*command, *self.options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while server.poll() is None and not _answers(self.port) and time.monotonic() < deadline:
            time.sleep(0.02)
        if server.poll() is None and _answers(self.port):
            self.process = server
            return True
        server.kill()
        server.wait()
        return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a `redis-server` started for this session (loopback only, no disk)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.stop()
