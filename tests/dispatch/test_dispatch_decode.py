"""Dispatch step 2: decoding the model's arguments (JSON text, bytes, dict, None)."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest

from toolreg import InvalidArgumentsError, ToolRegistry, ToolResult


def make_registry(**settings: Any) -> tuple[ToolRegistry, list[dict[str, Any]]]:
    reg = ToolRegistry(**settings)
    seen: list[dict[str, Any]] = []

    @reg.register_tool
    def echo(data: Any = None, **more: Any) -> str:
        """Echo what arrived."""
        seen.append({"data": data, **more})
        return "ok"

    @reg.register_tool
    def add(a: int = 1, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    return reg, seen


# -- accepted forms -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a": 40, "b": 2}',
        b'{"a": 40, "b": 2}',
        bytearray(b'{"a": 40, "b": 2}'),
        memoryview(b'{"a": 40, "b": 2}'),
        {"a": 40, "b": 2},
        OrderedDict(a=40, b=2),
        MappingProxyType({"a": 40, "b": 2}),
        ' \n\t{"a": 40, "b": 2}\n ',
    ],
    ids=["str", "bytes", "bytearray", "memoryview", "dict", "ordereddict", "mapping", "padded"],
)
def test_accepted_argument_forms(arguments: Any) -> None:
    reg, _ = make_registry()
    result = reg.dispatch_tool("add", arguments)
    assert result.ok, result.content
    assert result.value == 42
    assert result.content == "42"


@pytest.mark.parametrize("arguments", [None, "", " ", "\n\t  \r\n", b"", b"  ", {}])
def test_empty_arguments_mean_an_empty_object(arguments: Any) -> None:
    reg, _ = make_registry()
    result = reg.dispatch_tool("add", arguments)
    assert result.ok
    assert result.value == 3
    assert result.arguments == {}


def test_arguments_default_to_none() -> None:
    reg, _ = make_registry()
    assert reg.dispatch_tool("add").value == 3


def test_utf8_bytes_and_unicode_text() -> None:
    reg, seen = make_registry()
    assert reg.dispatch_tool("echo", '{"data": "北京 😀"}'.encode()).ok
    assert reg.dispatch_tool("echo", '{"data": "\\u5317\\u4eac"}').ok
    assert [s["data"] for s in seen] == ["北京 😀", "北京"]


def test_caller_dict_is_not_modified() -> None:
    reg, _ = make_registry()
    args = {"a": "40", "b": None}
    assert reg.dispatch_tool("add", args).value == 42
    assert args == {"a": "40", "b": None}


def test_duplicate_keys_last_one_wins() -> None:
    reg, _ = make_registry()
    assert reg.dispatch_tool("add", '{"a": 1, "a": 40}').value == 42


# -- invalid JSON -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1', "Expecting ',' delimiter at line 1, column 8"),
        ("{'a': 1}", "Expecting property name enclosed in double quotes at line 1, column 2"),
        ('{\n  "a": 1,\n  "b": two\n}', "Expecting value at line 3, column 8"),
        ('{"a": 1} {"b": 2}', "Extra data at line 1, column 10"),
        ("{a: 1}", "Expecting property name enclosed in double quotes at line 1, column 2"),
        ("not json", "Expecting value at line 1, column 1"),
        ('{"a": "\x00"}', "Invalid control character at line 1, column 8"),
        ('{"a": "open', "Unterminated string starting at line 1, column 7"),
    ],
)
def test_invalid_json_names_line_and_column(text: str, message: str) -> None:
    reg, _ = make_registry()
    result = reg.dispatch_tool("add", text)
    assert not result.ok
    assert result.error_kind == "invalid_json"
    assert result.content == f"Arguments are not valid JSON: {message}."
    assert isinstance(result.error, InvalidArgumentsError)
    assert result.error.tool_name == "add"
    assert result.tool_name == "add"
    assert result.exception is None


def test_invalid_utf8_bytes() -> None:
    reg, _ = make_registry()
    result = reg.dispatch_tool("add", b'{"a": "\xff"}')
    assert result.error_kind == "invalid_json"
    assert result.content == "Arguments are not valid UTF-8 text."


@pytest.mark.parametrize(
    ("arguments", "got"),
    [
        ("[1, 2]", "array"),
        ("[]", "array"),
        ('"{\\"a\\": 1}"', "string"),
        ("42", "integer"),
        ("4.5", "number"),
        ("true", "boolean"),
        ("null", "null"),
        (b"[1]", "array"),
        (42, "integer"),
        ([1, 2], "array"),
        ((1, 2), "tuple"),
        (object(), "object"),
    ],
)
def test_non_object_arguments_say_an_object_was_expected(arguments: Any, got: str) -> None:
    reg, _ = make_registry()
    result = reg.dispatch_tool("add", arguments)
    assert result.error_kind == "invalid_json"
    assert result.content == f"Arguments must be a JSON object, got {got}."


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": -Infinity}', "-Infinity"),
        ('{"data": [1, {"x": NaN}]}', "NaN"),
    ],
)
def test_nan_and_infinity_are_rejected(text: str, token: str) -> None:
    reg, seen = make_registry()
    result = reg.dispatch_tool("echo", text)
    assert result.error_kind == "invalid_json"
    assert result.content == f"Arguments are not valid JSON: {token} is not a valid number."
    assert seen == []


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e999"])
def test_numbers_that_overflow_to_infinity_are_rejected(number: str) -> None:
    reg, seen = make_registry()
    result = reg.dispatch_tool("echo", f'{{"data": {number}}}')
    assert result.error_kind == "invalid_json"
    assert result.content == (
        f"Arguments are not valid JSON: {number} is not a valid number (out of range)."
    )
    assert seen == []


def test_integers_with_too_many_digits_are_rejected_cheaply() -> None:
    reg, seen = make_registry()
    result = reg.dispatch_tool("echo", '{"data": ' + "9" * 5000 + "}")
    assert result.error_kind == "invalid_json"
    assert result.content == "Arguments are not valid JSON: a number has more than 4300 digits."
    ok = reg.dispatch_tool("echo", '{"data": -' + "9" * 4300 + "}")
    assert ok.ok
    assert seen[0]["data"] == -int("9" * 4300)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_in_a_dict_are_rejected(value: float) -> None:
    reg, seen = make_registry()
    token = json.dumps(value)
    result = reg.dispatch_tool("echo", {"data": {"x": [value]}})
    assert result.error_kind == "invalid_json"
    assert result.content == f"Arguments are not valid JSON: {token} is not a valid number."
    assert seen == []


@pytest.mark.parametrize("key", [1, None, ("a",), True])
def test_non_string_keys_in_a_dict_are_rejected(key: Any) -> None:
    reg, seen = make_registry()
    kind = {int: "integer", type(None): "null", tuple: "tuple", bool: "boolean"}[type(key)]
    for arguments in ({key: 1}, {"data": {key: 1}}, {"data": [{key: 1}]}):
        result = reg.dispatch_tool("echo", arguments)
        assert result.error_kind == "invalid_json"
        assert result.content == (
            f"Arguments are not valid JSON: object keys must be strings, got {kind}."
        )
    assert seen == []


# -- size limit ---------------------------------------------------------------------------


def test_payload_size_limit_default_is_one_mebibyte() -> None:
    reg, seen = make_registry()
    body = '{"data": "' + "x" * (1024 * 1024 - 12) + '"}'
    assert len(body) == 1024 * 1024
    assert reg.dispatch_tool("echo", body).ok
    too_big = body[:-2] + 'x"}'
    result = reg.dispatch_tool("echo", too_big)
    assert result.error_kind == "invalid_arguments"
    assert result.content == ("Arguments are too large: 1048577 bytes, the limit is 1048576 bytes.")
    assert len(seen) == 1


def test_payload_size_limit_is_configurable_and_counts_utf8_bytes() -> None:
    reg, _ = make_registry(max_payload_bytes=20)
    assert reg.dispatch_tool("echo", '{"data": "abcdefg"}').ok  # 19 bytes
    result = reg.dispatch_tool("echo", '{"data": "北京"}')  # 14 characters, 18 bytes
    assert result.ok
    result = reg.dispatch_tool("echo", '{"data": "北京京"}')  # 15 characters, 21 bytes
    assert result.content == "Arguments are too large: 21 bytes, the limit is 20 bytes."
    result = reg.dispatch_tool("echo", '{"data": "北京京"}'.encode())
    assert result.content == "Arguments are too large: 21 bytes, the limit is 20 bytes."


def test_size_limit_applies_before_parsing() -> None:
    reg, _ = make_registry(max_payload_bytes=10)
    result = reg.dispatch_tool("echo", "[" * 11)  # invalid JSON, but too large first
    assert result.content == "Arguments are too large: 11 bytes, the limit is 10 bytes."
    blank = reg.dispatch_tool("echo", " " * 11)
    assert blank.content == "Arguments are too large: 11 bytes, the limit is 10 bytes."


# -- depth limit --------------------------------------------------------------------------


def nested(levels: int) -> str:
    """An object nesting `levels` containers: 1 is `{"data": 0}`, 2 `{"data": [0]}`..."""
    return '{"data": ' + "[" * (levels - 1) + "0" + "]" * (levels - 1) + "}"


def test_depth_limit_default_is_64_levels() -> None:
    reg, seen = make_registry()
    assert reg.dispatch_tool("echo", nested(64)).ok
    result = reg.dispatch_tool("echo", nested(65))
    assert result.error_kind == "invalid_arguments"
    assert result.content == "Arguments are nested too deeply: the limit is 64 levels."
    assert len(seen) == 1


def test_depth_limit_is_configurable() -> None:
    reg, _ = make_registry(max_depth=3)
    assert reg.dispatch_tool("echo", '{"data": {"b": {"c": 1}}}').ok
    assert reg.dispatch_tool("echo", '{"data": {"b": {}}}').ok
    assert reg.dispatch_tool("echo", '{"data": [[], [], {"k": 1}]}').ok
    result = reg.dispatch_tool("echo", '{"data": {"b": {"c": []}}}')
    assert result.content == "Arguments are nested too deeply: the limit is 3 levels."
    result = reg.dispatch_tool("echo", '{"data": [1, [2, [3]]]}')
    assert result.content == "Arguments are nested too deeply: the limit is 3 levels."


def test_brackets_inside_strings_do_not_count() -> None:
    reg, _ = make_registry(max_depth=2)
    assert reg.dispatch_tool("echo", '{"data": "[[[[{{{{"}').ok
    assert reg.dispatch_tool("echo", {"data": ["[[[[{{{{"]}).ok


def test_depth_limit_applies_to_dict_arguments() -> None:
    reg, seen = make_registry(max_depth=3)
    assert reg.dispatch_tool("echo", {"data": [[1]]}).ok
    result = reg.dispatch_tool("echo", {"data": [[[1]]]})
    assert result.content == "Arguments are nested too deeply: the limit is 3 levels."
    assert len(seen) == 1


def test_self_referencing_dict_is_refused_not_looped_forever() -> None:
    reg, seen = make_registry()
    loop: dict[str, Any] = {}
    loop["self"] = loop
    result = reg.dispatch_tool("echo", {"data": loop})
    assert result.content == "Arguments are nested too deeply: the limit is 64 levels."
    assert seen == []


@pytest.mark.parametrize(
    "payload",
    [
        "[" * 100_000,
        "{" * 100_000,
        '{"a":' * 100_000,
        '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"data": ' + '{"a": ' * 50_000 + "1" + "}" * 50_001,
    ],
    ids=["brackets", "braces", "keys", "balanced", "objects"],
)
def test_deep_payloads_never_raise_recursion_error(payload: str) -> None:
    reg, seen = make_registry()
    result = reg.dispatch_tool("echo", payload)
    assert isinstance(result, ToolResult)
    assert not result.ok
    assert result.content in {
        "Arguments are nested too deeply: the limit is 64 levels.",
        "Arguments are not valid JSON: Expecting property name enclosed in double quotes "
        "at line 1, column 2.",
    }
    assert seen == []


def test_deep_payload_with_a_huge_custom_depth_limit_is_still_safe() -> None:
    reg, _ = make_registry(max_depth=10**9)
    result = reg.dispatch_tool("echo", '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert isinstance(result, ToolResult)
    assert result.content == "Arguments are nested too deeply: the limit is 1000000000 levels."


def test_decode_errors_in_async_dispatch() -> None:
    reg, _ = make_registry(max_depth=2)

    async def run() -> list[str]:
        return [
            (await reg.adispatch_tool("echo", text)).content
            for text in ('{"a": 1', "[1]", '{"data": [[1]]}', '{"data": NaN}')
        ]

    assert asyncio.run(run()) == [
        "Arguments are not valid JSON: Expecting ',' delimiter at line 1, column 8.",
        "Arguments must be a JSON object, got array.",
        "Arguments are nested too deeply: the limit is 2 levels.",
        "Arguments are not valid JSON: NaN is not a valid number.",
    ]
