"""Real services for the tests: a PostgreSQL server of its own on a free loopback port.

Debian's `postgresql` package (`/usr/lib/postgresql/<version>/bin`, or `TOOLREG_PG_BIN`):
`initdb` makes a cluster in a temporary directory and `postgres` serves it on 127.0.0.1
(trust authentication, loopback only, no disk sync). PostgreSQL refuses to run as root: as
root, both run as the `postgres` user (`runuser`), in a directory it owns. One server per
test session (per xdist worker); each test module takes a database of its own
(`PostgresServer.database`). Without PostgreSQL the tests that need it skip, except in CI
(`CI=true`), where they fail.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _pg_bin() -> Path | None:
    given = os.environ.get("TOOLREG_PG_BIN")
    found = [given] if given else sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in found:
        if folder and Path(folder, "postgres").exists() and Path(folder, "initdb").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is needed in CI: {why}")
    pytest.skip(why)


class PostgresServer:
    """A PostgreSQL server of the test session's own (see the module)."""

    def __init__(self) -> None:
        folder = _pg_bin()
        if folder is None:
            _missing("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        assert folder is not None
        try:
            import psycopg  # noqa: F401 - DBOS's PostgreSQL driver
        except ImportError:
            _missing("psycopg is not installed (pip install 'toolreg[durable]')")
        self.bin = folder
        root = os.geteuid() == 0
        # as root: in /tmp, which the postgres user can reach (TMPDIR may be root's own)
        self.root = Path(tempfile.mkdtemp(prefix="toolreg-pg-", dir="/tmp" if root else None))
        self.data = self.root / "data"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.as_user: list[str] = []
        if root:
            runuser = shutil.which("runuser")
            if runuser is None:
                _missing("running as root, and runuser is missing to run PostgreSQL as postgres")
            self.as_user = [str(runuser), "-u", "postgres", "--"]
            shutil.chown(self.root, "postgres")
        log = self.root / "initdb.log"
        with open(log, "wb") as out:
            made = subprocess.run(
                [
                    *self.as_user,
                    str(folder / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=180,
            )
        if made.returncode != 0:
            _missing(f"initdb failed: {log.read_text(errors='replace')[-400:]}")
        for _attempt in range(3):
            self.port = _free_port()
            if self._start():
                return
        _missing("PostgreSQL did not start on a loopback port")

    def _start(self) -> bool:
        command = [
            *self.as_user,
            str(self.bin / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-k",
            str(self.root),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
        ]
        log = open(self.root / "postgres.log", "ab")  # noqa: SIM115 - the server's, kept open
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if self._query("select 1") == "1":
                return True
            time.sleep(0.1)
        self.stop()
        return False

    def _query(self, sql: str, database: str = "postgres") -> str | None:
        import psycopg

        try:
            with psycopg.connect(self.url(database), autocommit=True, connect_timeout=2) as conn:
                row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
        except psycopg.Error:
            return None
        return None if row is None else str(row[0])

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def database(self, prefix: str = "t") -> str:
        """A new, empty database; its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'create database "{name}"')  # type: ignore[arg-type]
        return self.url(name)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()  # "smart" shutdown: the server's own signal handling
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (skips the test when there is none)."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()
