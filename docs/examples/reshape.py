"""Reshape a tool you do not own: rename it and its arguments, hide one, narrow one."""

from typing import Annotated

from toolreg import Arg, Reshape, ToolDefinitionError, ToolRegistry, reshaped

crm = ToolRegistry()  # someone else's tools: named and described for their own code


@crm.register_tool(read_only=True)
def get_orders_v2(
    cust_id: Annotated[str, "Customer id"],
    rgn: Annotated[str, "Region code"],
    max: Annotated[int, "Rows"] = 100,
    debug: bool = False,
) -> list[str]:
    """Internal: orders by customer."""
    return [f"{cust_id}-{rgn}-{n}" for n in range(min(max, 3))]


orders = reshaped(
    crm,
    {
        "get_orders_v2": Reshape(
            name="list_orders",
            description="The signed-in customer's orders. Use it when they ask about orders.",
            args={
                "cust_id": Arg(from_context=lambda deps: deps["customer"]),  # never the model's
                "rgn": Arg(name="region", narrow={"enum": ["eu", "us"]}, description="Region"),
                "max": Arg(name="limit", narrow={"maximum": 20}, default=5),
                "debug": Arg(value=False),
            },
        )
    },
)

(definition,) = orders.tools()
print(definition.name, list(definition.parameters["properties"]))  # list_orders [region, limit]

dispatcher = orders.dispatcher  # what a Conversation or toolreg serve runs calls with
done = dispatcher.dispatch_tool("list_orders", {"region": "eu"}, context={"customer": "c7"})
print(done.content)  # ["c7-eu-0", "c7-eu-1", "c7-eu-2"]: cust_id, max and debug sent for it
refused = dispatcher.dispatch_tool("list_orders", {"region": "mars"}, context={"customer": "c7"})
print(refused.content)  # Invalid arguments for tool 'list_orders': region: 'mars' is not one of ...
print(dispatcher.dispatch_tool("get_orders_v2", {}).error_kind)  # unknown_tool: only the new name

try:  # a "narrowing" that admits what the tool refuses is an error now, not at call time
    reshaped(crm, {"get_orders_v2": Reshape(args={"max": Arg(narrow={"type": "number"})})})
except ToolDefinitionError as exc:
    print(exc.parameter, "-", exc.problem)  # max - narrow={'type': 'number'} is not a narrowing ...
