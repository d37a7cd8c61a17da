"""Programmatic tool calling on the Responses API (issue 20): `register_tool(allowed_callers=...,
output_schema=...)` in the export, checked at registration; calls a program made
(`caller={"type": "program", ...}`) dispatched like any other, approvals, call limits and
timeouts included, over the real `openai` SDK against ScriptedServer on 127.0.0.1."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from _sdk_shapes import conforms
from openai.types.responses import FunctionToolParam

from toolreg import Conversation, ToolDefinitionError, ToolRegistry
from toolreg.mcp.catalog import output_schema
from toolreg.testing import ScriptedServer, raw, text

MODEL = "scripted-model"


class Weather(TypedDict):
    city: str
    temperature: float


@dataclass
class Order:
    id: str
    status: str
    note: str = ""


ORDER_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "status": {"type": "string"}},
    "required": ["id", "status"],
    "additionalProperties": False,
}


def programmatic() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(allowed_callers=["programmatic"], output_schema=True)
    def get_weather(city: str) -> Weather:
        """Current weather of a city."""
        return {"city": city, "temperature": 18.5}

    @registry.register_tool(allowed_callers=["direct", "programmatic"], output_schema=True)
    def find_order(order_id: str) -> Order:
        """Find an order by its id."""
        return Order(order_id, "shipped")

    @registry.register_tool(output_schema=ORDER_SCHEMA)
    def order_status(order_id: str) -> dict[str, Any]:
        """The status of an order."""
        return {"id": order_id, "status": "shipped"}

    @registry.register_tool
    def get_time() -> str:
        """The current time."""
        return "12:00"

    return registry


# -- the export ---------------------------------------------------------------------------------


def test_allowed_callers_and_a_strict_output_schema_are_exported_for_responses() -> None:
    exported = {d["name"]: d for d in programmatic().get_tools("responses")}
    assert exported["get_weather"]["allowed_callers"] == ["programmatic"]
    assert exported["get_weather"]["output_schema"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
        "required": ["city", "temperature"],
        "additionalProperties": False,
    }
    order = exported["find_order"]["output_schema"]
    assert order["required"] == ["id", "status", "note"]  # strict: every key, always
    assert order["additionalProperties"] is False
    assert exported["find_order"]["allowed_callers"] == ["direct", "programmatic"]
    assert exported["order_status"]["output_schema"] == ORDER_SCHEMA
    assert "allowed_callers" not in exported["order_status"]
    assert {"allowed_callers", "output_schema"}.isdisjoint(exported["get_time"])
    for definition in exported.values():
        assert conforms(definition, FunctionToolParam) == []


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini", "mcp"])
def test_other_formats_do_not_carry_the_responses_fields(fmt: str) -> None:
    for definition in programmatic().get_tools(fmt):
        text_of = repr(definition)
        assert "allowed_callers" not in text_of
        assert "output_schema" not in text_of


def test_the_mcp_server_reads_the_given_output_schema() -> None:
    registry = programmatic()
    assert output_schema(registry["order_status"]) == ORDER_SCHEMA  # dict return: given
    assert output_schema(registry["get_time"]) is None


# -- checked at registration --------------------------------------------------------------------


def _register(**options: Any) -> None:
    registry = ToolRegistry()

    def lookup(order_id: str) -> dict[str, Any]:
        """Look an order up."""
        return {}

    registry.register_tool(lookup, **options)


@pytest.mark.parametrize(
    ("options", "problem", "fix"),
    [
        ({"allowed_callers": "programmatic"}, "must be a list", "allowed_callers=['direct'"),
        ({"allowed_callers": ["robot"]}, "'robot' is neither 'direct'", "allowed_callers="),
        ({"allowed_callers": []}, "empty: nobody could call", "allowed_callers="),
        ({"allowed_callers": ["direct", "direct"]}, "a caller twice", "allowed_callers="),
        ({"output_schema": True}, "an open object (a dict)", "annotate the return"),
        ({"output_schema": 5}, "must be a JSON Schema dict or True", "annotate the return"),
        ({"output_schema": {"type": "object"}}, "a closed object", "additionalProperties"),
        ({"output_schema": {"type": "string"}}, "a closed object", "additionalProperties"),
        ({"output_schema": {"type": 7}}, "not valid JSON Schema at type", "correct the schema"),
        (
            {
                "output_schema": {
                    "type": "object",
                    "properties": {"tags": {"type": "object"}},
                    "additionalProperties": False,
                }
            },
            "output_schema cannot be strict: an open object",
            "",
        ),
    ],
)
def test_misuse_is_an_error_naming_the_function_and_the_fix(
    options: dict[str, Any], problem: str, fix: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        _register(**options)
    assert "lookup" in str(caught.value)
    assert problem in caught.value.problem
    assert fix in (caught.value.fix or "")


def test_output_schema_true_on_a_text_result_is_refused() -> None:
    registry = ToolRegistry()

    def now() -> str:
        """The time."""
        return "12:00"

    with pytest.raises(ToolDefinitionError, match="now: output_schema=True"):
        registry.register_tool(now, output_schema=True)


# -- calls a program made, on the wire -------------------------------------------------------


def _program_call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
        "caller": {"type": "program", "caller_id": "prog_1"},
    }


def _chat(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=registry, dialect="responses", **options)


def _outputs(server: ScriptedServer, index: int) -> list[dict[str, Any]]:
    sent = server.requests[index]["input"]
    return [i for i in sent if i.get("type") == "function_call_output"]


def test_a_program_call_runs_and_its_definition_went_out_with_the_fields() -> None:
    call = _program_call("get_weather", '{"city": "Oslo"}')
    with ScriptedServer([raw([call]), text("18.5 degrees.")]) as server:
        reply = _chat(server, programmatic()).send("weather in Oslo?")
    sent = {t["name"]: t for t in server.requests[0]["tools"]}
    assert sent["get_weather"]["allowed_callers"] == ["programmatic"]
    assert sent["get_weather"]["output_schema"]["required"] == ["city", "temperature"]
    assert reply.tool_results[0].ok
    assert _outputs(server, 1)[0]["output"] == '{"city": "Oslo", "temperature": 18.5}'
    echoed = [i for i in server.requests[1]["input"] if i.get("type") == "function_call"]
    assert echoed == [call]  # the caller goes back as received


def test_a_program_call_to_a_destructive_tool_still_asks_for_approval() -> None:
    registry = programmatic()
    refunded: list[str] = []

    @registry.register_tool(destructive=True, allowed_callers=["programmatic"])
    def refund(order_id: str) -> str:
        """Refund an order."""
        refunded.append(order_id)
        return "refunded"

    asked: list[str] = []

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append(f"{tool.name} {arguments['order_id']}")
        return False

    call = _program_call("refund", '{"order_id": "7"}')
    with ScriptedServer([raw([call]), text("Not refunded.")]) as server:
        reply = _chat(server, registry, confirm=confirm).send("refund 7")
    assert asked == ["refund 7"]
    assert refunded == []
    assert not reply.tool_results[0].ok


def test_a_program_call_counts_against_the_call_limit() -> None:
    calls = [
        _program_call("get_weather", '{"city": "Oslo"}', "c1"),
        _program_call("get_weather", '{"city": "Rome"}', "c2"),
    ]
    with ScriptedServer([raw(calls), text("One city only.")]) as server:
        reply = _chat(server, programmatic(), max_calls={"get_weather": 1}).send("two cities")
    oks = [r.ok for r in reply.tool_results]
    assert oks == [True, False]
    assert "get_weather" in reply.tool_results[1].content


def test_a_program_call_that_runs_too_long_times_out() -> None:
    registry = programmatic()
    release = threading.Event()

    @registry.register_tool(timeout=0.05, allowed_callers=["programmatic"])
    def slow_report(name: str) -> str:
        """Build a slow report."""
        release.wait(5)
        return "done"

    call = _program_call("slow_report", '{"name": "q3"}')
    try:
        with ScriptedServer([raw([call]), text("It timed out.")]) as server:
            reply = _chat(server, registry).send("report")
    finally:
        release.set()
    (result,) = reply.tool_results
    assert not result.ok
    assert type(result.error).__name__ == "ToolTimeoutError"
