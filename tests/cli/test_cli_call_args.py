"""`toolreg call TARGET NAME ARGS`: ARGS as key=value pairs or one JSON object; every malformed
ARGS is a usage error (exit status 2, one line on stderr), whatever its shape."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolreg.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
WEATHER = str(ROOT / "samples" / "weather.py")

ECHO = '''
from typing import Any
from toolreg import ToolRegistry

registry = ToolRegistry()

@registry.register_tool
def echo(
    name: str,
    count: int = 0,
    ok: bool = False,
    tags: list[str] | None = None,
    note: str | None = "unset",
    extra: Any = None,
) -> dict:
    """Say the arguments back. Use it when testing."""
    return {"name": name, "count": count, "ok": ok, "tags": tags, "note": note, "extra": extra}
'''

FIX = 'pass key=value pairs (city=Paris unit=c) or one JSON object (\'{"city": "Paris"}\')'


@pytest.fixture(scope="module")
def echo_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("call_args") / "echo_tools.py"
    path.write_text(ECHO, encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def value_of(capsys: pytest.CaptureFixture[str], echo_file: str, *pairs: str) -> Any:
    status, out, err = run(capsys, "call", echo_file, "echo", *pairs, "--json")
    assert (status, err) == (0, ""), out
    return json.loads(out)["value"]


def test_key_value_pairs_are_the_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "call", WEATHER, "get_weather", "city_name=Paris", "unit=fahrenheit"
    )
    assert (status, err) == (0, "")
    assert json.loads(out) == {
        "city": "Paris",
        "condition": "cloudy",
        "temperature": 53.6,
        "unit": "fahrenheit",
        "humidity_percent": 70,
    }


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        (["name=Ada", "count=3", "ok=true"], {"name": "Ada", "count": 3, "ok": True}),
        (["name=Ada", 'tags=["a", "b"]'], {"tags": ["a", "b"]}),
        (["name=Ada", "note=null"], {"note": None}),
        (["name=Ada", "extra=12"], {"extra": 12}),  # any type: JSON when it parses
        (["name=Ada", 'extra={"k": [1, 2]}'], {"extra": {"k": [1, 2]}}),
        (["name=Ada", "extra=twelve"], {"extra": "twelve"}),  # else the text as typed
        (["name=Ada", "extra=NaN"], {"extra": "NaN"}),  # not JSON: text
        (["name=Ada", "extra=01234"], {"extra": "01234"}),  # not JSON (a leading zero)
        (["name=1984"], {"name": "1984"}),  # a parameter of strings takes the text as typed
        (["name=true"], {"name": "true"}),
        (['name="quoted"'], {"name": "quoted"}),  # a JSON string is its content
        (["name=a=b"], {"name": "a=b"}),  # the first '=' splits
        (["name="], {"name": ""}),
        (["name=北京 市"], {"name": "北京 市"}),
        (["name=a", "extra=" + "[" * 100_000], {"extra": "[" * 100_000}),  # too deep: text
        (["name=a", "extra=19.90"], {"extra": 19.9}),
    ],
)
def test_values_are_json_when_they_parse_else_text(
    capsys: pytest.CaptureFixture[str],
    echo_file: str,
    pairs: list[str],
    expected: dict[str, Any],
) -> None:
    value = value_of(capsys, echo_file, *pairs)
    assert {k: value[k] for k in expected} == expected


def test_a_json_object_still_works_and_so_does_stdin(
    capsys: pytest.CaptureFixture[str], echo_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert value_of(capsys, echo_file, '{"name": "Ada", "count": 2}')["count"] == 2
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"name": "Bo"}'))
    assert value_of(capsys, echo_file, "-")["name"] == "Bo"


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        (["[1, 2]"], "ARGS must be an object, got an array"),
        (['"Ada"'], "ARGS must be an object, got a string"),
        (["5"], "ARGS must be an object, got a number"),
        (["null"], "ARGS must be an object, got null"),
        (["Ada"], "ARGS 'Ada' is not key=value"),
        (
            ["{name"],
            "ARGS is not valid JSON (Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1))",
        ),
        (['{"name": NaN}'], "ARGS is not valid JSON (NaN is not JSON)"),
        (['{"name": "a", "name": "b"}'], "ARGS has the key 'name' twice"),
        (['{"name": "a", "extra": {"k": 1, "k": 2}}'], "ARGS has the key 'k' twice"),
        (["[" * 100_000], "ARGS is nested too deeply"),
        (["name=a", "name=b"], "the key 'name' is given twice"),
        (['{"name": "a"}', "count=1"], "ARGS is one JSON object or key=value pairs, not both"),
        (["count=1", '{"name": "a"}'], "ARGS is one JSON object or key=value pairs, not both"),
        (['{"name": "a"}', '{"count": 1}'], "ARGS is one JSON object or key=value pairs, not both"),
        (["name=a", "Ada"], "'Ada' is not key=value"),
        # the JSON typed unquoted: `toolreg call app.py echo {"name": "Ada"}` in a POSIX shell
        (
            ["{name:", "Ada}"],
            "ARGS looks like one JSON value that the shell split into 2 words and stripped of "
            "its double quotes: quote it whole",
        ),
        (
            ["{name:Ada,", "count:", "1}"],
            "ARGS looks like one JSON value that the shell split into 3 words and stripped of "
            "its double quotes: quote it whole",
        ),
        # quoted in parts: `echo '{"name": "Ada",' '"count": 1}'`
        (
            ['{"name": "Ada",', '"count": 1}'],
            "ARGS looks like one JSON value that the shell split into 2 words: quote it whole",
        ),
        (
            ["[1,", "2]"],
            "ARGS looks like one JSON value that the shell split into 2 words and "
            "stripped of its double quotes: quote it whole",
        ),
        # written without spaces: one word, its quotes gone (`echo {"name":"Ada"}`)
        (
            ["{name:Ada}"],
            "ARGS looks like JSON that the shell stripped of its double quotes: quote it",
        ),
        (["=a"], "'=a' has no key before '='"),
        (['extra={"k": 1, "k": 2}', "name=a"], "the value of 'extra' has the key 'k' twice"),
        (["-", "name=a"], "'-' (read ARGS from stdin) comes alone"),
    ],
)
def test_every_malformed_args_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], echo_file: str, words: list[str], problem: str
) -> None:
    status, out, err = run(capsys, "call", echo_file, "echo", *words)
    assert (status, out) == (2, "")
    assert err == f"toolreg: {problem}; {FIX}\n"


@pytest.mark.parametrize(
    ("stdin", "problem"),
    [
        ("[1]", "the JSON on stdin must be an object, got an array"),
        ('{"name": "a", "name": "b"}', "the JSON on stdin has the key 'name' twice"),
        ("name=a", "the JSON on stdin is not valid JSON"),
    ],
)
def test_malformed_json_on_stdin_exits_2(
    capsys: pytest.CaptureFixture[str],
    echo_file: str,
    monkeypatch: pytest.MonkeyPatch,
    stdin: str,
    problem: str,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status, _, err = run(capsys, "call", echo_file, "echo", "-")
    assert status == 2
    assert err.startswith(f"toolreg: {problem}")
    assert len(err.splitlines()) == 1


def test_arguments_the_tool_rejects_are_its_observation_exit_1(
    capsys: pytest.CaptureFixture[str], echo_file: str
) -> None:
    """Well-formed ARGS the schema rejects: what the model would read, exit status 1."""
    status, out, err = run(capsys, "call", echo_file, "echo", "count=many")
    assert (status, err) == (1, "")
    assert out == (
        "Invalid arguments for tool 'echo':\n"
        "- missing required property 'name'\n"
        "- count: expected integer, got string\n"
    )


def test_an_unknown_tool_with_pairs_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], echo_file: str
) -> None:
    status, _, err = run(capsys, "call", echo_file, "ecko", "name=a")
    assert status == 2
    assert err.startswith("toolreg: Unknown tool 'ecko'. Did you mean 'echo'?")


def command(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    return subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        env={**env, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
        check=False,
    )


def test_a_json_array_exits_2_like_malformed_json() -> None:
    """The reported case: `[...]` exited 1 (an error result) where `{city}` exited 2."""
    array = command("call", WEATHER, "get_weather", '["Paris"]')
    malformed = command("call", WEATHER, "get_weather", "{city}")
    on_stdin = command("call", WEATHER, "get_weather", "-", stdin='["Paris"]')
    assert [array.returncode, malformed.returncode, on_stdin.returncode] == [2, 2, 2]
    assert [array.stdout, malformed.stdout, on_stdin.stdout] == ["", "", ""]
    for done in (array, malformed, on_stdin):
        assert len(done.stderr.splitlines()) == 1
        assert done.stderr.startswith("toolreg: ")


def test_pairs_through_the_real_command_with_options_after_them() -> None:
    done = command("call", WEATHER, "get_weather", "city_name=北京", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["condition"] == "sunny"
