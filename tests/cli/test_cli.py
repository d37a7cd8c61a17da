"""The `toolreg` command, run as a user runs it: a subprocess, real exit codes and output."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEATHER = str(ROOT / "samples" / "weather.py")
ORDERS = str(ROOT / "samples" / "orders.py")
APPROVALS = str(ROOT / "samples" / "approvals.py")


def toolreg(
    *args: str,
    stdin: str = "",
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    io_encoding: str | None = "utf-8",
) -> subprocess.CompletedProcess[str]:
    """Run the command; `io_encoding=None` leaves PYTHONIOENCODING unset (a pipe's default)."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL", "PYTHONIOENCODING")
    }
    environment.update(env or {})
    if io_encoding is not None:
        environment["PYTHONIOENCODING"] = io_encoding
    return subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",  # whatever the command writes is read, never a crash here
        cwd=cwd,
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
    assert "list_my_orders(status: processing|shipped|cancelled|null?)  [read_only]" in lines


def test_list_shows_the_values_of_enum_parameters() -> None:
    done = toolreg("list", WEATHER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "get_weather(city_name: string, unit: celsius|fahrenheit?)"
    )


def test_list_json_has_full_descriptions_and_enum_values() -> None:
    done = toolreg("list", WEATHER, "--json")
    assert done.returncode == 0
    rows = json.loads(done.stdout)
    assert rows == [
        {
            "name": "get_weather",
            "parameters": [
                {
                    "name": "city_name",
                    "type": "string",
                    "required": True,
                    "description": "The name of the city to be queried, e.g. Beijing or 北京",
                },
                {
                    "name": "unit",
                    "type": "string",
                    "required": False,
                    "enum": ["celsius", "fahrenheit"],
                    "description": "Temperature unit",
                },
            ],
            "flags": [],
            "description": (
                "Get the current weather of a city. Use it when the user asks about the weather,"
                "\ntemperature, rain or humidity somewhere."
            ),
        }
    ]
    orders = json.loads(toolreg("list", ORDERS, "--json").stdout)
    (status,) = next(r for r in orders if r["name"] == "list_my_orders")["parameters"]
    assert status["enum"] == ["processing", "shipped", "cancelled", None]


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
        (("list", "samples.weather:WEATHER"), "toolreg: samples.weather:WEATHER is a dict, not a"),
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


@pytest.mark.slow
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


# -- the command, first contact (issue 10, item 15) ---------------------------------------

BAD_TYPE = '''\
import socket
from toolreg import ToolRegistry
registry = ToolRegistry()

@registry.register_tool
def get_weather(city: socket.socket) -> str:
    """Get the weather of a city. Use it when the user asks about the weather."""
    return "sunny"
'''

DUPLICATE = '''\
from toolreg import ToolRegistry
registry = ToolRegistry()

@registry.register_tool
def get_weather(city: str) -> str:
    """Get the weather of a city. Use it when the user asks about the weather."""
    return "sunny"

@registry.register_tool(name="get_weather")
def weather_again(city: str) -> str:
    """Get the weather of a city. Use it when the user asks about the weather."""
    return "rainy"
'''


@pytest.mark.slow
@pytest.mark.parametrize("as_module", [False, True], ids=["file", "module"])
@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_definition_errors_name_the_file_and_the_function(
    tmp_path: Path, as_module: bool, debug: bool
) -> None:
    (tmp_path / "bad_tools.py").write_text(BAD_TYPE, encoding="utf-8")
    (tmp_path / "twice.py").write_text(DUPLICATE, encoding="utf-8")
    flags = ["--debug"] if debug else []
    bad = toolreg("list", "bad_tools" if as_module else "bad_tools.py", *flags, cwd=tmp_path)
    twice = toolreg("list", "twice" if as_module else "twice.py", *flags, cwd=tmp_path)
    assert bad.returncode == twice.returncode == 2
    last_bad, last_twice = bad.stderr.splitlines()[-1], twice.stderr.splitlines()[-1]
    if debug:
        assert "Traceback (most recent call last)" in bad.stderr
        assert last_bad.startswith("toolreg.errors.UnsupportedTypeError: bad_tools.py:get_weather")
    else:
        assert bad.stderr.startswith(
            "toolreg: UnsupportedTypeError: bad_tools.py:get_weather, parameter 'city': "
        )
    assert "a tool named 'get_weather' is already registered (by twice.py:get_weather)" in (
        last_twice
    )
    assert "twice.py:weather_again: " in last_twice
    for done in (bad, twice):
        assert "_toolreg_target" not in done.stderr
        assert "bad_tools.get_weather" not in done.stderr


