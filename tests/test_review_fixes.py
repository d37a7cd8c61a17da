"""Regression tests for problems found in review: hostile inputs stay bounded and safe."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any, Optional

import pytest

from toolreg import (
    Conversation,
    ConversationError,
    Injected,
    ToolContext,
    ToolDefinitionError,
    ToolError,
    ToolRegistry,
)
from toolreg.conversation.output import OutputSpec
from toolreg.testing import ScriptedServer, raw, text, tool_call
from toolreg.validation.validator import MAX_ITEM_PROBLEMS, Validator


def test_an_array_of_bad_items_is_checked_with_bounded_work() -> None:
    validator = Validator({"type": "array", "items": {"type": "integer"}})
    problems = validator.validate(["a"] * 50_000)
    assert len(problems) == MAX_ITEM_PROBLEMS + 1
    assert problems[-1].message == "(items after this one were not checked)"
    assert not validator.is_valid(["a"] * 50_000)


def test_the_message_for_many_problems_is_short() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def total(xs: list[int]) -> int:
        """Sum integers."""
        return sum(xs)

    result = reg.dispatch_tool("total", json.dumps({"xs": ["a"] * 20_000}))
    lines = result.content.splitlines()
    assert lines[0] == "Invalid arguments for tool 'total':"
    assert lines[1] == "- xs[0]: expected integer, got string"
    assert lines[-1] == "- ... and 81 more problems"
    assert len(lines) == 22


def test_structured_output_fences_are_removed_without_a_regex() -> None:
    spec = OutputSpec.for_type(dict[str, int])
    assert spec.parse('```json\n{"a": 1}\n```') == ({"a": 1}, [])
    value, problems = spec.parse("```" + " " * 50_000 + "x")  # no catastrophic backtracking
    assert value is None
    assert problems[0].startswith("The answer is not valid JSON: ")


def test_a_deep_structured_answer_is_a_problem_not_a_crash() -> None:
    spec = OutputSpec.for_type(dict[str, list[int]])
    value, problems = spec.parse('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert value is None
    assert problems == ["The answer is nested too deeply: the limit is 64 levels."]


@pytest.mark.parametrize(
    "annotation",
    [
        Optional[Annotated[dict, Injected]],
        Optional[ToolContext[dict]],
        list[Annotated[int, Injected]],
    ],
)
def test_injection_hidden_inside_another_type_is_refused(annotation: Any) -> None:
    def orders(ctx=None):  # type: ignore[no-untyped-def]
        """List orders."""
        return str(ctx)

    orders.__annotations__ = {"ctx": annotation}  # a local type: set the real object
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry().register_tool(orders)
    assert info.value.parameter == "ctx"
    assert "Annotated[T | None, Injected]" in (info.value.fix or "")


def test_injection_on_the_outside_of_an_optional_works() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def orders(ctx: Annotated[Optional[dict], Injected] = None) -> str:
        """List orders."""
        return str(ctx)

    assert reg.dispatch_tool("orders", "{}", context={"user": "u1"}).content == "{'user': 'u1'}"
    assert not reg.dispatch_tool("orders", '{"ctx": {"user": "u2"}}', context={}).ok


def test_a_result_that_cannot_be_encoded_is_an_error_result() -> None:
    reg = ToolRegistry()

    @dataclasses.dataclass
    class Half:
        a: int
        b: int = dataclasses.field(init=False)  # never set: reading it raises AttributeError

    @reg.register_tool
    def give() -> Half:
        """Give a half-built value."""
        return Half(1)

    result = reg.dispatch_tool("give")
    assert result.error_kind == "execution_error"
    assert (
        result.content == "Tool 'give' failed: its result (of type Half) cannot be written as JSON."
    )


def test_a_tool_error_with_a_broken_message_is_still_a_result() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    reg = ToolRegistry()

    @reg.register_tool
    def boom() -> str:
        """Fail oddly."""
        raise ToolError(Broken())  # type: ignore[arg-type]

    assert reg.dispatch_tool("boom").content == "Tool 'boom' failed: ToolError"


def test_boolean_subschemas_in_an_explicit_schema() -> None:
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"x": True, "y": False}}
    reg.register_schema("echo", schema, lambda **kw: json.dumps(kw))
    assert reg.dispatch_tool("echo", '{"x": [1]}').content == '{"x": [1]}'
    assert reg.dispatch_tool("echo", '{"y": 1}').content == (
        "Invalid arguments for tool 'echo': y: no value is allowed here."
    )


def weather_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return reg


def test_deeply_nested_call_arguments_do_not_crash_the_loop() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with ScriptedServer([tool_call("add", deep), text("done")]) as server:
        reply = Conversation(server.client(), "m", registry=weather_registry()).send("go")
    assert reply.text == "done"
    assert reply.tool_results[0].error_kind in ("invalid_json", "invalid_arguments")


@pytest.mark.filterwarnings("ignore::UserWarning")  # the SDK warns while it parses the junk
def test_a_malformed_tool_call_is_a_conversation_error() -> None:
    turn = raw(
        {"role": "assistant", "content": None, "tool_calls": ["x"]}, finish_reason="tool_calls"
    )
    with ScriptedServer([turn]) as server:
        conversation = Conversation(server.client(), "m", registry=weather_registry())
        with pytest.raises(ConversationError, match="tool call that is not an object"):
            conversation.send("go")
        assert conversation.messages == []


def test_a_deep_json_answer_in_the_chatglm3_dialect_is_just_text() -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    with ScriptedServer([text(deep)]) as server:
        reply = Conversation(
            server.client(), "m", registry=weather_registry(), dialect="chatglm3"
        ).send("go")
    assert reply.text == deep


def test_sync_dispatch_of_a_slow_async_tool_returns_at_its_limit() -> None:
    import asyncio
    import time

    reg = ToolRegistry()

    @reg.register_tool(timeout=0.2)
    async def slow() -> str:
        """Wait on a blocking call in a thread."""
        await asyncio.to_thread(time.sleep, 2)
        return "done"

    started = time.perf_counter()
    result = reg.dispatch_tool("slow")
    took = time.perf_counter() - started
    assert result.content == "Tool 'slow' timed out after 0.2 s."
    assert took < 1.5  # not the 2 s the cancelled tool takes to wind down


def test_confirmations_of_concurrent_calls_are_asked_one_at_a_time() -> None:
    import threading
    import time

    reg = ToolRegistry()

    @reg.register_tool(destructive=True)
    def remove(item: int) -> int:
        """Remove an item."""
        return item

    lock, active, peak = threading.Lock(), [0], [0]

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return True

    results = reg.dispatch_many([("remove", {"item": i}) for i in range(5)], confirm=confirm)
    assert [r.content for r in results] == ["0", "1", "2", "3", "4"]
    assert peak[0] == 1


def test_mask_errors_hides_exception_text_from_conversion_too() -> None:
    @dataclasses.dataclass
    class Query:
        path: str

        def __post_init__(self) -> None:
            raise ValueError("cannot open /etc/secret/db.conf")

    for mask, expected in [
        (False, "q: ValueError: cannot open /etc/secret/db.conf"),
        (True, "q: cannot be converted"),
    ]:
        reg = ToolRegistry(mask_errors=mask)

        def run(q: Query) -> str:
            """Run a query."""
            return "ran"

        run.__annotations__ = {"q": Query, "return": str}  # a local class
        reg.register_tool(run)
        result = reg.dispatch_tool("run", '{"q": {"path": "x"}}')
        assert result.content == f"Invalid arguments for tool 'run': {expected}."


def test_strict_null_for_a_chatglm3_optional_parameter_means_absent() -> None:
    reg = ToolRegistry()

    @reg.register_tool(strict=True)
    def find(city: Annotated[str, "City name", False]) -> str:
        """Find shops in a city."""
        return repr(city)

    params = reg.get_tools()[0]["function"]["parameters"]
    assert params["required"] == ["city"]
    assert {"type": "null"} in params["properties"]["city"]["anyOf"]
    assert reg.dispatch_tool("find", '{"city": null}').content == "None"
    assert reg.dispatch_tool("find", '{"city": "Paris"}').content == "'Paris'"


def test_explicit_schema_rejects_keys_its_function_cannot_take() -> None:
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}
    reg.register_schema("get_time", schema, lambda tz: f"12:00 in {tz}")
    result = reg.dispatch_tool("get_time", '{"tz": "UTC", "verbose": true}')
    assert result.content == "Invalid arguments for tool 'get_time': unexpected property 'verbose'."
    reg.register_schema("echo", schema, lambda **kw: json.dumps(kw, sort_keys=True))
    assert reg.dispatch_tool("echo", '{"tz": "UTC", "v": 1}').content == '{"tz": "UTC", "v": 1}'


def test_one_time_limit_covers_a_sync_wrapper_and_the_awaitable_it_returns() -> None:
    import asyncio
    import time

    async def part_two() -> str:
        await asyncio.sleep(0.3)
        return "done"

    reg = ToolRegistry()

    @reg.register_tool(timeout=0.4)
    def wrapper() -> Any:
        """Half the work now, half in a coroutine."""
        time.sleep(0.3)
        return part_two()

    assert reg.dispatch_tool("wrapper").content == "Tool 'wrapper' timed out after 0.4 s."

    async def in_async() -> str:
        return (await reg.adispatch_tool("wrapper")).content

    assert asyncio.run(in_async()) == "Tool 'wrapper' timed out after 0.4 s."
