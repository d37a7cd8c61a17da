"""The type table (`toolreg.types`): one record per scalar type, and the guide that shows it
(docs/guides/defining-tools.md)."""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from decimal import Decimal
from pathlib import Path, PurePath
from typing import Any

import pytest

from toolreg import ToolRegistry
from toolreg.types import TYPES, TypeRecord, json_default, record_for

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guides" / "defining-tools.md"
_NAMES = {type(None): "None", PurePath: "Path"}

# An example value of each type, as a model would send it and as a tool would get it.
EXAMPLES: dict[Any, tuple[Any, Any]] = {
    str: ("text", "text"),
    int: (3, 3),
    float: (2.5, 2.5),
    bool: (True, True),
    type(None): (None, None),
    dt.datetime: (
        "2024-05-01T09:30:00+08:00",
        dt.datetime.fromisoformat("2024-05-01T09:30:00+08:00"),
    ),
    dt.date: ("2024-05-01", dt.date(2024, 5, 1)),
    dt.time: ("09:30:00", dt.time(9, 30)),
    dt.timedelta: ("P1DT3600S", dt.timedelta(days=1, hours=1)),
    uuid.UUID: (
        "12345678-1234-5678-1234-567812345678",
        uuid.UUID(int=0x12345678123456781234567812345678),
    ),
    Decimal: ("12.30", Decimal("12.30")),
    PurePath: ("/tmp/x.txt", PurePath("/tmp/x.txt")),
}


def _row(record: TypeRecord) -> str:
    name = _NAMES.get(record.python, record.python.__name__)
    schema = json.dumps(dict(record.schema)).replace("|", "\\|")
    return f"| `{name}` | `{schema}` |"


def test_the_guide_shows_every_record_and_nothing_else() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    table = text[text.index("## Types") : text.index("Everything else is built from those")]
    shown = set(re.findall(r"^\| `[^`]+` \| `\{.*\}` \|$", table, re.MULTILINE))
    expected = {_row(r) for r in TYPES}
    assert shown == expected


def test_every_record_has_an_example_here() -> None:
    assert set(EXAMPLES) == {r.python for r in TYPES}


@pytest.mark.parametrize("record", TYPES, ids=lambda r: r.python.__name__)
def test_a_record_is_what_a_tool_of_that_type_gets(record: TypeRecord) -> None:
    """Schema, JSON -> Python and Python -> JSON of the record, through registration and
    dispatch: the tool advertises the record's schema, receives the Python value and
    returns it as the JSON text the record writes."""
    sent, expected = EXAMPLES[record.python]
    reg = ToolRegistry()
    seen: list[Any] = []

    def echo(value: Any) -> Any:
        seen.append(value)
        return value

    echo.__annotations__ = {"value": record.python, "return": record.python}
    reg.register_tool(echo)
    assert reg["echo"].parameters["properties"]["value"] == dict(record.schema)
    result = reg.dispatch_tool("echo", json.dumps({"value": sent}))
    assert result.ok, result.content
    assert seen == [expected]
    assert type(seen[0]) is type(expected)
    if isinstance(expected, str):
        assert result.content == expected  # text goes to the model as it is
    else:
        value = seen[0] if record.to_json is None else record.to_json(seen[0])
        assert result.content == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize(
    "record", [r for r in TYPES if r.subclasses], ids=lambda r: r.python.__name__
)
def test_a_subclass_is_described_as_its_base_and_built_as_itself(record: TypeRecord) -> None:
    # PurePath itself cannot be subclassed before Python 3.12: take its concrete flavour
    base = type(PurePath()) if record.python is PurePath else record.python
    sub = type(f"My{record.python.__name__}", (base,), {})
    assert record_for(sub) is record
    sent, expected = EXAMPLES[record.python]
    reg = ToolRegistry()
    seen: list[Any] = []

    def take(value: Any) -> str:
        seen.append(value)
        return "ok"

    take.__annotations__ = {"value": sub, "return": str}
    reg.register_tool(take)
    assert reg["take"].parameters["properties"]["value"] == dict(record.schema)
    result = reg.dispatch_tool("take", json.dumps({"value": sent}))
    assert result.ok, result.content
    assert type(seen[0]) is sub
    assert seen[0] == expected


def test_records_without_subclasses_are_exact() -> None:
    assert record_for(bool) is not record_for(int)
    assert record_for(type("Other", (), {})) is None


def test_json_default_reads_the_table() -> None:
    for record in TYPES:
        if record.to_json is not None:
            value = EXAMPLES[record.python][1]
            assert json_default(value) == record.to_json(value)
