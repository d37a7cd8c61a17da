"""Bounds on a `Decimal` (a number that travels as a JSON number or, exactly, as a numeric
string): the number branch of its schema carries them as keywords, the string branch says
them in words, and dispatch checks them exactly on the converted value, for a number and a
numeric string alike. From `Param`, pydantic's `Field`/`condecimal`, `annotated_types`; on a
parameter, a record's field, a list's items. A value that is no decimal number is said to be
that, in words, not shown as a regex."""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from typing import Annotated, Any

import annotated_types as at
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import Param, Tool, ToolDefinitionError, ToolRegistry
from toolreg.types import DECIMAL_PATTERN

TEXT = {"type": "string", "pattern": DECIMAL_PATTERN}
PREFIX = "Invalid arguments for tool 'pay': "


def tool_with(annotation: Any) -> ToolRegistry:
    registry = ToolRegistry()

    def pay(amount: Any) -> str:
        """Pay an amount."""
        return f"paid {amount!r}"

    pay.__annotations__["amount"] = annotation  # this module's annotations are strings
    registry.register_tool(pay)
    return registry


def amount_schema(registry: ToolRegistry) -> Any:
    return registry["pay"].parameters["properties"]["amount"]


def answer(registry: ToolRegistry, value: Any) -> str:
    return registry.dispatch_tool("pay", {"amount": value}).content


# -- the schema -------------------------------------------------------------------------------


def test_gt_on_a_decimal_is_a_keyword_of_the_number_and_words_on_the_string() -> None:
    registry = tool_with(Annotated[Decimal, Param(gt=0, le=1000)])
    assert amount_schema(registry) == {
        "anyOf": [
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
            {**TEXT, "description": "a decimal number > 0 and <= 1000"},
        ]
    }


def test_decimal_bounds_are_written_as_json_numbers_and_said_as_written() -> None:
    registry = tool_with(Annotated[Decimal, Param(ge=Decimal("0.01"), lt=Decimal("1E+3"))])
    number, text = amount_schema(registry)["anyOf"]
    assert number == {"type": "number", "minimum": 0.01, "exclusiveMaximum": 1000}
    assert text["description"] == "a decimal number >= 0.01 and < 1E+3"
    json.dumps(registry.get_tools())  # JSON: no Decimal inside


def test_multiple_of_on_a_decimal_is_said_in_words_only() -> None:
    registry = tool_with(Annotated[Decimal, Param(multiple_of=Decimal("0.01"))])
    number, text = amount_schema(registry)["anyOf"]
    assert number == {"type": "number", "description": "a multiple of 0.01"}  # no multipleOf
    assert text["description"] == "a decimal number a multiple of 0.01"


def test_an_optional_decimal_keeps_its_null_branch() -> None:
    registry = tool_with(Annotated[Decimal | None, Param(gt=0)])
    assert amount_schema(registry)["anyOf"] == [
        {"type": "number", "exclusiveMinimum": 0},
        {**TEXT, "description": "a decimal number > 0"},
        {"type": "null"},
    ]
    assert answer(registry, None) == "paid None"
    assert answer(registry, "0") == PREFIX + "amount: must be > 0."


def test_the_type_tables_decimal_schema_is_left_as_it_was() -> None:
    tool_with(Annotated[Decimal, Param(gt=0)])
    plain = tool_with(Decimal)
    assert amount_schema(plain) == {"anyOf": [{"type": "number"}, TEXT]}


@pytest.mark.parametrize(
    ("param", "problem"),
    [
        (Param(gt="0"), "gt='0' must be a number"),  # type: ignore[arg-type]
        (Param(ge=Decimal("NaN")), "ge=Decimal('NaN') must be a number"),
        (Param(gt=5, lt=Decimal("5")), "the bounds leave no valid value (lower 5, upper 5)"),
        (Param(ge=2, le=1), "the bounds leave no valid value (lower 2, upper 1)"),
        (Param(multiple_of=0), "multiple_of must be > 0"),
        (Param(multiple_of=Decimal("-0.01")), "multiple_of must be > 0"),
    ],
)
def test_a_wrong_bound_on_a_decimal_is_a_definition_error(param: Param, problem: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        tool_with(Annotated[Decimal, param])
    assert problem in str(info.value)
    assert info.value.parameter == "amount"


def test_a_pattern_on_a_decimal_is_still_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="not to a union of several types"):
        tool_with(Annotated[Decimal, Param(pattern="^1")])


# -- dispatch ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "content"),
    [
        (1, "paid Decimal('1')"),
        ("1", "paid Decimal('1')"),
        ("0.0000000000000000000000001", "paid Decimal('1E-25')"),
        (0, PREFIX + "amount: must be > 0."),
        ("0", PREFIX + "amount: must be > 0."),
        ("-0.00", PREFIX + "amount: must be > 0."),
        (-5, PREFIX + "amount: must be > 0."),
        ("-1e-30", PREFIX + "amount: must be > 0."),
        ("1000", "paid Decimal('1000')"),
        (1000, "paid Decimal('1000')"),
        ("1000.0000000000000000000001", PREFIX + "amount: must be <= 1000."),
        ("1e3", "paid Decimal('1E+3')"),
        ("1.0001e3", PREFIX + "amount: must be <= 1000."),
    ],
)
def test_bounds_hold_for_a_number_and_a_numeric_string_alike(value: Any, content: str) -> None:
    assert answer(tool_with(Annotated[Decimal, Param(gt=0, le=1000)]), value) == content


