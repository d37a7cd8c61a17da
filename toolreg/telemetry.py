"""OpenTelemetry traces and metrics for every model call and tool call: opt-in, free when off.

```python
import toolreg

toolreg.instrument()                  # the global providers; or instrument(tracer_provider=...)
toolreg.instrument(capture_content=True)   # also tool arguments and results on the spans
toolreg.uninstrument()
```

What is emitted follows the OpenTelemetry GenAI semantic conventions:

- `invoke_agent {name}` (INTERNAL) for each `send` / `run` of a conversation (`name=` option,
  default "toolreg"): one turn is one trace;
- `chat {model}` (CLIENT) for each model call of the loop, a child of its turn, with the
  request and response model, response id, finish reasons, token usage and the server's
  address and port;
- `execute_tool {tool}` (INTERNAL) for each dispatch, a child of the model call that asked for
  it (also for calls run in threads or tasks), or of whatever span is current;
- histograms `gen_ai.client.token.usage`, `gen_ai.client.operation.duration` (model calls),
  `gen_ai.client.operation.time_to_first_chunk` (streamed model calls) and
  `gen_ai.execute_tool.duration` (tool calls, with the tool name and error kind).

The turn span reads the turn's events (`toolreg.conversation.events`, the same a
`stream()` reader gets) and ends with its last one, `TurnFinished`: so it also covers what
follows the loop (the state saved to a store, the approvals asked for). From the events it
records a streamed model call's time to its first chunk (the first text, or a call started
while the answer streams: `gen_ai.response.time_to_first_chunk` on the chat span, and the
histogram), `toolreg.tool.progress` events (a tool's `report_progress`; the message only
with `capture_content`), `toolreg.tool.started_early` events, a `toolreg.approval.required`
event and `toolreg.turn.paused` when the turn stops for approvals, and the turn's total
token usage and `toolreg.turn.stop_reason` at the end.

Only `opentelemetry-api` is needed (`pip install 'toolreg[otel]'`); it is imported by
`instrument()`, never by `import toolreg` or by dispatch while nothing is instrumented.
`inject` and `extracted` carry the trace context across a process boundary (MCP's `_meta`),
as W3C Trace Context: `traceparent` and `tracestate` only. Baggage (which may hold a session
token or an email) crosses only when the caller asks (`inject(..., baggage=True)`, a mount's
`baggage=True`), and is never taken from a client. A trace context that is not well formed
is ignored: the call starts a new trace.

What reaches spans is bounded: descriptions and captured content are cut at
`_MAX_ATTRIBUTE` characters; without `capture_content` a failure records its kind
(`error.type`, also the status description), never its text, which may quote arguments;
tool names that no registered tool has share one metric series, `_OTHER`.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Coroutine, Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar
from urllib.parse import urlsplit

from .conversation.events import (
    ApprovalRequired,
    TextDelta,
    ToolCallReady,
    ToolProgress,
    ToolStarted,
    TurnFinished,
)
from .errors import UsageError
from .observe import OBSERVER, ModelCallTrace, Trace, TurnTrace
from .result import ToolResult
from .tool import Tool

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "extracted",
    "inject",
    "instrument",
    "instrumented",
    "sanitize_meta",
    "uninstrument",
    "without_baggage",
]

T = TypeVar("T")

_MAX_ATTRIBUTE = 8192  # characters of captured content or of a description per attribute
_MAX_TRACE_FIELD = 512  # characters of `traceparent` / `tracestate` (W3C Trace Context)
_TRACE_FIELDS = ("traceparent", "tracestate")
_OTHER = "_OTHER"  # the metric series of every tool name no registered tool has


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    *,
    capture_content: bool = False,
) -> None:
    """Emit spans and metrics from now on (the global providers when none are given).

    Spans follow OpenTelemetry's GenAI semantic conventions: `invoke_agent` per turn,
    `chat {model}` per model call, `execute_tool {tool}` per dispatch. Calling it again
    replaces the previous setup; `uninstrument()` stops.

    Args:
        tracer_provider: where spans go (else OpenTelemetry's global tracer provider).
        meter_provider: where the histograms go (else the global meter provider).
        capture_content: also record each tool call's validated arguments and the text its
            result sends to the model; off by default, since either may hold personal data.

    Raises:
        UsageError: OpenTelemetry is not installed (`pip install 'toolreg[otel]'`), or
            `capture_content` is not a bool.

    Example:
        toolreg.instrument(tracer_provider=provider)
    """
    if not isinstance(capture_content, bool):
        raise UsageError("instrument(capture_content=...) must be True or False")
    try:
        from opentelemetry import metrics, trace
    except ImportError as exc:
        raise UsageError(
            "toolreg.instrument() needs OpenTelemetry: pip install 'toolreg[otel]'"
        ) from exc
    tracer = trace.get_tracer("toolreg", tracer_provider=tracer_provider)
    meter = metrics.get_meter("toolreg", meter_provider=meter_provider)
    OBSERVER.current = _OpenTelemetry(tracer, meter, capture_content)


def uninstrument() -> None:
    """Stop emitting; spans already started still end."""
    OBSERVER.current = None


def instrumented() -> bool:
    """Whether `instrument()` is in effect."""
    return isinstance(OBSERVER.current, _OpenTelemetry)


def inject(carrier: MutableMapping[str, Any], *, baggage: bool = False) -> None:
    """Write the current trace context into `carrier`, when instrumented: W3C `traceparent`
    and `tracestate`, and the current W3C `baggage` only with `baggage=True` (it is the
    application's, and the carrier may go to a server it does not control)."""
    if not instrumented():
        return
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    TraceContextTextMapPropagator().inject(carrier)
    if baggage:
        from opentelemetry.baggage.propagation import W3CBaggagePropagator

        W3CBaggagePropagator().inject(carrier)


def without_baggage(call: Coroutine[Any, Any, T], *, baggage: bool) -> Coroutine[Any, Any, T]:
    """`call` (a request to a server the application does not control) run with the
    current OpenTelemetry baggage removed, unless `baggage=True`: whatever injects trace
    context on the way out (the MCP SDK's client injects the global propagators' fields,
    baggage included, into every request's `_meta`) then sends only the trace context.
    Works whether or not toolreg is instrumented, since the SDK injects either way."""
    if baggage or "opentelemetry.baggage" not in sys.modules:  # no baggage can be set
        return call
    return _baggage_cleared(call)


async def _baggage_cleared(call: Coroutine[Any, Any, T]) -> T:
    from opentelemetry import baggage, context

    token = context.attach(baggage.clear())
    try:
        return await call
    finally:
        context.detach(token)


@contextlib.contextmanager
def extracted(carrier: object) -> Iterator[None]:
    """Inside the block, the caller's trace continues: the W3C trace context in `carrier`
    (e.g. an MCP request's `_meta`, sent by a client toolreg does not control) is the
    current span's parent, when instrumented. Anything else is ignored, so a missing or
    malformed context starts a new trace: a carrier that is not a mapping, fields that are
    not strings of printable ASCII of at most 512 characters, a `traceparent` that does not
    parse. Baggage is never taken from the carrier."""
    fields = _trace_fields(carrier) if instrumented() else None
    if not fields:
        yield
        return
    from opentelemetry import context, trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    found = TraceContextTextMapPropagator().extract(fields, context=context.get_current())
    if not trace.get_current_span(found).get_span_context().is_valid:
        yield
        return
    token = context.attach(found)
    try:
        yield
    finally:
        context.detach(token)


def sanitize_meta(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """`meta` as a server takes it from a client it does not control: without `baggage`,
    and without a `traceparent` or `tracestate` that is not a well-formed field (see
    `extracted`); `meta` itself when there is nothing to drop. Whatever reads the trace
    context next (the MCP SDK's own middleware) then sees a valid one or none."""
    drop = [key for key in _TRACE_FIELDS if key in meta and not _field(meta[key])]
    if "baggage" in meta:
        drop.append("baggage")
    if not drop:
        return meta
    return {key: value for key, value in meta.items() if key not in drop}


def _field(value: object) -> TypeGuard[str]:
    """A trace context field as a header carries it: printable ASCII, bounded."""
    return (
        type(value) is str
        and len(value) <= _MAX_TRACE_FIELD
        and value.isascii()
        and value.isprintable()
    )


def _trace_fields(carrier: object) -> dict[str, str] | None:
    """`traceparent` and `tracestate` from `carrier`, each kept only when it is a string
    of printable ASCII (header text) within `_MAX_TRACE_FIELD`; None without a traceparent."""
    if not isinstance(carrier, Mapping):
        return None
    fields = {}
    for key in _TRACE_FIELDS:
        value = carrier.get(key)
        if _field(value):
            fields[key] = value
    return fields if "traceparent" in fields else None


class _OpenTelemetry:
    """The observer `instrument()` installs (see `observe.Observer`)."""

    def __init__(self, tracer: Tracer, meter: Meter, capture_content: bool) -> None:
        from opentelemetry import context, trace

        self.tracer = tracer
        self.capture_content = capture_content
        self.context = context
        self.trace = trace
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used per model call, by type (input, output)",
        )
        self.model_duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of model calls",
        )
        self.first_chunk: Histogram = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time from a streamed model request to the first chunk of its answer",
        )
        self.tool_duration: Histogram = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="Duration of tool calls, by tool and error kind",
        )

    # -- observe.Observer ----------------------------------------------------------------
    def tool_call(self, name: object, call_id: str | None, tools: Mapping[str, Tool]) -> Trace:
        tool = tools.get(name) if type(name) is str else None
        tool_name = tool.name if tool is not None else _printable(name)
        metric_name = tool.name if tool is not None else _OTHER
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "gen_ai.tool.type": "function",
        }
        if isinstance(call_id, str):
            attributes["gen_ai.tool.call.id"] = call_id[:256]
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description[:_MAX_ATTRIBUTE]
        span = self.tracer.start_span(
            f"execute_tool {tool_name}",
            kind=self.trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        token = self.context.attach(self.trace.set_span_in_context(span))
        return _ToolTrace(self, span, token, metric_name)

    def model_call(
        self, request: Mapping[str, Any], client: Any, provider: str = "openai"
    ) -> ModelCallTrace:
        model = str(request.get("model", ""))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,  # the wire API, whatever serves it
            "gen_ai.request.model": model,
            **_server(client),
        }
        for key, attribute in _REQUEST_OPTIONS.items():
            value = request.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[attribute] = value
        span = self.tracer.start_span(
            f"chat {model}", kind=self.trace.SpanKind.CLIENT, attributes=attributes
        )
        token = self.context.attach(self.trace.set_span_in_context(span))
        return _ModelTrace(self, span, token, attributes)

    def turn(self, name: str, model: str, provider: str = "openai") -> TurnTrace:
        span = self.tracer.start_span(
            f"invoke_agent {name}",
            kind=self.trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.provider.name": provider,  # the wire API, whatever serves it
                "gen_ai.request.model": model,
            },
        )
        return _TurnTrace(self, span)

    def guardrail(self, stage: str, tool: str, guardrail: str, verdict: str) -> None:
        """A `toolreg.guardrail` event on the current span (the turn's)."""
        self.trace.get_current_span().add_event(
            "toolreg.guardrail",
            {
                "toolreg.guardrail.stage": stage,
                "toolreg.guardrail.name": guardrail[:_MAX_ATTRIBUTE],
                "toolreg.guardrail.verdict": verdict,
                "gen_ai.tool.name": _printable(tool),
            },
        )

    def failed(self, span: Span, error_type: str, description: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, description))


