""" "Which users registered today?": the model must chain two tools.

`get_current_time` tells the model what "today" is (models do not know), and
`users_registered_on` lists the sign-ups of one day from a SQLite database. A model that
skips the first call has no date to pass to the second.

    python samples/user_registry.py
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from toolreg import Param, ToolError, ToolRegistry
from toolreg.cli.demo import Demo, run_demo
from toolreg.testing import last_tool_result, text, tool_call

registry = ToolRegistry()

_DEFAULT_DB = Path(tempfile.gettempdir()) / "toolreg-users.sqlite3"
_database = Path(os.environ.get("TOOLREG_USERS_DB", _DEFAULT_DB))

# (name, email, days before now, hour of day in UTC): seeded relative to today.
_SEED = [
    ("Li Wei", "li.wei@example.com", 0, 1),
    ("Ana Souza", "ana@example.com", 0, 0),
    ("Tom Becker", "tom@example.com", 1, 15),
    ("Chen Jing", "chen.jing@example.com", 3, 9),
]


def set_database(path: str | os.PathLike[str]) -> None:
    """Use another SQLite file (tests use a temporary one)."""
    global _database
    _database = Path(path)


_seeded: set[Path] = set()


def _connect() -> sqlite3.Connection:
    fresh = _database not in _seeded  # seeded once per process, relative to today
    db = sqlite3.connect(_database)
    db.execute(
        "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "email TEXT NOT NULL, registered_at TEXT NOT NULL)"
    )
    if fresh:
        today = dt.datetime.now(dt.timezone.utc).replace(minute=0, second=0, microsecond=0)
        rows = [
            (name, email, (today - dt.timedelta(days=days)).replace(hour=hour).isoformat())
            for name, email, days, hour in _SEED
        ]
        db.execute("DELETE FROM users")
        db.executemany("INSERT INTO users (name, email, registered_at) VALUES (?, ?, ?)", rows)
        db.commit()
        _seeded.add(_database)
    return db


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(
            f"Unknown time zone {name!r}. Use an IANA name such as Europe/Berlin."
        ) from None


@registry.register_tool(read_only=True)
def get_current_time(
    timezone: Annotated[str, Param(description="IANA time zone, e.g. Asia/Shanghai")] = "UTC",
) -> dict[str, str]:
    """Get the current date and time. Use it first whenever the user says "today",
    "yesterday" or "this week", because you do not know the date."""
    now = dt.datetime.now(_zone(timezone))
    return {"now": now.isoformat(timespec="seconds"), "date": now.date().isoformat()}


@registry.register_tool(read_only=True)
def users_registered_on(
    day: Annotated[dt.date, "The calendar day (YYYY-MM-DD) in the given time zone"],
    timezone: Annotated[str, "IANA time zone the day is meant in"] = "UTC",
) -> dict[str, object]:
    """List the users who registered on one calendar day. Use it to answer questions
    about sign-ups on a given date; get the date with get_current_time first."""
    zone = _zone(timezone)
    start = dt.datetime.combine(day, dt.time(0), zone)
    end = start + dt.timedelta(days=1)
    with _connect() as db:
        rows = db.execute("SELECT name, email, registered_at FROM users").fetchall()
    users = [
        {"name": name, "email": email, "registered_at": stamp}
        for name, email, stamp in rows
        if start <= dt.datetime.fromisoformat(stamp) < end
    ]
    return {"day": day.isoformat(), "timezone": timezone, "count": len(users), "users": users}


def _ask_for_today(request: dict[str, object]) -> object:
    return tool_call("users_registered_on", day=last_tool_result(request)["date"])


def _answer(request: dict[str, object]) -> object:
    found = last_tool_result(request)
    names = ", ".join(u["name"] for u in found["users"]) or "nobody"
    return text(f"{found['count']} user(s) registered today ({found['day']}): {names}.")


DEMO = Demo(
    registry=registry,
    prompts=["Which users registered today?"],
    script=[tool_call("get_current_time"), _ask_for_today, _answer],
)

if __name__ == "__main__":
    run_demo(DEMO)
