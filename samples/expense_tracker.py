"""Record expenses from natural language: "I spent $5 on coffee today, tax rate 0.2".

What it shows:
- the tool does the arithmetic (gross = net x (1 + tax rate), exact decimals): models are
  bad at arithmetic;
- `get_current_date` gives a timezone-aware date: models invent dates;
- a missing value (no date) comes back to the model as a clear observation naming the
  missing field, instead of an invented value;
- expenses are stored in a real SQLite database (`TOOLREG_EXPENSES_DB` or `set_database`).

    python samples/expense_tracker.py
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import tempfile
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from toolreg import Param, ToolError, ToolRegistry
from toolreg.cli.demo import Demo, run_demo
from toolreg.testing import last_tool_result, text, tool_call

registry = ToolRegistry()

_DEFAULT_DB = Path(tempfile.gettempdir()) / "toolreg-expenses.sqlite3"
_database = Path(os.environ.get("TOOLREG_EXPENSES_DB", _DEFAULT_DB))
_CENT = Decimal("0.01")


def set_database(path: str | os.PathLike[str]) -> None:
    """Use another SQLite file (tests use a temporary one)."""
    global _database
    _database = Path(path)


def _connect() -> sqlite3.Connection:
    db = sqlite3.connect(_database)
    db.execute(
        "CREATE TABLE IF NOT EXISTS expenses (id INTEGER PRIMARY KEY, day TEXT NOT NULL, "
        "category TEXT NOT NULL, net TEXT NOT NULL, tax_rate TEXT NOT NULL, gross TEXT NOT NULL, "
        "currency TEXT NOT NULL, note TEXT NOT NULL)"
    )
    return db


def _zone(timezone: str) -> ZoneInfo:
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(
            f"Unknown time zone {timezone!r}. Use an IANA name such as Asia/Shanghai."
        ) from None


@registry.register_tool(read_only=True)
def get_current_date(
    timezone: Annotated[str, Param(description="IANA time zone, e.g. Asia/Shanghai")] = "UTC",
) -> dict[str, str]:
    """Get today's date and the current time in a time zone. Use it whenever the user says
    "today", "yesterday" or gives no date, before recording or reporting expenses."""
    now = dt.datetime.now(_zone(timezone))
    return {"date": now.date().isoformat(), "weekday": now.strftime("%A"), "now": now.isoformat()}


@registry.register_tool
def record_expense(
    amount: Annotated[Decimal, Param(description="Net amount before tax, e.g. 5 or 12.50", gt=0)],
    category: Annotated[str, Param(description="What it was for, e.g. coffee", min_length=1)],
    date: Annotated[dt.date, Param(description="Day of the expense (YYYY-MM-DD)")],
    tax_rate: Annotated[
        float, Param(description="Tax rate as a fraction, 0.2 = 20%", ge=0, le=1)
    ] = 0.0,
    currency: Annotated[str, Param(description="ISO currency code", pattern="^[A-Z]{3}$")] = "USD",
    note: str = "",
) -> dict[str, object]:
    """Record one expense and compute its gross amount (net plus tax). Use it when the user
    says they spent or paid money. Never compute the gross amount yourself.

    Args:
        note: Free text the user added, if any.
    """
    rate = Decimal(str(tax_rate))
    gross = (amount * (1 + rate)).quantize(_CENT, rounding=ROUND_HALF_UP)
    with _connect() as db:
        cursor = db.execute(
            "INSERT INTO expenses (day, category, net, tax_rate, gross, currency, note) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (date.isoformat(), category, str(amount), str(rate), str(gross), currency, note),
        )
    return {
        "id": cursor.lastrowid,
        "date": date.isoformat(),
        "category": category,
        "net": str(amount.quantize(_CENT)),
        "tax_rate": float(rate),
        "gross": str(gross),
        "currency": currency,
    }


@registry.register_tool(read_only=True)
def expense_report(
    start: Annotated[dt.date, "First day of the period (YYYY-MM-DD)"],
    end: Annotated[dt.date, "Last day of the period (YYYY-MM-DD), inclusive"],
    category: Annotated[str | None, "Only this category; null for all"] = None,
) -> dict[str, object]:
    """Summarise recorded expenses between two dates: totals per category and overall.
    Use it when the user asks how much they spent."""
    if end < start:
        raise ToolError("The end date is before the start date.")
    query = "SELECT category, gross, currency FROM expenses WHERE day BETWEEN ? AND ?"
    params: list[str] = [start.isoformat(), end.isoformat()]
    if category:
        query += " AND category = ?"
        params.append(category)
    totals: dict[str, Decimal] = {}
    with _connect() as db:
        rows = db.execute(query, params).fetchall()
    for name, gross, currency in rows:
        key = f"{name} ({currency})"
        totals[key] = totals.get(key, Decimal(0)) + Decimal(gross)
    return {
        "period": f"{start.isoformat()}..{end.isoformat()}",
        "count": len(rows),
        "by_category": {k: str(v) for k, v in sorted(totals.items())},
        "total": str(sum(totals.values(), Decimal(0))),
    }


def _record_with_date(request: dict[str, object]) -> object:
    today = last_tool_result(request)["date"]
    return tool_call("record_expense", amount=5, category="coffee", date=today, tax_rate=0.2)


def _summarise(request: dict[str, object]) -> object:
    saved = last_tool_result(request)
    return text(
        f"Recorded {saved['category']} on {saved['date']}: {saved['net']} {saved['currency']} "
        f"net, {saved['gross']} {saved['currency']} with 20% tax."
    )


DEMO = Demo(
    registry=registry,
    prompts=["I spent $5 on coffee today, tax rate 0.2"],
    script=[
        tool_call("record_expense", amount=5, category="coffee", tax_rate=0.2),  # forgot the date
        tool_call("get_current_date", timezone="UTC"),
        _record_with_date,
        _summarise,
    ],
)

if __name__ == "__main__":
    run_demo(DEMO)