_REQUEST_OPTIONS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
}


class _ToolTrace:
    __slots__ = ("name", "otel", "span", "token")

    def __init__(self, otel: _OpenTelemetry, span: Span, token: object, name: str) -> None:
        self.otel, self.span, self.token, self.name = otel, span, token, name

    def end(self, result: ToolResult) -> None:
        span, otel = self.span, self.otel
        metric = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": self.name}
        span.set_attribute("toolreg.tool.outcome", result.outcome)
        if result.idempotency_key is not None:  # a digest: no content of the call
            span.set_attribute("toolreg.tool.idempotency_key", result.idempotency_key[:256])
        if not result.ok:
            kind = result.error_kind or "error"
            # the failure's text may quote the arguments: content, like them
            otel.failed(span, kind, result.content[:200] if otel.capture_content else kind)
            metric["error.type"] = kind
        if otel.capture_content:
            if result.arguments is not None:
                text = json.dumps(result.arguments, ensure_ascii=False, default=str)
                span.set_attribute("gen_ai.tool.call.arguments", text[:_MAX_ATTRIBUTE])
            span.set_attribute("gen_ai.tool.call.result", result.content[:_MAX_ATTRIBUTE])
        otel.context.detach(self.token)
        span.end()
        otel.tool_duration.record(result.elapsed, metric)

    def abort(self, error: BaseException) -> None:
        error_type = type(error).__name__
        self.otel.failed(self.span, error_type, error_type)
        self.otel.context.detach(self.token)
        self.span.end()


