"""The samples: every tool through dispatch, and every scripted conversation end to end."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from toolreg.cli.demo import SCRIPTED_NOTICE, run_demo
from toolreg.cli.lint import lint_registry
from toolreg.cli.target import load_file
from toolreg.testing import ScriptedServer, call_tool

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def sample(name: str) -> ModuleType:
    return load_file(SAMPLES / f"{name}.py")


@pytest.fixture(autouse=True)
def _no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TOOLREG_MODEL", raising=False)


@pytest.fixture
def expenses(tmp_path: Path) -> ModuleType:
    module = sample("expense_tracker")
    module.set_database(tmp_path / "expenses.sqlite3")
    return module


@pytest.fixture
def users(tmp_path: Path) -> ModuleType:
    module = sample("user_registry")
    module.set_database(tmp_path / "users.sqlite3")
    return module


@pytest.fixture
def orders(tmp_path: Path) -> ModuleType:
    module = sample("orders")
    module.set_database(tmp_path / "orders.sqlite3")
    return module


def ok(result: Any) -> Any:
    assert result.ok, result.content
    return json.loads(result.content)


@pytest.mark.parametrize(
    "name",
    ["weather", "expense_tracker", "user_registry", "orders", "chatglm3_tools", "approvals"],
)
def test_sample_passes_lint(name: str) -> None:
    assert lint_registry(sample(name).registry) == []


def test_weather_chatglm3_style_schema() -> None:
    tool = sample("weather").registry["get_weather"]
    assert tool.parameters["required"] == ["city_name"]
    assert tool.parameters["properties"]["unit"]["default"] == "celsius"


def test_weather_tool() -> None:
    reg = sample("weather").registry
    assert ok(call_tool("get_weather", {"city_name": "Paris", "unit": "fahrenheit"}, registry=reg))[
        "temperature"
    ] == pytest.approx(53.6)
    missing = call_tool("get_weather", {"city_name": "Atlantis"}, registry=reg)
    assert not missing.ok
    assert missing.content.startswith("No weather data for 'Atlantis'. Known cities: Beijing,")


def test_expense_gross_is_computed_exactly(expenses: ModuleType) -> None:
    reg = expenses.registry
    saved = ok(
        call_tool(
            "record_expense",
            {"amount": 5, "category": "coffee", "date": "2026-11-30", "tax_rate": 0.2},
            registry=reg,
        )
    )
    assert saved == {
        "id": 1,
        "date": "2026-11-30",
        "category": "coffee",
        "net": "5.00",
        "tax_rate": 0.2,
        "gross": "6.00",
        "currency": "USD",
    }
    odd = ok(
        call_tool(
            "record_expense",
            {"amount": "19.99", "category": "books", "date": "2026-11-29", "tax_rate": 0.075},
            registry=reg,
        )
    )
    assert odd["gross"] == "21.49"  # 21.489... rounded half up, no float error


def test_expense_missing_date_is_reported_not_invented(expenses: ModuleType) -> None:
    result = call_tool(
        "record_expense", {"amount": 5, "category": "coffee"}, registry=expenses.registry
    )
    assert not result.ok
    assert (
        result.content
        == "Invalid arguments for tool 'record_expense': missing required property 'date'."
    )
    report = call_tool(
        "expense_report", {"start": "2000-01-01", "end": "2100-01-01"}, registry=expenses.registry
    )
    assert ok(report)["count"] == 0


def test_expense_rejects_bad_values(expenses: ModuleType) -> None:
    reg = expenses.registry
    # the bound is in the schema (Param(gt=0) on a Decimal), for a number and a numeric string
    schema = reg["record_expense"].parameters["properties"]["amount"]["anyOf"]
    assert schema[0] == {"type": "number", "exclusiveMinimum": 0}
    assert schema[1]["description"] == "a decimal number > 0"
    for amount in (-1, 0, "-1", "0.00"):
        negative = call_tool(
            "record_expense",
            {"amount": amount, "category": "x", "date": "2026-01-01"},
            registry=reg,
        )
        assert (
            negative.content == "Invalid arguments for tool 'record_expense': amount: must be > 0."
        )
    rate = call_tool(
        "record_expense",
        {"amount": 1, "category": "x", "date": "2026-01-01", "tax_rate": 20},
        registry=reg,
    )
    assert rate.content == "Invalid arguments for tool 'record_expense': tax_rate: must be <= 1."


def test_expense_current_date_is_timezone_aware(expenses: ModuleType) -> None:
    today = ok(
        call_tool("get_current_date", {"timezone": "Asia/Shanghai"}, registry=expenses.registry)
    )
    now = dt.datetime.fromisoformat(today["now"])
    assert now.utcoffset() == dt.timedelta(hours=8)
    assert today["date"] == now.date().isoformat()
    bad = call_tool("get_current_date", {"timezone": "Mars/Olympus"}, registry=expenses.registry)
    assert (
        bad.content == "Unknown time zone 'Mars/Olympus'. Use an IANA name such as Asia/Shanghai."
    )


def test_expense_report_sums_by_category(expenses: ModuleType) -> None:
    reg = expenses.registry
    for amount, category, day in [
        (5, "coffee", "2026-11-01"),
        (7, "coffee", "2026-11-02"),
        (20, "taxi", "2026-11-02"),
        (1, "coffee", "2026-12-01"),
    ]:
        ok(
            call_tool(
                "record_expense",
                {"amount": amount, "category": category, "date": day},
                registry=reg,
            )
        )
    report = ok(
        call_tool("expense_report", {"start": "2026-11-01", "end": "2026-11-30"}, registry=reg)
    )
    assert report == {
        "period": "2026-11-01..2026-11-30",
        "count": 3,
        "by_category": {"coffee (USD)": "12.00", "taxi (USD)": "20.00"},
        "total": "32.00",
    }


def test_users_registered_today(users: ModuleType) -> None:
    reg = users.registry
    today = ok(call_tool("get_current_time", {}, registry=reg))["date"]
    found = ok(call_tool("users_registered_on", {"day": today}, registry=reg))
    assert found["count"] == len(found["users"])
    yesterday = (dt.date.fromisoformat(today) - dt.timedelta(days=1)).isoformat()
    earlier = ok(call_tool("users_registered_on", {"day": yesterday}, registry=reg))
    names = {u["name"] for u in found["users"]} | {u["name"] for u in earlier["users"]}
    assert "Tom Becker" in names
    bad = call_tool("users_registered_on", {"day": "yesterday"}, registry=reg)
    assert not bad.ok
    assert "day: expected an ISO 8601 date" in bad.content


def test_orders_context_decides_the_user(orders: ModuleType) -> None:
    reg = orders.registry
    session = orders.Session(user_id="u1")
    mine = ok(call_tool("get_order_detail", {"order_id": "A1001"}, registry=reg, context=session))
    assert mine["contact_phone"] == "138****5678"  # filtered: never the full number
    theirs = call_tool("get_order_detail", {"order_id": "A2001"}, registry=reg, context=session)
    assert theirs.content == "Order A2001 was not found among your orders."
    smuggled = call_tool(
        "get_order_detail",
        {"order_id": "A2001", "ctx": {"user_id": "u2"}},
        registry=reg,
        context=session,
    )
    assert not smuggled.ok
    assert "unexpected property 'ctx'" in smuggled.content


def test_orders_cancel_needs_confirmation(orders: ModuleType) -> None:
    reg = orders.registry
    session = orders.Session(user_id="u1")
    args = {"order_id": "A1002", "reason": "mistake"}
    denied = call_tool("cancel_order", args, registry=reg, context=session)
    assert denied.error_kind == "denied"
    seen: list[dict[str, Any]] = []
    approved = call_tool(
        "cancel_order",
        args,
        registry=reg,
        context=session,
        confirm=lambda t, a: seen.append(a) or True,
    )
    assert ok(approved) == {"order_id": "A1002", "status": "cancelled", "reason": "mistake"}
    assert seen == [args]
    again = call_tool(
        "cancel_order", args, registry=reg, context=session, confirm=lambda t, a: True
    )
    assert again.content == "Order A1002 is cancelled and can no longer be cancelled."


def test_orders_tools_are_read_only_where_possible(orders: ModuleType) -> None:
    flags = {t.name: (t.read_only, t.destructive) for t in orders.registry.tools()}
    assert flags == {
        "get_order_detail": (True, False),
        "list_my_orders": (True, False),
        "cancel_order": (False, True),
    }


@pytest.mark.parametrize(
    ("name", "confirm", "last_line"),
    [
        ("weather", None, "assistant: 北京今天晴，18°C，湿度 30%；巴黎多云，12°C，湿度 70%。"),
        ("expense_tracker", None, "net, 6.00 USD with 20% tax."),
        ("user_registry", None, "user(s) registered today"),
        ("orders", "y", "assistant: Done: order A1002 is cancelled."),
        ("orders", "n", "assistant: I did not cancel the order: it was not confirmed."),
        ("approvals", "y", "assistant: Paid 120.00 EUR to Ada;"),
        ("approvals", "n", "assistant: I did not pay: Tool 'pay' was not run: the user declined."),
    ],
)
def test_scripted_conversation(
    name: str, confirm: str | None, last_line: str, tmp_path: Path
) -> None:
    module = sample(name)
    if hasattr(module, "set_database"):
        module.set_database(tmp_path / "db.sqlite3")
    out = io.StringIO()
    reply = run_demo(module.DEMO, out=out, confirm=confirm)
    lines = out.getvalue().splitlines()
    assert lines[0] == SCRIPTED_NOTICE
    assert last_line in lines[-1]
    assert reply.stop_reason == "answer"
    assert all(r.call_id for r in reply.tool_results)


def run_sample(*args: str) -> subprocess.CompletedProcess[str]:
    """`python samples/approvals.py ...` in a process of its own, as one web request."""
    return subprocess.run(
        [sys.executable, str(SAMPLES / "approvals.py"), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_approvals_across_two_requests(tmp_path: Path) -> None:
    state = tmp_path / "pending.json"
    first = run_sample("--state", str(state), "ask", "Pay 120 EUR to Ada")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        'waiting for approval: call_2 pay({"payee": "Ada", "amount": 120})',
        f"state saved to {state}",
    ]
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert saved["status"] == "approval_required"
    assert [p["call_id"] for p in saved["pending"]] == ["call_2"]

    second = run_sample("--state", str(state), "decide", "call_2", "yes")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["assistant: Paid 120.00 EUR to Ada; 380.00 EUR left."]
    assert not state.exists()

    again = run_sample("--state", str(state), "decide", "call_2", "yes")  # a second click
    assert again.returncode == 1
    assert "nothing waits for approval" in again.stderr


def test_approvals_decline_with_a_reason(tmp_path: Path) -> None:
    module = sample("approvals")
    before = module.get_balance()
    state = tmp_path / "pending.json"
    with ScriptedServer(module.ASK_SCRIPT) as server:
        paused = module.ask("Pay Ada", server.client(), server.model, state)
    assert paused.pending[0].arguments == {"payee": "Ada", "amount": 120}
    with ScriptedServer(module.DECIDE_SCRIPT) as server:
        reply = module.decide({"call_2": "ask me tomorrow"}, server.client(), state)
    assert reply.text == (
        "I did not pay: Tool 'pay' was not run: the user declined (ask me tomorrow). "
        "Do not retry it unless the user asks."
    )
    assert module.get_balance() == before
