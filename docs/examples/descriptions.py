"""Where a tool's and a parameter's descriptions come from, and which one wins."""

from typing import Annotated

from typing_extensions import Doc

from toolreg import Param, ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def search_flights(
    origin: Annotated[str, "IATA code of the departure airport"],  # plain string
    destination: Annotated[str, Param(description="IATA code, e.g. PEK")],  # Param
    passengers: Annotated[int, Doc("How many people travel")] = 1,  # Doc
    cabin: str = "economy",  # docstring below
) -> list[dict]:
    """Find flights between two airports. Use it when the user wants to fly somewhere.

    Args:
        origin: Ignored: the Annotated string above is more local and wins.
        cabin: economy, premium or business.
    """
    return []


properties = registry["search_flights"].parameters["properties"]
assert properties["origin"]["description"] == "IATA code of the departure airport"
assert properties["destination"]["description"] == "IATA code, e.g. PEK"
assert properties["passengers"]["description"] == "How many people travel"
assert properties["cabin"]["description"] == "economy, premium or business."
assert registry["search_flights"].description == (
    "Find flights between two airports. Use it when the user wants to fly somewhere."
)