class _ModelTrace:
    __slots__ = ("attributes", "chunked", "otel", "span", "start", "token")

    def __init__(
        self, otel: _OpenTelemetry, span: Span, token: object, attributes: dict[str, Any]
    ) -> None:
        self.otel, self.span, self.token = otel, span, token
        self.attributes = {
            k: v
            for k, v in attributes.items()
            if k in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model")
            or k.startswith("server.")
        }
        self.start = time.perf_counter()
        self.chunked = False  # the first chunk of a streamed answer has come

    def event(self, event: object) -> None:
        """A streamed answer's event: the first one (text, or a call started early) is its
        first chunk."""
        if self.chunked or not isinstance(event, (TextDelta, ToolCallReady)):
            return
        self.chunked = True
        elapsed = time.perf_counter() - self.start
        self.span.set_attribute("gen_ai.response.time_to_first_chunk", elapsed)
        self.otel.first_chunk.record(elapsed, self.attributes)

    def end(self, response: Mapping[str, Any]) -> None:
        span, metric = self.span, dict(self.attributes)
        if isinstance(response.get("id"), str):
            span.set_attribute("gen_ai.response.id", response["id"])
        if isinstance(response.get("model"), str):
            span.set_attribute("gen_ai.response.model", response["model"])
            metric["gen_ai.response.model"] = response["model"]
        finish = response.get("finish_reason")
        if isinstance(finish, str):
            span.set_attribute("gen_ai.response.finish_reasons", [finish])
        tokens = _tokens(response.get("usage"))
        for kind, count in tokens.items():
            span.set_attribute(f"gen_ai.usage.{kind}_tokens", count)
        self._close(metric)
        for kind, count in tokens.items():
            self.otel.tokens.record(count, {**metric, "gen_ai.token.type": kind})

    def fail(self, error: BaseException) -> None:
        error_type = type(error).__name__
        self.otel.failed(self.span, error_type, error_type)
        self._close({**self.attributes, "error.type": error_type})

    def parent(self) -> AbstractContextManager[None]:
        return _as_parent(self.otel, self.span)

    def _close(self, metric: dict[str, Any]) -> None:
        self.otel.context.detach(self.token)
        self.span.end()
        self.otel.model_duration.record(time.perf_counter() - self.start, metric)


