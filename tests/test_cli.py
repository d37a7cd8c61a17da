"""The `toolreg` command, run as a user runs it: a subprocess, real exit codes and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WEATHER = str(ROOT / "samples" / "weather.py")
ORDERS = str(ROOT / "samples" / "orders.py")
APPROVALS = str(ROOT / "samples" / "approvals.py")


def toolreg(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")
    }
    environment.update(env or {})
    environment["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        env=environment,
        timeout=60,
    )


def test_list_prints_signature_flags_and_first_sentence() -> None:
    done = toolreg("list", ORDERS)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "get_order_detail(order_id: string)  [read_only]"
    assert lines[1] == (
        "    Get the details of one of the current user's orders: item, amount, status and "
        "contact phone."
    )
    assert "cancel_order(order_id: string, reason: string)  [destructive]" in lines
    assert "list_my_orders(status: string|null?)  [read_only]" in lines


def test_list_json() -> None:
    done = toolreg("list", WEATHER, "--json")
    assert done.returncode == 0
    rows = json.loads(done.stdout)
    assert rows == [
        {
            "name": "get_weather",
            "parameters": [
                {"name": "city_name", "type": "string", "required": True},
                {"name": "unit", "type": "string", "required": False},
            ],
            "flags": [],
            "description": "Get the current weather of a city.",
        }
    ]


def test_target_forms_module_and_module_attribute() -> None:
    by_module = toolreg("list", "samples.weather", "--json")
    by_attribute = toolreg("list", "samples.weather:registry", "--json")
    assert by_module.returncode == by_attribute.returncode == 0, by_module.stderr
    assert json.loads(by_module.stdout) == json.loads(by_attribute.stdout)


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini", "mcp", "chatglm3"])
def test_schema_every_format(fmt: str) -> None:
    done = toolreg("schema", WEATHER, "--format", fmt)
    assert done.returncode == 0, done.stderr
    (definition,) = json.loads(done.stdout)
    text = json.dumps(definition)
    assert "get_weather" in text
    assert "北京" in done.stdout  # ensure_ascii=False: Chinese stays readable


def test_schema_strict_and_name_selection() -> None:
    done = toolreg("schema", ORDERS, "--strict", "--name", "list_my_orders")
    assert done.returncode == 0, done.stderr
    (definition,) = json.loads(done.stdout)
    function = definition["function"]
    assert function["name"] == "list_my_orders"
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["status"]
    unknown = toolreg("schema", ORDERS, "--name", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("toolreg: no tool named nope")


def test_call_ok_prints_the_observation() -> None:
    done = toolreg("call", WEATHER, "get_weather", '{"city_name": "北京"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "city": "北京",
        "condition": "sunny",
        "temperature": 18.0,
        "unit": "celsius",
        "humidity_percent": 30,
    }


def test_call_reads_arguments_from_stdin() -> None:
    done = toolreg("call", WEATHER, "get_weather", "-", stdin='{"city_name": "Paris"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["condition"] == "cloudy"


def test_call_error_result_exits_1() -> None:
    done = toolreg("call", WEATHER, "get_weather", '{"city_name": "Atlantis"}')
    assert done.returncode == 1
    assert done.stdout.startswith("No weather data for 'Atlantis'. Known cities: ")
    invalid = toolreg("call", WEATHER, "get_weather", '{"unit": "kelvin"}')
    assert invalid.returncode == 1
    assert invalid.stdout.strip() == (
        "Invalid arguments for tool 'get_weather':\n"
        "- missing required property 'city_name'\n"
        "- unit: 'kelvin' is not one of 'celsius', 'fahrenheit'"
    )


def test_call_usage_errors_exit_2_with_one_line() -> None:
    unknown = toolreg("call", WEATHER, "get_wether", "{}")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        "toolreg: Unknown tool 'get_wether'. Did you mean 'get_weather'? Available: get_weather."
    )
    bad_json = toolreg("call", WEATHER, "get_weather", "{city}")
    assert bad_json.returncode == 2
    assert bad_json.stderr.startswith("toolreg: ARGS is not valid JSON")
    assert len(bad_json.stderr.strip().splitlines()) == 1
    assert "Traceback" not in bad_json.stderr


def test_call_with_context_and_confirmation() -> None:
    context = '{"user_id": "u1"}'
    mine = toolreg(
        "call", ORDERS, "get_order_detail", '{"order_id": "A1001"}', "--context", context
    )
    assert mine.returncode == 0, mine.stderr
    assert json.loads(mine.stdout)["contact_phone"] == "138****5678"
    theirs = toolreg(
        "call", ORDERS, "get_order_detail", '{"order_id": "A2001"}', "--context", context
    )
    assert theirs.returncode == 1
    assert theirs.stdout.strip() == "Order A2001 was not found among your orders."
    args = '{"order_id": "A1002", "reason": "mistake"}'
    declined = toolreg("call", ORDERS, "cancel_order", args, "--context", context)
    assert declined.returncode == 1
    assert declined.stdout.strip().startswith("Tool 'cancel_order' was not run: the user declined.")
    assert "declined (no terminal, no --yes)" in declined.stderr
    approved = toolreg("call", ORDERS, "cancel_order", args, "--context", context, "--yes")
    assert approved.returncode == 0, approved.stdout
    assert json.loads(approved.stdout)["status"] == "cancelled"


def test_lint_samples_are_clean() -> None:
    for name in ("weather", "expense_tracker", "user_registry", "orders"):
        done = toolreg("lint", str(ROOT / "samples" / f"{name}.py"))
        assert done.returncode == 0, done.stdout
        assert ", 0 errors, 0 other findings" in done.stdout


def test_lint_reports_errors_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad_tools.py"
    bad.write_text(
        "from toolreg import ToolRegistry\n"
        "registry = ToolRegistry()\n"
        "@registry.register_tool\n"
        "def delete_user(user_id: str) -> None:\n"
        "    pass\n",
        encoding="utf-8",
    )
    done = toolreg("lint", str(bad), "--json")
    assert done.returncode == 1
    codes = {(f["code"], f["severity"]) for f in json.loads(done.stdout)}
    assert codes == {
        ("no-description", "error"),
        ("no-param-description", "warning"),
        ("unconfirmed-destructive", "warning"),
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "no_such_module_xyz"), "toolreg: cannot import 'no_such_module_xyz'"),
        (("list", "samples/missing.py"), "toolreg: no such file: samples/missing.py"),
        (("list", "json"), "toolreg: no tools found in json"),
        (("list", "samples.weather:WEATHER"), "toolreg: samples.weather:WEATHER is not a"),
        (("demo", "--sample", "nope"), "toolreg: no sample named 'nope'"),
        (("chat", WEATHER), "toolreg: no model: pass --model or set TOOLREG_MODEL"),
    ],
)
def test_errors_are_one_line_with_the_fix(args: tuple[str, ...], message: str) -> None:
    done = toolreg(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_debug_shows_the_traceback() -> None:
    done = toolreg("--debug", "list", "no_such_module_xyz")
    assert done.returncode != 0
    assert "Traceback" in done.stderr


@pytest.mark.parametrize("command", ["list", "schema", "call", "lint", "chat", "demo"])
def test_help_on_every_command(command: str) -> None:
    done = toolreg(command, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith(f"usage: toolreg {command}")


def test_demo_scripted_says_so_first() -> None:
    done = toolreg("demo")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "scripted model; set OPENAI_BASE_URL and TOOLREG_MODEL to use a real one"
    assert lines[1] == "user: 北京和巴黎今天天气怎么样？"
    assert '  -> get_weather({"city_name": "北京"})' in lines
    assert lines[-1].startswith("assistant: 北京今天晴")


def test_demo_with_a_configured_endpoint_uses_it() -> None:
    from toolreg.testing import ScriptedServer, call, text, tool_calls

    turns = [
        tool_calls(call("get_weather", {"city_name": "Tokyo"})),
        text("Tokyo is sunny."),
    ]
    with ScriptedServer(turns, model="real-model") as server:
        env = {"OPENAI_BASE_URL": server.base_url, "TOOLREG_MODEL": "real-model"}
        done = toolreg("demo", env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == f"model real-model at {server.base_url}"
        assert done.stdout.splitlines()[-1] == "assistant: Tokyo is sunny."
        assert server.requests[0]["model"] == "real-model"
        server.assert_all_consumed()


def test_chat_reads_lines_until_end_of_input() -> None:
    from toolreg.testing import ScriptedServer, call, text, tool_calls

    turns = [tool_calls(call("get_weather", {"city_name": "London"})), text("Drizzle in London.")]
    with ScriptedServer(turns) as server:
        done = toolreg(
            "chat", WEATHER, "--model", "m", "--base-url", server.base_url, stdin="weather?\n"
        )
    assert done.returncode == 0, done.stderr
    assert '  -> get_weather({"city_name": "London"})' in done.stdout
    assert "assistant> Drizzle in London." in done.stdout


@pytest.mark.parametrize(
    ("answer", "observation", "last"),
    [
        ("y", '  <- [ok] {"payee": "Ada", "amount": "5.00", "balance": "495.00"}', "Paid."),
        (
            "not today",
            "  <- [denied] Tool 'pay' was not run: the user declined (not today).",
            "Not paid.",
        ),
        ("", "  <- [denied] Tool 'pay' was not run: the user declined.", "Not paid."),
    ],
)
def test_chat_asks_at_the_terminal_and_resumes(answer: str, observation: str, last: str) -> None:
    from toolreg.testing import ScriptedServer, last_tool_result, text, tool_call

    def reply(request: dict[str, object]) -> object:
        return text("Paid." if "payee" in str(last_tool_result(request)) else "Not paid.")

    with ScriptedServer([tool_call("pay", payee="Ada", amount=5), reply]) as server:
        done = toolreg(
            "chat",
            APPROVALS,
            "--model",
            "m",
            "--base-url",
            server.base_url,
            stdin=f"pay Ada 5 EUR\n{answer}\n",
        )
        server.assert_all_consumed()
    assert done.returncode == 0, done.stderr
    out = done.stdout  # the prompts ("you> ", "?? ...") end without a new line
    assert '  -> pay({"payee": "Ada", "amount": 5})\n' in out
    assert '  ?? run pay({"payee": "Ada", "amount": 5})? [y/N, or why not] ' in out
    assert f"{observation}" in out
    assert out.index("?? run pay") < out.index(observation) < out.index(f"assistant> {last}\n")


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    many = tmp_path / "many_tools.py"
    lines = ["from toolreg import ToolRegistry", "registry = ToolRegistry()"]
    for i in range(400):  # far more JSON than a pipe buffer holds
        lines += [
            "@registry.register_tool",
            f"def tool_{i}(city: str, count: int = 1) -> str:",
            f'    """Tool number {i}: use it when the user asks for thing {i}."""',
            "    return city",
        ]
    many.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        f"{sys.executable} -m toolreg schema {many} | head -c 1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.stdout == "["
    assert done.stderr == ""