def test_a_function_of_a_module_the_target_imports_is_named_by_its_file(tmp_path: Path) -> None:
    (tmp_path / "shared.py").write_text(
        "from toolreg import ToolRegistry\nregistry = ToolRegistry()\n", encoding="utf-8"
    )
    (tmp_path / "weather_tools.py").write_text(
        BAD_TYPE.replace("registry = ToolRegistry()", "from shared import registry"),
        encoding="utf-8",
    )
    (tmp_path / "app.py").write_text(
        "from shared import registry\nimport weather_tools\n", encoding="utf-8"
    )
    done = toolreg("list", str(tmp_path / "app.py"))
    assert done.returncode == 2
    assert done.stderr.startswith(
        "toolreg: UnsupportedTypeError: weather_tools.py:get_weather, parameter 'city': "
    )


def test_lint_names_the_target_file_not_its_module(tmp_path: Path) -> None:
    target = tmp_path / "meta_tools.py"
    target.write_text(
        "from typing import Annotated\n"
        "from toolreg import ToolRegistry\n"
        "registry = ToolRegistry()\n"
        "class Marker:\n"
        "    pass\n"
        "@registry.register_tool\n"
        "def get_weather(city: Annotated[str, Marker(), 'The city']) -> str:\n"
        "    '''Get the weather of a city. Use it when the user asks about the weather.'''\n"
        "    return city\n",
        encoding="utf-8",
    )
    for args in ((), ("--json",)):
        done = toolreg("lint", str(target), *args)
        assert done.returncode == 0, done.stderr
        assert "<meta_tools.py:Marker object at 0x" in done.stdout
        assert "_toolreg_target" not in done.stdout


FAILING = '''\
from toolreg import ToolRegistry
registry = ToolRegistry()

def _divide(x):
    return 1 / x

@registry.register_tool
def ratio(x: int) -> float:
    """One divided by x. Use it when the user asks for a ratio."""
    return _divide(x)

async def _later(x):
    return 1 / x

@registry.register_tool
async def ratio_later(x: int) -> float:
    """One divided by x, later. Use it when the user asks for a ratio."""
    return await _later(x)

@registry.register_tool
def price(item: str) -> float:
    """The price of an item. Use it when the user asks what something costs."""
    try:
        return {"tea": 2.5}[item]
    except KeyError as exc:
        raise LookupError(f"no price for {item}") from exc
'''


def test_a_failing_tool_prints_the_observation_only(tmp_path: Path) -> None:
    target = tmp_path / "failing.py"
    target.write_text(FAILING, encoding="utf-8")
    done = toolreg("call", str(target), "ratio", '{"x": 0}')
    assert done.returncode == 1
    assert done.stdout == "Tool 'ratio' failed: ZeroDivisionError: division by zero\n"
    assert done.stderr == ""  # no traceback through logging's last resort