def test_a_decimal_bound_is_compared_exactly() -> None:
    registry = tool_with(Annotated[Decimal, Param(gt=Decimal("0.1"))])
    assert answer(registry, "0.1") == PREFIX + "amount: must be > 0.1."
    assert answer(registry, "0.1000000000000000000000001").startswith("paid")
    # a float reads 0.10000000000000000001 as 0.1; the string is compared as written
    assert answer(registry, "0.09999999999999999999") == PREFIX + "amount: must be > 0.1."
    # a float bound is the number it was written as, not its binary expansion
    registry = tool_with(Annotated[Decimal, Param(ge=0.1)])
    assert answer(registry, "0.1") == "paid Decimal('0.1')"
    assert answer(registry, 0.1) == "paid Decimal('0.1')"


def test_multiple_of_is_checked_exactly_for_numbers_and_strings() -> None:
    registry = tool_with(Annotated[Decimal, Param(multiple_of=Decimal("0.01"))])
    for good in (0.07, "0.07", "19.99", 3, "-4.10", "1e999999999", "0"):
        assert answer(registry, good).startswith("paid"), good
    for bad in ("0.075", 0.001, "1e-999999999", "12345678901234567890.001"):
        assert answer(registry, bad) == PREFIX + "amount: must be a multiple of 0.01.", bad


def test_every_broken_bound_is_reported() -> None:
    registry = tool_with(Annotated[Decimal, Param(ge=1, multiple_of=Decimal("0.5"))])
    assert answer(registry, "0.3") == (
        f"{PREFIX.rstrip()}\n- amount: must be >= 1\n- amount: must be a multiple of 0.5"
    )


@dataclasses.dataclass
class Line:
    price: Annotated[Decimal, Param(ge=0)]


def test_bounds_inside_records_and_lists() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def order(lines: list[Line], caps: list[Annotated[Decimal, Param(le=5)]]) -> str:
        """Place an order."""
        return f"{lines} {caps}"

    bad = registry.dispatch_tool("order", {"lines": [{"price": "-1"}], "caps": ["5", "5.1"]})
    assert bad.content == (
        "Invalid arguments for tool 'order':\n- lines[0].price: must be >= 0\n"
        "- caps[1]: must be <= 5"
    )
    good = registry.dispatch_tool("order", {"lines": [{"price": "0"}], "caps": [5]})
    assert good.content == "[Line(price=Decimal('0'))] [Decimal('5')]"


def test_pydantic_and_annotated_types_bounds_reach_the_same_path() -> None:
    pydantic = pytest.importorskip("pydantic")
    for annotation in (
        Annotated[Decimal, pydantic.Field(gt=0)],
        pydantic.condecimal(gt=0),
        Annotated[Decimal, at.Gt(0)],
        Annotated[Decimal, at.Interval(gt=0)],
    ):
        registry = tool_with(annotation)
        assert amount_schema(registry)["anyOf"][0] == {"type": "number", "exclusiveMinimum": 0}
        assert answer(registry, "-1") == PREFIX + "amount: must be > 0.", annotation
        assert answer(registry, "2.5") == "paid Decimal('2.5')"


def test_a_pydantic_models_decimal_bound_names_the_bound() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Payment(pydantic.BaseModel):
        amount: pydantic.condecimal(gt=Decimal("0.5"))  # type: ignore[valid-type]

    registry = ToolRegistry()

    def pay(payment: Any) -> str:
        """Pay."""
        return str(payment.amount)

    pay.__annotations__["payment"] = Payment
    registry.register_tool(pay)

    bad = registry.dispatch_tool("pay", {"payment": {"amount": "0.5"}})
    assert bad.content == PREFIX + "payment.amount: must be > 0.5."


@settings(max_examples=200, deadline=None)
@given(
    value=st.decimals(allow_nan=False, allow_infinity=False),
    low=st.decimals(min_value=-(10**6), max_value=10**6, places=3),  # low + 10: exact
    as_number=st.booleans(),
)
def test_a_value_passes_exactly_when_it_is_within_the_bounds(
    value: Decimal, low: Decimal, as_number: bool
) -> None:
    registry = tool_with(Annotated[Decimal, Param(gt=low, le=low + 10)])
    if as_number:  # what the model sends as a JSON number arrives as a float
        sent: Any = float(value)
        if not math.isfinite(sent):
            return
        value = Decimal(repr(sent))
    else:
        sent = str(value)
    content = answer(registry, sent)
    within = low < value <= low + 10
    assert content.startswith("paid") == within, (sent, low, content)


# -- a value that is no decimal number --------------------------------------------------------


@pytest.mark.parametrize(
    "annotation", [Decimal, Decimal | None, Annotated[Decimal, Param(gt=0)]], ids=str
)
def test_a_bad_decimal_is_said_in_words_not_as_a_regex(annotation: Any) -> None:
    content = answer(tool_with(annotation), "12,50")
    assert content == PREFIX + "amount: '12,50' is not a decimal number."
    assert "pattern" not in content


def test_a_mounted_schema_with_the_decimal_pattern_says_it_in_words_too() -> None:
    tool = Tool.from_schema(
        "pay",
        {"type": "object", "properties": {"amount": TEXT}, "required": ["amount"]},
        lambda amount: amount,
        untrusted=True,
    )
    registry = ToolRegistry()
    registry.add(tool)
    assert answer(registry, "abc") == PREFIX + "amount: 'abc' is not a decimal number."