class _TurnTrace:
    __slots__ = ("otel", "span")

    def __init__(self, otel: _OpenTelemetry, span: Span) -> None:
        self.otel, self.span = otel, span

    def event(self, event: object) -> None:
        """What the turn's events say that no span does."""
        span = self.span
        if isinstance(event, ToolProgress):
            attributes = _call_attributes(event.tool_name, event.call_id)
            attributes["toolreg.tool.progress"] = float(event.progress)
            if event.total is not None:
                attributes["toolreg.tool.progress.total"] = float(event.total)
            if event.message and self.otel.capture_content:  # a tool's words: content
                attributes["toolreg.tool.progress.message"] = event.message[:_MAX_ATTRIBUTE]
            span.add_event("toolreg.tool.progress", attributes)
        elif isinstance(event, ToolStarted) and event.early:
            call = event.call
            attributes = _call_attributes(call.name, call.call_id)
            if call.idempotency_key is not None:
                attributes["toolreg.tool.idempotency_key"] = call.idempotency_key[:256]
            span.add_event("toolreg.tool.started_early", attributes)
        elif isinstance(event, ApprovalRequired):
            names = [_printable(p.tool_name) for p in event.pending]
            span.add_event(
                "toolreg.approval.required",
                {"toolreg.approval.count": len(names), "gen_ai.tool.name": names},
            )
            span.set_attribute("toolreg.turn.paused", True)
        elif isinstance(event, TurnFinished):
            reply = event.reply
            span.set_attribute("toolreg.turn.stop_reason", reply.stop_reason)
            span.set_attribute("gen_ai.usage.input_tokens", reply.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", reply.usage.completion_tokens)

    def end(self, error: BaseException | None) -> None:
        if error is not None:
            error_type = type(error).__name__
            self.otel.failed(self.span, error_type, error_type)
        self.span.end()

    def parent(self) -> AbstractContextManager[None]:
        return _as_parent(self.otel, self.span)


_USAGE_KEYS = (
    ("input", ("prompt_tokens", "input_tokens")),
    ("output", ("completion_tokens", "output_tokens")),
)


@contextlib.contextmanager
def _as_parent(otel: _OpenTelemetry, span: Span) -> Iterator[None]:
    """`span` is the current span inside the block (even when it has ended already)."""
    token = otel.context.attach(otel.trace.set_span_in_context(span))
    try:
        yield
    finally:
        otel.context.detach(token)


def _call_attributes(name: object, call_id: object) -> dict[str, Any]:
    """A call's tool name (bounded, printable) and id, as span event attributes."""
    attributes: dict[str, Any] = {"gen_ai.tool.name": _printable(name)}
    if isinstance(call_id, str):
        attributes["gen_ai.tool.call.id"] = call_id[:256]
    return attributes


def _tokens(usage: Any) -> dict[str, int]:
    """Input and output tokens, from chat completions' or the Responses API's usage."""
    if not isinstance(usage, Mapping):
        return {}
    found = {}
    for kind, keys in _USAGE_KEYS:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found[kind] = value
                break
    return found


def _server(client: Any) -> dict[str, Any]:
    """`server.address` and `server.port` of the client's base URL."""
    try:
        parts = urlsplit(str(client.base_url))
        host, port = parts.hostname, parts.port
    except (AttributeError, ValueError):
        return {}
    if not host:
        return {}
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return {"server.address": host, "server.port": port}


def _printable(name: object) -> str:
    """A name the model sent that is no tool's: bounded and printable, for the span name."""
    if not isinstance(name, str):
        return f"<{type(name).__name__}>"
    clean = "".join(ch if ch.isprintable() else "?" for ch in name[:65])
    return clean if len(clean) <= 64 else clean[:64] + "..."