@pytest.mark.parametrize("tool", ["ratio", "ratio_later"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_tools_own_traceback(tmp_path: Path, tool: str, where: str) -> None:
    target = tmp_path / "failing.py"
    target.write_text(FAILING, encoding="utf-8")
    call = ["call", str(target), tool, '{"x": 0}']
    done = toolreg(*(["--debug", *call] if where == "before" else [*call, "--debug"]))
    assert done.returncode == 1
    assert done.stdout == f"Tool '{tool}' failed: ZeroDivisionError: division by zero\n"
    helper = "_divide" if tool == "ratio" else "_later"
    source = FAILING.splitlines()
    body = source.index(f"    return {'await ' if tool == 'ratio_later' else ''}{helper}(x)") + 1
    lines = done.stderr.splitlines()
    assert lines[:3] == [
        f"toolreg: tool '{tool}' failed: ZeroDivisionError: division by zero",
        "Traceback (most recent call last):",
        f'  File "{target}", line {body}, in {tool}',
    ]
    assert f", in {helper}" in done.stderr
    assert lines[-1] == "ZeroDivisionError: division by zero"
    assert "toolreg" not in "\n".join(lines[1:])  # the tool's frames, not dispatch's
    assert "asyncio" not in done.stderr


def test_debug_keeps_the_exceptions_a_tool_chains(tmp_path: Path) -> None:
    target = tmp_path / "failing.py"
    target.write_text(FAILING, encoding="utf-8")
    done = toolreg("call", str(target), "price", '{"item": "cake"}', "--debug")
    assert done.returncode == 1
    assert done.stdout == "Tool 'price' failed: LookupError: no price for cake\n"
    lines = done.stderr.splitlines()
    assert lines[:2] == [
        "toolreg: tool 'price' failed: LookupError: no price for cake",
        "Traceback (most recent call last):",
    ]
    assert "KeyError: 'cake'" in lines
    assert "The above exception was the direct cause of the following exception:" in lines
    assert lines[-1] == "LookupError: no price for cake"
    assert "toolreg" not in "\n".join(lines[1:])


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_serve_keeps_a_failing_tools_line_on_stderr(tmp_path: Path, debug: bool) -> None:
    """A server prints no observations: its tools' failures still reach stderr, one line
    each; with --debug, the tool's traceback too."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    target = tmp_path / "failing.py"
    target.write_text(FAILING, encoding="utf-8")
    path = os.environ.get("PYTHONPATH")
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolreg", "serve", str(target), *(["--debug"] if debug else [])],
        env={"PYTHONPATH": str(ROOT) if not path else f"{ROOT}{os.pathsep}{path}"},
        cwd=ROOT,
    )
    log = tmp_path / "stderr.txt"

    async def run() -> bool:
        with log.open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(server, errlog=errlog)) as client:
                result = await client.call_tool("ratio", {"x": 0})
                return bool(result.is_error)

    assert asyncio.run(run()) is True
    written = log.read_text(encoding="utf-8")
    line = "tool 'ratio' failed: ZeroDivisionError: division by zero"
    if debug:
        assert f"toolreg: {line}\nTraceback (most recent call last):\n" in written
        assert written.rstrip().endswith("\nZeroDivisionError: division by zero")
    else:
        assert written == f"{line}\n"


def _serve_command(target: Path) -> str:
    return f"mcp:{sys.executable} -m toolreg serve {target}"


@pytest.mark.slow
def test_a_mounted_tools_failure_prints_the_observation_only(tmp_path: Path) -> None:
    """The mounted server's stderr (its failure's log line) is not ours without --debug."""
    target = tmp_path / "failing.py"
    target.write_text(FAILING, encoding="utf-8")
    plain = toolreg("call", _serve_command(target), "ratio", '{"x": 0}')
    debug = toolreg("call", _serve_command(target), "ratio", '{"x": 0}', "--debug")
    for done in (plain, debug):
        assert done.returncode == 1, done.stderr
        assert done.stdout == "Tool 'ratio' failed: ZeroDivisionError: division by zero\n"
    assert plain.stderr == ""
    assert "tool 'ratio' failed: ZeroDivisionError: division by zero" in debug.stderr


def test_a_mounted_server_that_cannot_start_is_quoted_in_the_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.exit('no config file at ./server.toml')\n")
    done = toolreg("list", f"mcp:{sys.executable} {broken}")
    assert done.returncode == 2
    assert done.stderr.startswith("toolreg: cannot mount the MCP server ")
    assert done.stderr.endswith(" (the server said: no config file at ./server.toml)\n")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_is_accepted_before_or_after_the_command(where: str) -> None:
    args = ["list", "no_such_module_xyz"]
    done = toolreg(*(["--debug", *args] if where == "before" else [*args, "--debug"]))
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "cannot import 'no_such_module_xyz'" in done.stderr.splitlines()[-1]


RESULTS = '''\
import dataclasses
from decimal import Decimal
from toolreg import ToolError, ToolRegistry
registry = ToolRegistry()

@dataclasses.dataclass
class Refund:
    order: str
    amount: Decimal

@registry.register_tool
def refund(order: str) -> Refund:
    """Refund an order. Use it when the user asks for their money back."""
    if order == "none":
        raise ToolError(f"No order {order}.")
    return Refund(order, Decimal("12.50"))

@registry.register_tool
def nothing() -> None:
    """Do nothing. Use it when the user asks for nothing."""

@registry.register_tool(destructive=True)
def delete_everything() -> str:
    """Delete everything. Use it when the user asks to start over."""
    return "deleted"
'''


def _call_json(target: Path, *args: str) -> tuple[int, dict[str, object]]:
    done = toolreg("call", str(target), *args, "--json")
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert list(result) == ["ok", "error_kind", "content", "value", "elapsed"]
    assert isinstance(result["elapsed"], float)
    assert 0 <= result["elapsed"] < 10
    return done.returncode, result


def test_call_json_prints_ok_error_kind_content_value_elapsed(tmp_path: Path) -> None:
    target = tmp_path / "results.py"
    target.write_text(RESULTS, encoding="utf-8")
    code, ok = _call_json(target, "refund", '{"order": "A1"}')
    assert code == 0
    assert ok["ok"] is True
    assert ok["error_kind"] is None
    assert ok["value"] == {"order": "A1", "amount": "12.50"}
    assert json.loads(str(ok["content"])) == ok["value"]
    code, refused = _call_json(target, "refund", '{"order": "none"}')
    assert code == 1
    assert (refused["ok"], refused["error_kind"]) == (False, "execution_error")
    assert (refused["content"], refused["value"]) == ("No order none.", None)
    code, invalid = _call_json(target, "refund", "{}")
    assert code == 1
    assert (invalid["error_kind"], invalid["value"]) == ("invalid_arguments", None)
    assert str(invalid["content"]).startswith("Invalid arguments for tool 'refund':")
    code, empty = _call_json(target, "nothing")
    assert code == 0
    assert (empty["ok"], empty["content"], empty["value"]) == (True, "null", None)
    code, denied = _call_json(target, "delete_everything")
    assert code == 1
    assert (denied["ok"], denied["error_kind"], denied["value"]) == (False, "denied", None)


def test_version() -> None:
    import toolreg as package

    done = toolreg("--version")
    assert done.returncode == 0
    assert done.stdout == f"toolreg {package.__version__}\n"


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    from toolreg.cli.main import build_parser

    found = [("toolreg", build_parser())]
    for name, parser in found:  # grows as it goes: `toolreg mcp pin` too
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [(f"{name} {n}", p) for n, p in action.choices.items()]
    return found


def test_every_option_and_argument_has_help_without_markdown() -> None:
    parsers = _parsers()
    assert {name for name, _ in parsers} == {
        "toolreg",
        *(f"toolreg {c}" for c in ("list", "schema", "call", "lint", "chat", "demo", "serve")),
        "toolreg mcp",
        "toolreg mcp pin",
    }
    for name, parser in parsers:
        for action in parser._actions:
            where = f"{name} {action.option_strings or action.dest}"
            assert action.help, f"{where}: no help"
            assert action.help != argparse.SUPPRESS, f"{where}: hidden"
        text = parser.format_help()
        for mark in ("`", "**", "__"):
            assert mark not in text, f"{name} --help has markdown ({mark!r}):\n{text}"
        assert "--debug" in text, name


def test_a_declined_call_without_a_terminal_prints_one_message() -> None:
    args = '{"order_id": "A1002", "reason": "mistake"}'
    done = toolreg("call", ORDERS, "cancel_order", args, "--context", '{"user_id": "u1"}')
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "toolreg: cancel_order needs confirmation; declined (no terminal, no --yes)\n"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(
    ("answer", "code", "printed"),
    [
        (
            "n",
            1,
            "Tool 'delete_everything' was not run: the user declined. "
            "Do not retry it unless the user asks.",
        ),
        ("y", 0, "deleted"),
    ],
)
def test_a_call_asked_at_the_terminal_prints_one_message(
    tmp_path: Path, answer: str, code: int, printed: str
) -> None:
    import pty

    target = tmp_path / "results.py"
    target.write_text(RESULTS, encoding="utf-8")
    controller, terminal = pty.openpty()
    try:
        os.write(controller, f"{answer}\n".encode())
        done = subprocess.run(
            [sys.executable, "-m", "toolreg", "call", str(target), "delete_everything"],
            stdin=terminal,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
            timeout=60,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == code
    assert done.stderr == "Run delete_everything({})? [y/N] "  # the question, not a message
    assert done.stdout == printed + "\n"


SURROGATES = '''\
from toolreg import ToolError, ToolRegistry
registry = ToolRegistry()

@registry.register_tool
def text() -> str:
    """Text with a lone surrogate. Use it when testing."""
    return "a\\ud800b"

@registry.register_tool
def record() -> dict:
    """A record with lone surrogates. Use it when testing."""
    return {"k\\ud800": ["a\\udfffb"]}

@registry.register_tool
def refusal() -> str:
    """A refusal with a lone surrogate. Use it when testing."""
    raise ToolError("no \\ud800 here")

@registry.register_tool
def crash() -> str:
    """A crash with a lone surrogate. Use it when testing."""
    raise ValueError("bad \\ud800 value")

@registry.register_tool
def echo(said: str) -> str:
    """Say it back. Use it when testing."""
    return said
'''


@pytest.mark.parametrize(
    ("tool", "args", "code", "shown"),
    [
        ("text", "{}", 0, "a\ufffdb"),
        ("record", "{}", 0, '{"k\ufffd": ["a\ufffdb"]}'),
        ("echo", '{"said": "\\ud800"}', 0, "\ufffd"),
        ("refusal", "{}", 1, "no \ufffd here"),
        ("crash", "{}", 1, "Tool 'crash' failed: ValueError: bad \ufffd value"),
    ],
)
def test_a_lone_surrogate_in_a_result_never_crashes_the_command(
    tmp_path: Path, tool: str, args: str, code: int, shown: str
) -> None:
    target = tmp_path / "surrogates.py"
    target.write_text(SURROGATES, encoding="utf-8")
    done = toolreg("call", str(target), tool, args, io_encoding=None)  # the pipe's default
    assert done.returncode == code, done.stderr
    assert done.stdout == shown + "\n"
    assert done.stderr == ""
    as_json = toolreg("call", str(target), tool, args, "--json", io_encoding="utf-8")  # strict
    assert as_json.returncode == code, as_json.stderr
    result = json.loads(as_json.stdout)
    assert result["content"] == shown
    if code == 0:
        assert result["value"] == json.loads(shown) if tool == "record" else shown


def test_the_pipe_default_encoding_rejects_lone_surrogates() -> None:
    """What the test above relies on: without PYTHONIOENCODING, printing one would fail."""
    done = subprocess.run(
        [sys.executable, "-c", "print('\\ud800')"],
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"},
        timeout=60,
    )
    assert done.returncode == 1
    assert b"UnicodeEncodeError" in done.stderr


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_chat_names_the_url_of_an_unreachable_endpoint_and_stops() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    done = toolreg("chat", WEATHER, "--model", "m", "--base-url", url, stdin="hi\nagain\n")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"toolreg: {url}: ")
    assert "Connection error" in line
    assert done.stdout.count("you> ") == 1  # ended after the first failure


def test_chat_names_the_url_of_an_endpoint_answering_500_and_stops() -> None:
    from toolreg.testing import ScriptedServer, error

    failures = [error(500, "the model crashed")] * 3  # the SDK retries twice
    with ScriptedServer(failures) as server:
        done = toolreg(
            "chat", WEATHER, "--model", "m", "--base-url", server.base_url, stdin="hi\nagain\n"
        )
        assert len(server.requests) == 3  # the second line was never sent
        url = server.base_url
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"toolreg: {url}: ")
    assert "500" in line
    assert "the model crashed" in line
    assert done.stdout.count("you> ") == 1


def test_demo_names_the_url_of_a_failing_endpoint() -> None:
    """`toolreg demo` pointed at a real endpoint that fails: one line naming its URL, exit 1
    (an endpoint's failure, not a usage error)."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    done = toolreg("demo", env={"OPENAI_BASE_URL": url, "TOOLREG_MODEL": "m"})
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"toolreg: {url}: ")
    assert "Connection error" in line
