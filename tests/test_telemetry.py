"""OpenTelemetry: spans and metrics for tool calls, model calls and turns, opt-in.

Read back with the OpenTelemetry SDK's in-memory span exporter and metric reader.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import toolreg
from toolreg import AsyncConversation, Conversation, ConversationError, ToolError, ToolRegistry
from toolreg.telemetry import extracted, inject, instrumented
from toolreg.testing import ScriptedServer, call, error, text, tool_calls

ROOT = Path(__file__).resolve().parent.parent


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, name_prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(name_prefix)]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    telemetry = Telemetry()
    toolreg.instrument(telemetry.tracer_provider, telemetry.meter_provider)
    try:
        yield telemetry
    finally:
        toolreg.uninstrument()


@pytest.fixture
def tools() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    @reg.register_tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    return reg


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# -- off by default, and light -----------------------------------------------------------------


def test_nothing_imports_opentelemetry_until_instrument_is_called() -> None:
    code = (
        "import sys, toolreg\n"
        "reg = toolreg.ToolRegistry()\n"
        "@reg.register_tool\n"
        "def f(a: int) -> int:\n"
        "    '''F.'''\n"
        "    return a\n"
        "assert reg.dispatch_tool('f', '{\"a\": 1}').ok\n"
        "assert not any(m.startswith('opentelemetry') for m in sys.modules), 'loaded'\n"
        "assert toolreg.instrument.__name__ == 'instrument'\n"
        "assert not any(m.startswith('opentelemetry') for m in sys.modules), 'loaded'\n"
        "toolreg.instrument()\n"
        "assert 'opentelemetry.trace' in sys.modules\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "ok", done.stderr


def test_without_opentelemetry_instrument_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "import toolreg\n"
        "try:\n"
        "    toolreg.instrument()\n"
        "except toolreg.UsageError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "pip install 'toolreg[otel]'" in done.stdout, done.stderr


def test_no_spans_unless_instrumented_and_none_after_uninstrument(tools: ToolRegistry) -> None:
    telemetry = Telemetry()
    assert not instrumented()
    tools.dispatch_tool("get_weather", '{"city": "Oslo"}')
    toolreg.instrument(telemetry.tracer_provider, telemetry.meter_provider)
    assert instrumented()
    tools.dispatch_tool("get_weather", '{"city": "Oslo"}')
    toolreg.uninstrument()
    tools.dispatch_tool("get_weather", '{"city": "Oslo"}')
    assert [s.name for s in telemetry.spans()] == ["execute_tool get_weather"]
    (point,) = telemetry.points("gen_ai.execute_tool.duration")
    assert point.count == 1


# -- tool calls -------------------------------------------------------------------------------


def test_a_tool_call_is_an_execute_tool_span(otel: Telemetry, tools: ToolRegistry) -> None:
    result = tools.dispatch_tool("get_weather", '{"city": "Oslo"}', call_id="call_7")
    assert result.ok
    (span,) = otel.spans()
    assert span.name == "execute_tool get_weather"
    assert span.kind is SpanKind.INTERNAL
    assert attrs(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call_7",
        "gen_ai.tool.description": "Current weather of a city.",
        "toolreg.tool.outcome": "completed",
    }
    assert span.status.status_code is StatusCode.UNSET
    (point,) = otel.points("gen_ai.execute_tool.duration")
    assert dict(point.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
    }
    assert point.count == 1


def test_a_tool_span_carries_the_calls_key_and_outcome(
    otel: Telemetry, tools: ToolRegistry
) -> None:
    tools.dispatch_tool("get_weather", '{"city": "Oslo"}', idempotency_key="key-1")
    tools.dispatch_tool("get_weather", '{"city": 5}', idempotency_key="key-2")
    ran, refused = otel.spans("execute_tool")
    assert attrs(ran)["toolreg.tool.idempotency_key"] == "key-1"
    assert attrs(refused)["toolreg.tool.idempotency_key"] == "key-2"
    assert attrs(refused)["toolreg.tool.outcome"] == "not_started"
    with ScriptedServer([tool_calls(call("get_weather", city="Oslo")), text("Sunny.")]) as server:
        reply = Conversation(server.client(), "m", registry=tools).send("Oslo?")
    key = reply.tool_results[0].idempotency_key
    assert key is not None
    assert attrs(otel.spans("execute_tool")[-1])["toolreg.tool.idempotency_key"] == key


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("get_wether", '{"city": "Oslo"}', "unknown_tool"),
        ("get_weather", '{"city": 5}', "invalid_arguments"),
        ("get_weather", '{"city": ', "invalid_json"),
        ("divide", '{"a": 1, "b": 0}', "execution_error"),
    ],
)
def test_a_failed_call_has_its_error_kind_and_status_error(
    otel: Telemetry, tools: ToolRegistry, name: str, arguments: str, kind: str
) -> None:
    result = tools.dispatch_tool(name, arguments)
    assert result.error_kind == kind
    (span,) = otel.spans()
    assert attrs(span)["error.type"] == kind
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == kind  # the failure's text is content: not captured
    (point,) = otel.points("gen_ai.execute_tool.duration")
    assert point.attributes["error.type"] == kind


def test_argument_values_reach_no_span_unless_content_is_captured() -> None:
    """Failure texts quote what the model sent (a value outside an enum, the tool's own
    ToolError text): without capture_content, none of it is on the span."""
    reg = ToolRegistry()

    @reg.register_tool
    def refund(order: str, reason: Literal["damaged", "late"]) -> str:
        """Refund an order."""
        raise ToolError(f"No order {order}.")

    secret = "4111-1111-1111-1111"
    calls = [
        {"order": "A1", "reason": secret},  # invalid: the value is quoted
        {"order": secret, "reason": "late"},  # the ToolError quotes it
    ]
    for capture in (False, True):
        telemetry = Telemetry()
        toolreg.instrument(
            telemetry.tracer_provider, telemetry.meter_provider, capture_content=capture
        )
        try:
            results = [reg.dispatch_tool("refund", args) for args in calls]
        finally:
            toolreg.uninstrument()
        assert all(secret in result.content for result in results)  # the model is told
        spans = telemetry.spans("execute_tool")
        assert len(spans) == len(calls)
        for span, result in zip(spans, results):
            assert span.status.status_code is StatusCode.ERROR
            assert attrs(span)["error.type"] == result.error_kind
            shown = str(attrs(span)) + str(span.status.description)
            assert (secret in shown) is capture
            expected = result.content[:200] if capture else result.error_kind
            assert span.status.description == expected


def test_a_huge_description_is_capped_on_every_span(otel: Telemetry) -> None:
    reg = ToolRegistry()
    description = "Look it up. " + "x" * 2_000_000

    @reg.register_tool(description=description)
    def lookup(key: str) -> str:
        return key

    for _ in range(3):
        assert reg.dispatch_tool("lookup", {"key": "a"}).ok
    spans = otel.spans("execute_tool lookup")
    assert len(spans) == 3
    for span in spans:
        assert attrs(span)["gen_ai.tool.description"] == description[:8192]


def test_made_up_tool_names_share_one_metric_series(otel: Telemetry, tools: ToolRegistry) -> None:
    for index in range(2500):
        assert tools.dispatch_tool(f"made_up_{index}", "{}").error_kind == "unknown_tool"
    tools.dispatch_tool("get_weather", {"city": "Oslo"})
    tools.dispatch_tool("get_weather", {"city": 5})
    points = otel.points("gen_ai.execute_tool.duration")
    series = {
        (p.attributes["gen_ai.tool.name"], p.attributes.get("error.type")): p.count for p in points
    }
    assert series == {
        ("_OTHER", "unknown_tool"): 2500,
        ("get_weather", None): 1,
        ("get_weather", "invalid_arguments"): 1,
    }


def test_content_is_captured_only_when_asked(tools: ToolRegistry) -> None:
    telemetry = Telemetry()
    toolreg.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
    try:
        tools.dispatch_tool("get_weather", '{"city": "北京"}')
    finally:
        toolreg.uninstrument()
    (span,) = telemetry.spans()
    assert attrs(span)["gen_ai.tool.call.arguments"] == '{"city": "北京"}'
    assert attrs(span)["gen_ai.tool.call.result"] == "sunny in 北京"


def test_an_unknown_name_is_bounded_in_the_span_name(otel: Telemetry, tools: ToolRegistry) -> None:
    tools.dispatch_tool("x" * 500 + "\n", "{}")
    (span,) = otel.spans()
    assert span.name == "execute_tool " + "x" * 64 + "..."


def test_async_dispatch_and_parallel_calls_have_spans(otel: Telemetry, tools: ToolRegistry) -> None:
    results = asyncio.run(
        tools.adispatch_many([("get_weather", '{"city": "A"}', "1"), ("get_weather", "{}", "2")])
    )
    assert [r.ok for r in results] == [True, False]
    spans = sorted(otel.spans(), key=lambda s: attrs(s)["gen_ai.tool.call.id"])
    assert [attrs(s).get("error.type") for s in spans] == [None, "invalid_arguments"]


# -- conversations --------------------------------------------------------------------------------


def test_a_turn_is_one_trace_with_chat_and_tool_spans(otel: Telemetry, tools: ToolRegistry) -> None:
    script = [
        tool_calls(
            call("get_weather", city="Oslo"), call("get_weather", city="Rome"), usage=(20, 7)
        ),
        text("Sunny in both.", usage=(40, 5)),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), server.model, registry=tools, name="weather-agent")
        assert chat.send("Weather in Oslo and Rome?").text == "Sunny in both."
        port = int(server.base_url.split(":")[2].split("/")[0])
    (turn,) = otel.spans("invoke_agent")
    chats = otel.spans("chat")
    tool_spans = otel.spans("execute_tool")
    assert turn.name == "invoke_agent weather-agent"
    assert turn.parent is None
    assert attrs(turn)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(turn)["gen_ai.agent.name"] == "weather-agent"
    assert len(chats) == 2
    assert len(tool_spans) == 2
    trace_ids = {s.context.trace_id for s in [turn, *chats, *tool_spans]}
    assert trace_ids == {turn.context.trace_id}
    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    for chat_span in chats:
        assert chat_span.kind is SpanKind.CLIENT
        assert chat_span.parent is not None
        assert chat_span.parent.span_id == turn.context.span_id
    for tool_span in tool_spans:  # run in threads (parallel=True): still the round's children
        assert tool_span.parent is not None
        assert tool_span.parent.span_id == first.context.span_id
    assert first.name == "chat scripted-model"
    a = attrs(first)
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "scripted-model"
    assert a["gen_ai.response.model"] == "scripted-model"
    assert a["gen_ai.response.id"].startswith("chatcmpl-")
    assert a["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (20, 7)
    assert (a["server.address"], a["server.port"]) == ("127.0.0.1", port)
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    usage = {
        (p.attributes["gen_ai.token.type"], p.sum) for p in otel.points("gen_ai.client.token.usage")
    }
    assert usage == {("input", 60), ("output", 12)}
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 2
    assert duration.attributes["gen_ai.request.model"] == "scripted-model"


def test_streamed_and_async_turns_link_the_same_way(otel: Telemetry, tools: ToolRegistry) -> None:
    script = [tool_calls(call("get_weather", city="A"), call("get_weather", city="B")), text("ok")]

    async def main(server: ScriptedServer) -> None:
        async with server.async_client() as client:
            chat = AsyncConversation(client, server.model, registry=tools, stream=True)
            assert (await chat.send("go")).text == "ok"

    with ScriptedServer(script) as server:
        asyncio.run(main(server))
    (turn,) = otel.spans("invoke_agent")
    assert turn.name == "invoke_agent toolreg"
    first = min(otel.spans("chat"), key=lambda s: s.start_time or 0)
    assert attrs(first)["gen_ai.response.id"].startswith("chatcmpl-")
    tool_spans = otel.spans("execute_tool")
    assert len(tool_spans) == 2
    for tool_span in tool_spans:  # tasks of adispatch_many
        assert tool_span.parent is not None
        assert tool_span.parent.span_id == first.context.span_id


def test_an_endpoint_failure_marks_the_chat_and_the_turn(
    otel: Telemetry, tools: ToolRegistry
) -> None:
    with ScriptedServer([error(503, "overloaded")]) as server:
        chat = Conversation(server.client(), server.model, registry=tools)
        with pytest.raises(ConversationError):
            chat.send("hello")
    (chat_span,) = otel.spans("chat")
    (turn,) = otel.spans("invoke_agent")
    assert chat_span.status.status_code is StatusCode.ERROR
    assert attrs(chat_span)["error.type"] == "ConversationError"
    assert turn.status.status_code is StatusCode.ERROR
    assert attrs(turn)["error.type"] == "ConversationError"
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "ConversationError"


def test_a_dispatch_inside_a_span_is_its_child(otel: Telemetry, tools: ToolRegistry) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("request") as parent:
        tools.dispatch_tool("get_weather", '{"city": "Oslo"}')
    (span,) = otel.spans("execute_tool")
    assert span.parent is not None
    assert span.parent.span_id == parent.get_span_context().span_id


def test_trace_context_travels_in_a_carrier(otel: Telemetry, tools: ToolRegistry) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    carrier: dict[str, Any] = {}
    with tracer.start_as_current_span("client side") as client_span:
        inject(carrier)
    assert carrier["traceparent"].startswith("00-")
    with extracted(carrier):  # e.g. on the server side of an MCP request
        tools.dispatch_tool("get_weather", '{"city": "Oslo"}')
    (span,) = otel.spans("execute_tool")
    assert span.context.trace_id == client_span.get_span_context().trace_id
    assert span.parent is not None
    assert span.parent.span_id == client_span.get_span_context().span_id


def test_inject_and_extract_do_nothing_when_off(tools: ToolRegistry) -> None:
    carrier: dict[str, Any] = {}
    inject(carrier)
    assert carrier == {}
    with extracted({"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}):
        assert tools.dispatch_tool("get_weather", '{"city": "Oslo"}').ok


def test_the_demo_prints_a_whole_turn_with_trace() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    env.update(PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", "demo", "--trace"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "assistant:" in done.stdout
    assert '"name": "invoke_agent toolreg"' in done.stderr
    assert done.stderr.count('"name": "execute_tool get_weather"') == 2
    assert done.stderr.count('"name": "chat scripted-model"') == 2


def test_a_mounted_tool_continues_the_trace_on_the_server(otel: Telemetry) -> None:
    """The trace context travels in the MCP request's `_meta`: the server's execute_tool
    span is a child of the client's, in the same trace."""
    from toolreg.mcp import HttpServer, asgi_app, mount

    served = ToolRegistry()

    @served.register_tool
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    local = ToolRegistry()
    with HttpServer(asgi_app(served)) as server, mount(local, server.url, trust_annotations=True):
        result = local.dispatch_tool("get_weather", '{"city": "Oslo"}')
    assert result.content == "sunny in Oslo"
    spans = otel.spans("execute_tool get_weather")
    assert len(spans) == 2  # the mounted tool here, the served tool there
    client, remote = sorted(spans, key=lambda s: s.start_time or 0)
    assert remote.context.trace_id == client.context.trace_id
    assert remote.parent is not None
    assert remote.parent.span_id == client.context.span_id


