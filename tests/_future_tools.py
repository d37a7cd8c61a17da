"""Tools written with `from __future__ import annotations`: every annotation is a string.

Used by tests/definition/test_schema_types.py and tests/definition/test_definition_errors.py.
Classes are defined
*after* the functions that use them (forward references), and the TypedDicts use
`NotRequired` / `Required`, which `__required_keys__` gets wrong under PEP 563.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

from typing_extensions import NotRequired, Required, TypedDict


def plan_trip(route: Route, stops: list[Stop], budget: float | None = None) -> Itinerary:
    """Plan a trip along a route."""
    raise NotImplementedError


def walk_tree(root: TreeNode) -> int:
    raise NotImplementedError


def broken(x: MissingType) -> None:  # noqa: F821
    raise NotImplementedError


def broken_field(order: BrokenOrder) -> None:
    raise NotImplementedError


def bad_return(x: int) -> MissingReturnType:  # noqa: F821
    """The return annotation is not part of the schema: it must not block registration."""
    raise NotImplementedError


class Route(TypedDict):
    start: str
    end: Annotated[str, "Where the trip ends"]
    via: NotRequired[list[str]]


class Stop(TypedDict, total=False):
    name: Required[str]
    nights: int


@dataclasses.dataclass
class TreeNode:
    label: str
    children: list[TreeNode] = dataclasses.field(default_factory=list)


class BrokenOrder(TypedDict):
    item: MissingItem  # noqa: F821


Itinerary = list[str]
