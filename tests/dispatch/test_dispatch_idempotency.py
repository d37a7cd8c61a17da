"""Idempotency keys at dispatch (issue 32, section 2): the one derivation
(`toolreg.idempotency.idempotency_key`), and a key given to `dispatch_tool`,
`adispatch_tool` and `dispatch_many` reaching the tool's `ToolContext` and the result."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import ToolCall, ToolContext, ToolRegistry, UsageError
from toolreg.idempotency import (
    MAX_KEY_CHARS,
    canonical_arguments,
    idempotency_key,
    received_key,
)

UUID8 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
PARTS = ("chat-42", "turn-7", "call_1", "charge")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)


def shuffled_text(value: dict[str, Any], indent: int | None) -> str:
    """The same arguments as other JSON text: keys reversed, other whitespace."""
    reordered = dict(reversed(list(value.items())))
    return json.dumps(reordered, indent=indent, ensure_ascii=indent is None)


# -- the derivation --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(objects, st.sampled_from([None, 1, 4]))
def test_a_key_depends_on_the_decoded_arguments_not_their_text(
    arguments: dict[str, Any], indent: int | None
) -> None:
    key = idempotency_key(*PARTS, json.dumps(arguments))
    assert UUID8.fullmatch(key)
    assert idempotency_key(*PARTS, shuffled_text(arguments, indent)) == key
    assert idempotency_key(*PARTS, arguments) == key  # a mapping: the same arguments
    assert idempotency_key(*PARTS, shuffled_text(arguments, indent).encode()) == key


@settings(max_examples=150, deadline=None)
@given(objects)
def test_canonical_arguments_are_jsons_own_canonical_form(arguments: dict[str, Any]) -> None:
    expected = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert canonical_arguments(json.dumps(arguments)) == expected
    assert canonical_arguments(arguments) == expected


@settings(max_examples=150, deadline=None)
@given(objects, objects)
def test_different_arguments_give_different_keys(a: dict[str, Any], b: dict[str, Any]) -> None:
    same = canonical_arguments(a) == canonical_arguments(b)
    assert (idempotency_key(*PARTS, a) == idempotency_key(*PARTS, b)) is same


def test_every_part_of_the_call_changes_the_key() -> None:
    base = idempotency_key(*PARTS, '{"amount": 5}')
    for i in range(4):
        parts = list(PARTS)
        parts[i] += "x"
        assert idempotency_key(*parts, '{"amount": 5}') != base
    assert idempotency_key(*PARTS, '{"amount": 6}') != base
    assert idempotency_key(*PARTS, '{"amount": 5.5}') != base


def test_the_derivation_is_the_documented_one() -> None:
    """SHA-256 of the canonical JSON list, its first 128 bits as a version 8 UUID: anyone can
    compute it again (a durable replay, another language)."""
    import hashlib

    material = json.dumps(
        ["toolreg-idempotency-1", *PARTS, {"amount": 5, "note": "ü"}],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    digest = bytearray(hashlib.sha256(material.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    expected = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    assert idempotency_key(*PARTS, '{"note": "\\u00fc", "amount": 5}') == expected


def test_the_key_is_the_same_in_another_process() -> None:
    code = (
        "from toolreg.idempotency import idempotency_key as k;"
        f"print(k(*{PARTS!r}, '{{\"a\": [1, 2]}}'))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert other == idempotency_key(*PARTS, {"a": [1, 2]})


@pytest.mark.parametrize(
    ("arguments", "canonical"),
    [
        (None, "{}"),
        ("", "{}"),
        ('{"b": 1, "a": [true, null]}', '{"a":[true,null],"b":1}'),
        ('{"city": "北京"}', '{"city":"北京"}'),
        ("{not json", '"{not json"'),  # kept as text: still one key, unlike any arguments
        ('{"n": NaN}', '"{\\"n\\": NaN}"'),
        ("[" * 100_000, json.dumps("[" * 100_000)),  # too deep to decode: text
    ],
)
def test_canonical_arguments(arguments: Any, canonical: str) -> None:
    assert canonical_arguments(arguments) == canonical


def test_a_received_key_is_bounded_printable_text() -> None:
    assert received_key("abc-1") == "abc-1"
    for bad in ("", "x" * (MAX_KEY_CHARS + 1), "a\nb", 5, None, b"key", ["k"]):
        assert received_key(bad) is None


# -- dispatch --------------------------------------------------------------------------------


def keyed_registry(seen: list[Any]) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def charge(amount: int, ctx: ToolContext[None]) -> str:
        """Charge an amount."""
        seen.append(ctx.idempotency_key)
        return "charged"

    @reg.register_tool
    async def acharge(amount: int, ctx: ToolContext[None]) -> str:
        """Charge an amount (async)."""
        seen.append(ctx.idempotency_key)
        return "charged"

    @reg.register_tool
    def plain(amount: int) -> int:
        """No context."""
        return amount

    return reg


@pytest.mark.parametrize("tool", ["charge", "acharge"])
def test_dispatch_hands_the_key_to_the_tool_and_the_result(tool: str) -> None:
    seen: list[Any] = []
    reg = keyed_registry(seen)
    result = reg.dispatch_tool(tool, {"amount": 5}, idempotency_key="k-1")
    assert (result.ok, result.idempotency_key, result.outcome) == (True, "k-1", "completed")
    later = asyncio.run(reg.adispatch_tool(tool, {"amount": 5}, idempotency_key="k-2"))
    assert later.idempotency_key == "k-2"
    none = reg.dispatch_tool(tool, {"amount": 5})
    assert none.idempotency_key is None
    assert seen == ["k-1", "k-2", None]


def test_a_refused_call_keeps_its_key_and_did_not_start() -> None:
    reg = keyed_registry([])
    refused = reg.dispatch_tool("charge", {"amount": "lots"}, idempotency_key="k-9")
    assert (refused.ok, refused.outcome, refused.idempotency_key) == (False, "not_started", "k-9")
    unknown = reg.dispatch_tool("nope", {}, idempotency_key="k-8")
    assert (unknown.outcome, unknown.idempotency_key) == ("not_started", "k-8")
    plain = reg.dispatch_tool("plain", {"amount": 1}, idempotency_key="k-7")
    assert (plain.ok, plain.idempotency_key) == (True, "k-7")


def test_dispatch_many_takes_each_calls_key() -> None:
    seen: list[Any] = []
    reg = keyed_registry(seen)
    calls: list[Any] = [
        ToolCall("charge", {"amount": 1}, "c1", "key-a"),
        ("charge", {"amount": 2}, "c2", "key-b"),
        {"name": "charge", "arguments": {"amount": 3}, "id": "c3", "idempotency_key": "key-c"},
        ("charge", {"amount": 4}),
    ]
    results = reg.dispatch_many(calls)
    assert [r.idempotency_key for r in results] == ["key-a", "key-b", "key-c", None]
    assert sorted(seen, key=str) == sorted(["key-a", "key-b", "key-c", None], key=str)
    again = asyncio.run(reg.adispatch_many(calls[:2]))
    assert [r.idempotency_key for r in again] == ["key-a", "key-b"]


def test_a_context_of_the_callers_own_keeps_its_key_unless_dispatch_gets_one() -> None:
    seen: list[Any] = []
    reg = keyed_registry(seen)
    mine = ToolContext(None, idempotency_key="from-the-caller")
    reg.dispatch_tool("charge", {"amount": 1}, context=mine)
    reg.dispatch_tool("charge", {"amount": 1}, context=mine, idempotency_key="given")
    assert seen == ["from-the-caller", "given"]


def test_a_key_that_is_not_text_is_the_callers_mistake() -> None:
    reg = keyed_registry([])
    with pytest.raises(UsageError, match=r"dispatch_tool\(idempotency_key=5\): must be a str"):
        reg.dispatch_tool("charge", {"amount": 1}, idempotency_key=5)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="idempotency_key"):
        asyncio.run(reg.adispatch_tool("charge", {"amount": 1}, idempotency_key=b"k"))  # type: ignore[arg-type]
