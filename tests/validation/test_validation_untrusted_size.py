"""`check_size`'s length bound: it skips writing a schema's JSON only when the JSON cannot
be past `MAX_SCHEMA_CHARS`; whatever it skips, it says what the exact length says."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg.validation.untrusted import (
    MAX_SCHEMA_CHARS,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_VALUES,
    UntrustedSchemaError,
    check_size,
)


def refused(schema: Any) -> bool:
    try:
        check_size(schema)
    except UntrustedSchemaError:
        return True
    return False


def exact(schema: Any) -> bool:
    """What the limits say, the slow way."""
    values, depth, todo = 0, 0, [(schema, 1)]
    while todo:
        value, level = todo.pop()
        values += 1
        if isinstance(value, (dict, list)):
            depth = max(depth, level)
            todo.extend(
                (v, level + 1) for v in (value.values() if isinstance(value, dict) else value)
            )
    try:
        text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return True
    return values > MAX_SCHEMA_VALUES or depth > MAX_SCHEMA_DEPTH or len(text) > MAX_SCHEMA_CHARS


# long strings of what JSON escapes (control characters six-fold, quotes two-fold)
texts = st.integers(0, 60_000).flatmap(
    lambda n: st.sampled_from(["\x00", '"', "a", "é", "\\"]).map(lambda c: c * n)
)
numbers = st.one_of(st.integers(), st.floats(), st.integers(-(10**40), 10**40))
leaves = st.one_of(st.none(), st.booleans(), numbers, texts)
schemas = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(schemas)
def test_the_bound_never_lets_a_longer_schema_through(schema: Any) -> None:
    assert refused(schema) == exact(schema)


@pytest.mark.parametrize(
    ("text", "past"),
    [
        ("\x00" * (MAX_SCHEMA_CHARS // 6 + 100), True),  # short as text, long as JSON
        ("\x00" * (MAX_SCHEMA_CHARS // 6 - 100), False),
        ("a" * (MAX_SCHEMA_CHARS - 100), False),
    ],
)
def test_escaped_characters_count_as_json_writes_them(text: str, past: bool) -> None:
    assert refused({"type": "object", "description": text}) is past
