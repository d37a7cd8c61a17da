"""Tracing: OpenTelemetry spans of dispatch (the otel extra), printed to the console."""

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolreg

registry = toolreg.ToolRegistry()


@registry.register_tool
def get_weather(city: str) -> str:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return f"18 °C in {city}"


spans = InMemorySpanExporter()  # ConsoleSpanExporter() prints them; OTLP sends them on
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
toolreg.instrument(tracer_provider=provider)  # or instrument() for the global providers
try:
    registry.dispatch_tool("get_weather", '{"city": "Paris"}')
finally:
    toolreg.uninstrument()
(span,) = spans.get_finished_spans()
print(span.name, dict(span.attributes or {}))  # execute_tool get_weather {...}
assert span.name == "execute_tool get_weather"
