"""A tool from an existing JSON Schema (checked against the metaschema)."""

from toolreg import ToolRegistry

registry = ToolRegistry()
registry.register_schema(
    "get_time",
    {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
    lambda tz: f"12:00 in {tz}",
    description="Get the time in a time zone. Use it when the user asks what time it is.",
)
assert registry.dispatch_tool("get_time", '{"tz": "UTC"}').content == "12:00 in UTC"
assert registry.dispatch_tool("get_time", "{}").error_kind == "invalid_arguments"
