"""Orders: the security example.

- `get_order_detail` takes the current user from the injected `ToolContext`: the model
  cannot choose whose orders it reads, and someone else's order is answered exactly like a
  missing one;
- results pass a `result_filter`, so no full phone number ever reaches the model;
- `cancel_order` is destructive: it runs only when the user confirms that exact call;
- the other tools are read-only.

    python samples/orders.py          # asks before cancelling (declines without a terminal)
    toolreg demo --sample orders --yes
    toolreg call samples/orders.py get_order_detail '{"order_id": "A1001"}' \
        --context '{"user_id": "u1"}'
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from toolreg import Param, ToolContext, ToolError, ToolRegistry
from toolreg.cli.demo import Demo, run_demo
from toolreg.testing import last_tool_result, text, tool_call

registry = ToolRegistry()

_DEFAULT_DB = Path(tempfile.gettempdir()) / "toolreg-orders.sqlite3"
_database = Path(os.environ.get("TOOLREG_ORDERS_DB", _DEFAULT_DB))
_ORDERS = [
    ("A1001", "u1", "Wireless mouse", "29.90", "shipped", "13812345678"),
    ("A1002", "u1", "USB-C cable", "9.90", "processing", "13812345678"),
    ("A2001", "u2", "Mechanical keyboard", "89.00", "processing", "13987654321"),
]
OrderId = Annotated[str, Param(description="Order number, e.g. A1001", pattern=r"^[A-Z]\d{4}$")]


class Session(TypedDict):
    """Who is talking: set by the application from its login, never by the model."""

    user_id: str


_seeded: set[Path] = set()


def set_database(path: str | os.PathLike[str]) -> None:
    """Use another SQLite file (tests use a temporary one)."""
    global _database
    _database = Path(path)


def _connect() -> sqlite3.Connection:
    db = sqlite3.connect(_database)
    if _database not in _seeded:  # a known state for every run of the demo
        db.execute("DROP TABLE IF EXISTS orders")
        db.execute(
            "CREATE TABLE orders (id TEXT PRIMARY KEY, user_id TEXT, item TEXT, amount TEXT, "
            "status TEXT, phone TEXT)"
        )
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", _ORDERS)
        db.commit()
        _seeded.add(_database)
    return db


def mask_phones(value: Any) -> Any:
    """Result filter: keep the first 3 and last 4 digits of any phone number."""
    if isinstance(value, dict):
        return {k: mask_phones(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_phones(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\b(\d{3})\d{4}(\d{4})\b", r"\1****\2", value)
    return value


def _own_order(order_id: str, user_id: str) -> dict[str, str]:
    with _connect() as db:
        row = db.execute(
            "SELECT id, item, amount, status, phone FROM orders WHERE id = ? AND user_id = ?",
            (order_id, user_id),
        ).fetchone()
    if row is None:  # someone else's order looks exactly like a missing one
        raise ToolError(f"Order {order_id} was not found among your orders.")
    keys = ("order_id", "item", "amount", "status", "contact_phone")
    return dict(zip(keys, row))


@registry.register_tool(read_only=True, result_filter=mask_phones)
def get_order_detail(order_id: OrderId, ctx: ToolContext[Session]) -> dict[str, str]:
    """Get the details of one of the current user's orders: item, amount, status and
    contact phone. Use it when the user asks about a specific order."""
    return _own_order(order_id, ctx.deps["user_id"])


@registry.register_tool(read_only=True, result_filter=mask_phones)
def list_my_orders(
    ctx: ToolContext[Session],
    status: Annotated[Literal["processing", "shipped", "cancelled"] | None, "Filter"] = None,
) -> list[dict[str, str]]:
    """List the current user's orders, optionally only those with one status. Use it when
    the user asks what they ordered or does not know an order number."""
    query = "SELECT id, item, status FROM orders WHERE user_id = ?"
    params = [ctx.deps["user_id"]]
    if status is not None:
        query += " AND status = ?"
        params.append(status)
    with _connect() as db:
        rows = db.execute(query, params).fetchall()
    return [{"order_id": i, "item": item, "status": s} for i, item, s in rows]


@registry.register_tool(destructive=True)
def cancel_order(
    order_id: OrderId,
    reason: Annotated[str, Param(description="Why the user cancels", max_length=200)],
    ctx: ToolContext[Session],
) -> dict[str, str]:
    """Cancel one of the current user's orders that has not shipped yet. Use it only when
    the user clearly asks to cancel; the user is asked to confirm first."""
    order = _own_order(order_id, ctx.deps["user_id"])
    if order["status"] != "processing":
        raise ToolError(f"Order {order_id} is {order['status']} and can no longer be cancelled.")
    with _connect() as db:
        db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
    return {"order_id": order_id, "status": "cancelled", "reason": reason}


def _after_cancel(request: dict[str, Any]) -> Any:
    outcome = last_tool_result(request)
    if isinstance(outcome, dict) and outcome.get("status") == "cancelled":
        return text(f"Done: order {outcome['order_id']} is cancelled.")
    return text("I did not cancel the order: it was not confirmed.")


DEMO = Demo(
    registry=registry,
    context=Session(user_id="u1"),
    prompts=[
        "What's the status of order A1002, and who is the contact?",
        "And order A2001?",
        "Please cancel A1002, I ordered it by mistake.",
    ],
    script=[
        tool_call("get_order_detail", order_id="A1002"),
        lambda r: text(
            f"Order A1002 ({last_tool_result(r)['item']}) is {last_tool_result(r)['status']}; "
            f"contact {last_tool_result(r)['contact_phone']}."
        ),
        tool_call("get_order_detail", order_id="A2001"),
        text("I can't find order A2001 among your orders."),
        tool_call("cancel_order", order_id="A1002", reason="ordered by mistake"),
        _after_cancel,
    ],
)

if __name__ == "__main__":
    run_demo(DEMO)
