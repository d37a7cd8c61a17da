"""A schema of an older JSON Schema draft: rewritten as 2020-12, and the tool says how."""

from toolreg import ToolRegistry

registry = ToolRegistry()
tool = registry.register_schema(
    "list_orders",
    {  # draft 4, as OpenAPI 3.0 generators and pydantic v1 wrote it
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "definitions": {"status": {"enum": ["open", "shipped"]}},
        "properties": {
            "page": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
            "status": {"$ref": "#/definitions/status"},
        },
        "required": ["page"],
    },
    lambda page, status="open": f"page {page} of the {status} orders",
    description="List the user's orders, a page at a time. Use it when they ask about orders.",
)
assert tool.parameters["properties"]["page"] == {"type": "integer", "exclusiveMinimum": 0}
assert tool.parameters["properties"]["status"] == {"$ref": "#/$defs/status"}
for change in tool.schema_changes:
    print(change)  # e.g. #/properties/page: exclusiveMinimum: true with minimum: 0 -> ...
assert registry.dispatch_tool("list_orders", {"page": 1}).ok
assert registry.dispatch_tool("list_orders", {"page": 0}).error_kind == "invalid_arguments"
