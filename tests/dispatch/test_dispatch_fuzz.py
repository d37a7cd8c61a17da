"""Random JSON, strings and bytes thrown at dispatch.

Properties: dispatch always returns a `ToolResult` (never raises); a tool runs only with
arguments that are valid under its own schema (checked inside the tool with jsonschema);
a failed dispatch never ran the tool; and a dict that jsonschema calls valid is accepted.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from typing import Annotated, Any, Literal, Optional, TypedDict

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg import Param, ToolContext, ToolRegistry, ToolResult

KINDS = {
    None,
    "unknown_tool",
    "invalid_json",
    "invalid_arguments",
    "timeout",
    "execution_error",
    "denied",
}

REG = ToolRegistry(max_depth=8, max_payload_bytes=4096)
_lock = threading.Lock()
CALLS: list[tuple[str, dict[str, Any]]] = []
VIOLATIONS: list[tuple[str, dict[str, Any], str]] = []


CHECKERS: dict[str, Any] = {}


def checker_for(name: str) -> Any:
    if name not in CHECKERS:
        CHECKERS[name] = jsonschema.Draft202012Validator(REG[name].parameters)
    return CHECKERS[name]


def record(name: str, arguments: dict[str, Any]) -> None:
    """Called by every tool: is what it received valid under its own schema?"""
    checker = checker_for(name)
    error = jsonschema.exceptions.best_match(checker.iter_errors(arguments))
    with _lock:
        CALLS.append((name, arguments))
        if error is not None:
            VIOLATIONS.append((name, arguments, error.message))


class Item(TypedDict):
    name: Annotated[str, Param(min_length=1)]
    qty: Annotated[int, Param(ge=0, le=99)]


@REG.register_tool
def search(
    query: Annotated[str, Param(min_length=1, max_length=20)],
    limit: Annotated[int, Param(ge=1, le=50)] = 10,
    mode: Literal["fast", "exact"] = "fast",
    tags: Optional[list[str]] = None,
) -> str:
    """Search."""
    record("search", {"query": query, "limit": limit, "mode": mode, "tags": tags})
    return "ok"


@REG.register_tool
def measure(
    value: float,
    unit: Optional[Literal["m", "cm"]] = None,
    flags: Optional[dict[str, bool]] = None,
    precise: bool = False,
) -> str:
    """Measure."""
    record("measure", {"value": value, "unit": unit, "flags": flags, "precise": precise})
    return "ok"


@REG.register_tool
def order(entries: list[Item], note: Optional[str] = None) -> str:
    """Order items."""
    record("order", {"entries": entries, "note": note})
    return "ok"


@REG.register_tool
def anything(**extra: Any) -> str:
    """Takes any keys."""
    record("anything", extra)
    return "ok"


@REG.register_tool
async def later(x: Optional[int] = None, y: str = "y") -> str:
    """Async."""
    record("later", {"x": x, "y": y})
    return "ok"


@REG.register_tool
def with_context(ctx: ToolContext, n: Annotated[int, Param(multiple_of=3)]) -> str:
    """Needs a context."""
    assert isinstance(ctx, ToolContext)
    record("with_context", {"n": n})
    return "ok"


TOOLS = REG.names()
KEYS = ["query", "limit", "mode", "tags", "value", "unit", "flags", "precise", "entries"]
KEYS += ["note", "x", "y", "n", "ctx", "name", "qty", "", "é"]

finite = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 60),
    st.integers(),
    finite,
    st.sampled_from(["fast", "exact", "m", "cm", "", "3", "4.5", "true", "[]", '["a"]', "x"]),
    st.text(max_size=25),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=5)), inner, max_size=4),
    ),
    max_leaves=15,
)
objects = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5)


def sometimes_text(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values, or the same values as a model might send them: as (JSON) text."""
    return st.one_of(values, values.map(json.dumps), values.map(str), json_values)