def test_a_mount_sends_baggage_only_when_asked(otel: Telemetry) -> None:
    """A third-party server gets the trace context with every call; the application's
    baggage (a session token, an email) only from a mount made with baggage=True."""
    import mcp_types as types
    from mcp.server import Server
    from opentelemetry import baggage, context

    from toolreg.mcp import HttpServer, mount

    seen: list[dict[str, Any]] = []

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        echo = types.Tool(name="echo", input_schema={"type": "object"})
        return types.ListToolsResult(tools=[echo])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        seen.append(dict(ctx.meta or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    third_party = Server("third-party", on_list_tools=list_tools, on_call_tool=call_tool)
    app = third_party.streamable_http_app(stateless_http=True)
    token = context.attach(baggage.set_baggage("session", "s3cret-session"))
    try:
        with HttpServer(app) as server:
            for opt_in in (False, True):
                local = ToolRegistry()
                with mount(local, server.url + "/mcp", baggage=opt_in):
                    result = local.dispatch_tool("echo", {}, confirm=lambda tool, args: True)
                    assert result.content == "ok"
    finally:
        context.detach(token)
    without, with_baggage = seen
    assert without["traceparent"].startswith("00-")
    assert "baggage" not in without
    assert with_baggage["baggage"] == "session=s3cret-session"
    assert with_baggage["traceparent"].startswith("00-")
    local = ToolRegistry()
    with pytest.raises(toolreg.UsageError, match="baggage= must be True or False"):
        mount(local, server.url + "/mcp", baggage="yes")  # type: ignore[arg-type]


def test_guardrail_verdicts_are_events_on_the_turn_span(
    otel: Telemetry, tools: ToolRegistry
) -> None:
    def only_oslo(event: Any) -> str | None:
        return None if event.arguments["city"] == "Oslo" else "Only Oslo."

    script = [
        tool_calls(call("get_weather", city="Oslo"), call("get_weather", city="Rome")),
        text("ok"),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.client(), server.model, registry=tools, input_guardrails=only_oslo
        )
        chat.send("Weather?")
    (turn,) = otel.spans("invoke_agent")
    events = [dict(e.attributes or {}) for e in turn.events if e.name == "toolreg.guardrail"]
    assert [e["toolreg.guardrail.verdict"] for e in events] == ["allow", "reject"]
    assert {e["toolreg.guardrail.stage"] for e in events} == {"input"}
    assert {e["gen_ai.tool.name"] for e in events} == {"get_weather"}
    assert events[0]["toolreg.guardrail.name"].endswith("only_oslo")
    assert "Only Oslo." not in str(events)  # the message is content: never on a span


# -- what the turn's events add ----------------------------------------------------------------


def test_a_streamed_model_call_records_its_time_to_first_chunk(
    otel: Telemetry, tools: ToolRegistry
) -> None:
    script = [tool_calls(call("get_weather", city="Oslo")), text("Sunny in Oslo."), text("Hi.")]
    with ScriptedServer(script) as server:
        streamed = Conversation(server.client(), server.model, registry=tools, stream=True)
        streamed.send("Weather in Oslo?")
        first_chunk = otel.points("gen_ai.client.operation.time_to_first_chunk")
        Conversation(server.client(), server.model, registry=tools).send("Hello")
    chats = sorted(otel.spans("chat"), key=lambda s: s.start_time or 0)
    calls, answer, plain = (attrs(s) for s in chats)
    # an answer of only a call that did not start early has no chunk the turn saw first
    assert "gen_ai.response.time_to_first_chunk" not in calls
    assert 0 < answer["gen_ai.response.time_to_first_chunk"] < 60
    assert "gen_ai.response.time_to_first_chunk" not in plain  # not streamed: no chunks
    (point,) = first_chunk
    assert point.count == 1
    assert point.attributes["gen_ai.request.model"] == server.model
    assert otel.points("gen_ai.client.operation.time_to_first_chunk")[0].count == 1


def test_tool_progress_and_early_starts_are_events_on_the_turn_span(otel: Telemetry) -> None:
    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    def survey(region: str, ctx: toolreg.ToolContext) -> str:
        """Survey a region, reporting progress."""
        ctx.report_progress(1, 2, f"surveying {region}")
        ctx.report_progress(2, 2)
        return "done"

    with ScriptedServer([tool_calls(call("survey", region="north")), text("ok")]) as server:
        chat = Conversation(server.client(), server.model, registry=reg, context={}, stream=True)
        reply = chat.send("Survey the north")
        assert reply.text == "ok"  # no stream reader, no on_event
    (turn,) = otel.spans("invoke_agent")
    progress = [dict(e.attributes or {}) for e in turn.events if e.name == "toolreg.tool.progress"]
    assert [(p["toolreg.tool.progress"], p["toolreg.tool.progress.total"]) for p in progress] == [
        (1.0, 2.0),
        (2.0, 2.0),
    ]
    assert {p["gen_ai.tool.name"] for p in progress} == {"survey"}
    assert {p["gen_ai.tool.call.id"] for p in progress} == {"call_1"}
    assert "surveying north" not in str(progress)  # the tool's words are content
    early = [
        dict(e.attributes or {}) for e in turn.events if e.name == "toolreg.tool.started_early"
    ]
    key = early[0].pop("toolreg.tool.idempotency_key")  # the key the call ran with
    assert early == [{"gen_ai.tool.name": "survey", "gen_ai.tool.call.id": "call_1"}]
    assert key == reply.tool_results[0].idempotency_key


def test_progress_messages_reach_the_span_only_when_content_is_captured() -> None:
    telemetry = Telemetry()
    toolreg.instrument(telemetry.tracer_provider, capture_content=True)
    reg = ToolRegistry()

    @reg.register_tool
    def survey(ctx: toolreg.ToolContext) -> str:
        """Survey, reporting progress."""
        ctx.report_progress(1, message="halfway there")
        return "done"

    try:
        with ScriptedServer([tool_calls(call("survey")), text("ok")]) as server:
            Conversation(server.client(), server.model, registry=reg, context={}).send("Go")
    finally:
        toolreg.uninstrument()
    (turn,) = telemetry.spans("invoke_agent")
    (progress,) = [dict(e.attributes or {}) for e in turn.events]
    assert progress["toolreg.tool.progress.message"] == "halfway there"
    assert "toolreg.tool.progress.total" not in progress


def test_a_turn_that_stops_for_approval_says_so_and_ends(otel: Telemetry) -> None:
    reg = ToolRegistry()

    @reg.register_tool(requires_confirmation=True)
    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    script = [tool_calls(call("refund", order="A1"), usage=(11, 3)), text("Refunded.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), server.model, registry=reg, confirm="defer")
        paused = chat.send("Refund A1")
        (turn,) = otel.spans("invoke_agent")  # ended, though nothing read its events
        chat.resume({paused.pending[0].call_id: True})
    assert paused.stop_reason == "approval_required"
    (asked,) = [dict(e.attributes or {}) for e in turn.events]
    assert asked == {"toolreg.approval.count": 1, "gen_ai.tool.name": ("refund",)}
    a = attrs(turn)
    assert a["toolreg.turn.paused"] is True
    assert a["toolreg.turn.stop_reason"] == "approval_required"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (11, 3)
    paused_span, resumed = sorted(otel.spans("invoke_agent"), key=lambda s: s.start_time or 0)
    assert paused_span is turn or paused_span.context.span_id == turn.context.span_id
    assert "toolreg.turn.paused" not in attrs(resumed)
    assert attrs(resumed)["toolreg.turn.stop_reason"] == "answer"


def test_the_turn_span_covers_saving_the_state(otel: Telemetry, tools: ToolRegistry) -> None:
    from toolreg.stores import MemoryStore

    saved_at: list[int] = []

    class Timed(MemoryStore):
        def save(self, *args: Any, **kwargs: Any) -> Any:
            version = super().save(*args, **kwargs)
            saved_at.append(time.time_ns())
            return version

    with ScriptedServer([text("Hello.")]) as server:
        chat = Conversation(
            server.client(), server.model, registry=tools, state_store=Timed(), conversation_id="c"
        )
        chat.send("Hi")
    (turn,) = otel.spans("invoke_agent")
    assert len(saved_at) == 1
    assert turn.end_time is not None
    assert turn.end_time >= saved_at[0]  # the save is part of the turn


def test_a_stream_reader_that_stops_ends_the_turn_span_once(
    otel: Telemetry, tools: ToolRegistry
) -> None:
    script = [tool_calls(call("get_weather", city="Oslo")), text("Sunny.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), server.model, registry=tools, stream=True)
        events = chat.stream("Weather?")
        next(events)
        events.close()  # the reader stops after the first event
    (turn,) = otel.spans("invoke_agent")
    assert attrs(turn)["error.type"] == "GeneratorExit"
    assert turn.status.status_code is StatusCode.ERROR


def test_an_async_turn_reads_its_events_the_same_way(otel: Telemetry, tools: ToolRegistry) -> None:
    async def main(server: ScriptedServer) -> None:
        async with server.async_client() as client:
            chat = AsyncConversation(client, server.model, registry=tools, stream=True)
            assert (await chat.send("Weather?")).text == "Sunny."

    with ScriptedServer([tool_calls(call("get_weather", city="Oslo")), text("Sunny.")]) as server:
        asyncio.run(main(server))
    (turn,) = otel.spans("invoke_agent")
    assert attrs(turn)["toolreg.turn.stop_reason"] == "answer"
    answer = max(otel.spans("chat"), key=lambda s: s.start_time or 0)
    assert attrs(answer)["gen_ai.response.time_to_first_chunk"] > 0
