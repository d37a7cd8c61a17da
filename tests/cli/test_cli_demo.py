"""`toolreg demo [TARGET]`: the user's own tools against the scripted model (one call, with
the arguments given by `--call` or made from the schema), a file's own DEMO, the samples; and
one rendering of a call's arguments everywhere the CLI shows them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolreg.cli.demo import SCRIPTED_NOTICE
from toolreg.cli.main import main
from toolreg.testing import ScriptedServer, call, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]
WEATHER = str(ROOT / "samples" / "weather.py")
ORDERS = str(ROOT / "samples" / "orders.py")

TOOLS = '''
from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from decimal import Decimal
from typing import Annotated, Literal

from toolreg import Param, ToolRegistry

registry = ToolRegistry()


@dataclasses.dataclass
class Item:
    sku: Annotated[str, "Stock keeping unit, e.g. MUG-01"]
    qty: int = 1


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node]


@registry.register_tool(destructive=True)
def wipe(word: str) -> str:
    """Wipe everything. Use it only when the user asks to wipe."""
    return f"wiped ({word})"


@registry.register_tool
def order(
    day: datetime.date,
    at: datetime.datetime,
    ref: uuid.UUID,
    amount: Annotated[Decimal, "Amount in EUR, e.g. 19.99"],
    color: Color,
    items: list[Item],
    pair: tuple[int, str],
    count: Annotated[int, Param(ge=5, le=10)],
    odd: Annotated[int, Param(gt=2, multiple_of=3)],
    code: Annotated[str, Param(min_length=12, max_length=14)],
    size: Literal["s", "m"],
    ratio: Annotated[float, Param(gt=0.5, lt=0.9)],
    ok: bool,
    note: str | None = None,
) -> str:
    """Place an order. Use it when the user orders something."""
    return f"ordered {len(items)} item(s) for {amount} EUR"


@registry.register_tool
def tree(root: Node) -> str:
    """Name the root of a tree. Use it for trees."""
    return root.name


@registry.register_tool
def greet(name: Annotated[str, "Who to greet, e.g. Ada"], times: int = 1) -> str:
    """Greet someone. Use it when the user says hello."""
    return " ".join([f"Hello, {name}!"] * times)
'''


@pytest.fixture(scope="module")
def tools_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("demo") / "my_tools.py"
    path.write_text(TOOLS, encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TOOLREG_MODEL", raising=False)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_a_file_without_a_demo_plays_one_call_of_its_first_safe_tool(
    capsys: pytest.CaptureFixture[str], tools_file: str
) -> None:
    """`wipe` comes first but is destructive: `order` is called, with arguments made from its
    schema that its own validation accepts (formats, bounds, enums, nested, tuples, hints)."""
    status, lines, err = run(capsys, "demo", tools_file)
    assert (status, err) == (0, "")
    arguments = (
        '{"day": "2025-01-31", "at": "2025-01-31T12:00:00Z", '
        '"ref": "123e4567-e89b-12d3-a456-426614174000", "amount": 19.99, "color": "red", '
        '"items": [{"sku": "MUG-01"}], "pair": [1, "example"], "count": 5, "odd": 3, '
        '"code": "exampleexamp", "size": "s", "ratio": 0.7, "ok": true}'
    )
    assert lines == [
        SCRIPTED_NOTICE,
        f"user: Call the tool order with {arguments} and tell me what it answers.",
        f"  -> order({arguments})",
        "  <- [ok] ordered 1 item(s) for 19.99 EUR",
        "assistant: order answered: ordered 1 item(s) for 19.99 EUR",
    ]


def test_call_picks_the_tool_and_its_arguments(
    capsys: pytest.CaptureFixture[str], tools_file: str
) -> None:
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "greet", "name=Bo", "times=2")
    assert status == 0
    assert lines[2:] == [
        '  -> greet({"name": "Bo", "times": 2})',
        "  <- [ok] Hello, Bo! Hello, Bo!",
        "assistant: greet answered: Hello, Bo! Hello, Bo!",
    ]
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "greet", '{"name": "Cy"}')
    assert status == 0
    assert lines[2] == '  -> greet({"name": "Cy"})'


def test_call_without_arguments_uses_examples_and_ends_a_recursive_type(
    capsys: pytest.CaptureFixture[str], tools_file: str
) -> None:
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "greet")
    assert status == 0
    assert lines[2] == '  -> greet({"name": "Ada"})'  # "e.g. Ada"; `times` keeps its default
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "tree")
    assert status == 0
    assert lines[-2:] == ["  <- [ok] example", "assistant: tree answered: example"]


def test_prompt_replaces_the_users_line(
    capsys: pytest.CaptureFixture[str], tools_file: str
) -> None:
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "greet", "--prompt", "Hi!")
    assert status == 0
    assert lines[1] == "user: Hi!"


def test_a_destructive_call_is_asked_and_declined_without_a_terminal_or_yes(
    capsys: pytest.CaptureFixture[str], tools_file: str
) -> None:
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "wipe", "word=now")
    assert status == 0
    assert lines[3] == '  ?? run wipe({"word": "now"})? [y/N] (no terminal: declined)'
    assert lines[4].startswith("  <- [denied] Tool 'wipe' was not run: the user declined.")
    status, lines, _ = run(capsys, "demo", tools_file, "--call", "wipe", "word=now", "--yes")
    assert lines[3:5] == ['  ?? run wipe({"word": "now"})? [y/N] y', "  <- [ok] wiped (now)"]


def test_a_file_with_a_demo_plays_it(capsys: pytest.CaptureFixture[str]) -> None:
    status, as_file, _ = run(capsys, "demo", WEATHER)
    assert status == 0
    assert as_file[1] == "user: 北京和巴黎今天天气怎么样？"
    assert run(capsys, "demo", "--sample", "weather")[1] == as_file
    status, written, _ = run(capsys, "demo", WEATHER, "--call", "get_weather")
    assert written[2] == '  -> get_weather({"city_name": "Beijing"})'  # "e.g. Beijing"
    assert written[3].startswith('  <- [ok] {"city": "Beijing", "condition": "sunny"')


def test_module_registry_target_and_a_context(capsys: pytest.CaptureFixture[str]) -> None:
    status, lines, _ = run(
        capsys,
        "demo",
        f"{ORDERS}:registry",
        "--call",
        "get_order_detail",
        "order_id=A1001",
        "--context",
        '{"user_id": "u1"}',
    )
    assert status == 0
    assert lines[3].startswith('  <- [ok] {"order_id": "A1001", "item": "Wireless mouse"')


@pytest.mark.usefixtures("clean_chatglm3_registry")
def test_tools_registered_the_chatglm3_way_play_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "glm_demo.py"
    target.write_text(
        "from typing import Annotated\n"
        "from toolreg.compat.chatglm3 import register_tool\n"
        "@register_tool\n"
        "def glm_echo(said: Annotated[str, 'What to say back, e.g. hello', True]) -> str:\n"
        "    '''Say it back. Use it when the user wants an echo.'''\n"
        "    return said\n",
        encoding="utf-8",
    )
    status, lines, _ = run(capsys, "demo", str(target))
    assert status == 0
    assert lines[-1] == "assistant: glm_echo answered: hello"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--call", "nope"), "--call: no tool named 'nope' (have: wipe, order, tree, greet)"),
        (("--call", "greet", "[1]"), "ARGS must be an object, got an array; pass key=value"),
        (("--call", "greet", "name=a", "name=b"), "the key 'name' is given twice"),
        (("--sample", "weather"), "pass TARGET or --sample, not both"),
        (("--context", "{x"), "--context is not valid JSON"),
    ],
)
def test_usage_errors_exit_2_before_anything_plays(
    capsys: pytest.CaptureFixture[str], tools_file: str, args: tuple[str, ...], message: str
) -> None:
    status, lines, err = run(capsys, "demo", tools_file, *args)
    assert (status, lines) == (2, [])
    assert err.startswith(f"toolreg: {message}")
    assert len(err.splitlines()) == 1


def test_target_after_call_and_a_missing_context_say_the_fix(
    capsys: pytest.CaptureFixture[str], tools_file: str
) -> None:
    status, lines, err = run(capsys, "demo", "--call", "greet", tools_file)
    assert (status, lines) == (2, [])
    assert err == "toolreg: put TARGET before --call: toolreg demo FILE.py --call NAME ARGS...\n"
    status, lines, err = run(capsys, "demo", ORDERS, "--call", "get_order_detail")
    assert (status, lines) == (2, [])
    assert err == (
        "toolreg: tool 'get_order_detail' needs a context for its parameter 'ctx'; "
        "pass --context JSON\n"
    )


def command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")
    }
    return subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        env={**environment, **(env or {}), "PYTHONIOENCODING": "utf-8"},
        timeout=60,
        check=False,
    )


def test_a_configured_endpoint_gets_the_prompt_and_the_tools(tools_file: str) -> None:
    turns = [tool_calls(call("greet", {"name": "Di"})), text("Said hello to Di.")]
    with ScriptedServer(turns, model="real-model") as server:
        env = {"OPENAI_BASE_URL": server.base_url, "TOOLREG_MODEL": "real-model"}
        done = command("demo", tools_file, "--call", "greet", "name=Di", env=env)
        first, url = server.requests[0], server.base_url
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"model real-model at {url}"
    assert done.stdout.splitlines()[-1] == "assistant: Said hello to Di."
    assert first["messages"][-1] == {
        "role": "user",
        "content": 'Call the tool greet with {"name": "Di"} and tell me what it answers.',
    }
    assert {t["function"]["name"] for t in first["tools"]} == {"wipe", "order", "tree", "greet"}


def test_the_approvals_demo_shows_the_call_and_the_question_alike() -> None:
    """The model sent `"amount": 120`; the question showed the converted Decimal as "120"."""
    done = command("demo", "--sample", "approvals", "--yes")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert '  -> pay({"payee": "Ada", "amount": 120})' in lines
    assert '  ?? run pay({"payee": "Ada", "amount": 120})? [y/N] y' in lines


PAIRS = ["amount=19.90", "on=2025-02-03"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_call_asks_about_the_arguments_as_typed(tmp_path: Path) -> None:
    """`toolreg call`'s question: a Decimal as the number given, a date as written."""
    import pty

    target = tmp_path / "payments.py"
    target.write_text(
        "import datetime\n"
        "from decimal import Decimal\n"
        "from toolreg import ToolRegistry\n"
        "registry = ToolRegistry()\n"
        "@registry.register_tool(destructive=True)\n"
        "def pay(amount: Decimal, on: datetime.date) -> str:\n"
        "    '''Pay. Use it when the user pays.'''\n"
        "    return f'paid {amount} on {on}'\n",
        encoding="utf-8",
    )
    controller, terminal = pty.openpty()
    try:
        os.write(controller, b"y\n")
        done = subprocess.run(
            [sys.executable, "-m", "toolreg", "call", str(target), "pay", *PAIRS],
            stdin=terminal,
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=ROOT,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
            timeout=60,
            check=False,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    # the JSON number 19.90 reaches the tool as Decimal("19.9"): asked about as what will run
    assert done.stderr == 'Run pay({"amount": 19.9, "on": "2025-02-03"})? [y/N] '
    assert done.stdout == "paid 19.9 on 2025-02-03\n"