items = st.fixed_dictionaries(
    {"name": st.text(max_size=4), "qty": sometimes_text(st.integers(-2, 120))}
)
PLAUSIBLE: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "search": st.fixed_dictionaries(
        {"query": st.one_of(st.text(max_size=25), st.text(min_size=1, max_size=9), json_values)},
        optional={
            "limit": sometimes_text(st.one_of(st.integers(0, 60), st.none())),
            "mode": st.sampled_from(["fast", "exact", "slow", None]),
            "tags": sometimes_text(st.one_of(st.none(), st.lists(st.text(max_size=3)))),
        },
    ),
    "measure": st.fixed_dictionaries(
        {"value": sometimes_text(st.one_of(finite, st.integers()))},
        optional={
            "unit": st.sampled_from(["m", "cm", "km", None]),
            "flags": sometimes_text(st.dictionaries(st.text(max_size=3), st.booleans())),
            "precise": sometimes_text(st.booleans()),
        },
    ),
    "order": st.fixed_dictionaries(
        {"entries": sometimes_text(st.lists(items, max_size=3))},
        optional={"note": st.one_of(st.none(), st.text(max_size=5), json_values)},
    ),
    "anything": st.dictionaries(st.text(max_size=5), json_values, max_size=4),
    "later": st.fixed_dictionaries(
        {},
        optional={
            "x": sometimes_text(st.one_of(st.none(), st.integers())),
            "y": st.one_of(st.text(max_size=3), json_values),
        },
    ),
    "with_context": st.fixed_dictionaries({"n": sometimes_text(st.integers(-10, 10))}),
}
plausible = st.one_of(*PLAUSIBLE.values())
plausible_calls = st.one_of(*(st.tuples(st.just(name), args) for name, args in PLAUSIBLE.items()))


@st.composite
def mangled(draw: st.DrawFn) -> str:
    """Valid-looking JSON text with a few characters changed."""
    text = json.dumps(draw(st.one_of(objects, plausible)), ensure_ascii=draw(st.booleans()))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list('{}[]",: \\0aeE-.nN\x00'))) + text[at + 1 :]
    return text


arguments = st.one_of(
    objects,
    plausible,
    objects.map(json.dumps),
    plausible.map(json.dumps),
    mangled(),
    json_values,
    json_values.map(json.dumps),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.dictionaries(st.text(max_size=5), st.floats(), max_size=3),  # NaN / inf in a dict
    st.none(),
)
names = st.integers(0, 9).flatmap(
    lambda k: (
        st.sampled_from(TOOLS)
        if k < 8
        else st.one_of(st.text(max_size=10), st.sampled_from([None, 1, b"x", "searc", "Search"]))
    )
)


def clean_json(value: Any) -> bool:
    """Only what JSON can hold: finite floats, string keys."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and clean_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(clean_json(v) for v in value)
    return True


def check(name: Any, args: Any, result: ToolResult, calls_before: int) -> None:
    assert isinstance(result, ToolResult)
    assert isinstance(result.content, str)
    assert result.error_kind in KINDS
    assert result.ok == (result.error is None)
    assert VIOLATIONS == []
    ran = len(CALLS) - calls_before
    assert ran == (1 if result.ok else 0)
    if result.ok:
        assert CALLS[-1][0] == name
    else:
        assert result.error is not None
        assert result.error.message == result.content
        assert result.error_kind not in {"execution_error", "timeout", "denied"}
        if result.error_kind == "unknown_tool":
            assert result.content.isprintable()
    valid = isinstance(args, dict) and name in TOOLS and clean_json(args)
    if valid and checker_for(name).is_valid(args):
        assert result.ok, (args, result.content)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(name=names, args=arguments)
def test_dispatch_never_raises_and_never_runs_invalid_calls(name: Any, args: Any) -> None:
    before = len(CALLS)
    result = REG.dispatch_tool(name, args, context="deps")
    check(name, args, result, before)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(call=plausible_calls, as_text=st.booleans())
def test_plausible_calls(call: tuple[str, dict[str, Any]], as_text: bool) -> None:
    name, args = call
    before = len(CALLS)
    if as_text:
        result = REG.dispatch_tool(name, json.dumps(args), context="deps")
        check(name, json.loads(json.dumps(args)), result, before)
        return
    result = REG.dispatch_tool(name, args, context="deps")
    check(name, args, result, before)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(st.tuples(names, arguments), max_size=4))
def test_async_dispatch_many_never_raises(batch: list[tuple[Any, Any]]) -> None:
    before = len(CALLS)
    results = asyncio.run(REG.adispatch_many(batch, context="deps"))
    assert len(results) == len(batch)
    assert all(isinstance(r, ToolResult) for r in results)
    assert VIOLATIONS == []
    assert len(CALLS) - before == sum(r.ok for r in results)
