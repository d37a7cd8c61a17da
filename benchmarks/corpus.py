"""The fixed tool corpus: six realistic tools written once, in a style every peer accepts.

Google docstrings with an ``Args:`` section (transformers requires a description for every
parameter), real annotations (no ``from __future__ import annotations``, so every peer sees
types, not strings), small dict or str results.

`fresh(fn)` returns a new function object (new code object, new annotations dict) so that no
library can answer a registration from a cache keyed by the function's identity.
`CALLS` holds one realistic JSON argument string per tool, as a model would send it.
`STR_TOOLS` names the tools annotated to return `str` (their result needs no rendering).
"""

import types
from enum import Enum
from typing import Literal, Optional

from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

__all__ = [
    "CALLS",
    "STR_TOOLS",
    "TOOLS",
    "Address",
    "Contact",
    "Priority",
    "fresh",
    "fresh_named",
]


class Priority(Enum):
    """How urgent a task is."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


class Address(TypedDict):
    street: str
    city: str
    postcode: str


class Contact(TypedDict):
    name: str
    email: str
    address: Address


def _plain(value: object) -> object:
    # The tools are also called with raw JSON values (the `fn(**kwargs)` limit rows).
    return value.value if isinstance(value, Enum) else value


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """Get the current weather for a city.

    Use when the user asks about weather, temperature or rain.

    Args:
        city: City name, e.g. "Paris" or "北京".
        unit: Temperature unit of the answer.
    """
    return {"city": city, "temperature": 18, "unit": unit, "sky": "clear"}


def record_expense(
    amount: float,
    currency: str,
    category: str,
    tax_rate: float = 0.0,
    date: Optional[str] = None,
) -> dict:
    """Record an expense in the user's ledger.

    Args:
        amount: Amount spent, in the given currency.
        currency: ISO 4217 currency code, e.g. "EUR".
        category: Spending category, e.g. "travel" or "meals".
        tax_rate: Tax rate included in the amount, between 0 and 1.
        date: Day of the expense as YYYY-MM-DD; today when omitted.
    """
    return {"id": 42, "amount": round(amount * (1 + tax_rate), 2), "currency": currency}


def search_documents(
    query: str,
    tags: list[str],
    limit: int = 10,
    include_archived: bool = False,
) -> dict:
    """Search the document store.

    Args:
        query: Full-text query.
        tags: Only documents carrying all of these tags.
        limit: Maximum number of hits to return.
        include_archived: Whether archived documents are searched too.
    """
    return {"hits": [{"id": 1, "title": query}], "total": 1, "tags": tags[:limit]}


def create_task(title: str, priority: Priority = Priority.NORMAL) -> str:
    """Create a task in the user's to-do list.

    Args:
        title: Short title of the task.
        priority: How urgent the task is.
    """
    return f"created {title!r} with priority {_plain(priority)}"


def save_contact(contact: Contact, notify: bool = False) -> dict:
    """Save a contact in the address book.

    Args:
        contact: The contact, with a postal address.
        notify: Whether to email the contact a confirmation.
    """
    return {"saved": contact["name"], "city": contact["address"]["city"]}


def get_time() -> str:
    """Get the current time in UTC, as an ISO 8601 string."""
    return "2025-01-01T12:00:00Z"


TOOLS = (get_weather, record_expense, search_documents, create_task, save_contact, get_time)
STR_TOOLS = tuple(fn.__name__ for fn in TOOLS if fn.__annotations__.get("return") is str)

CALLS = {
    "get_weather": '{"city": "Paris", "unit": "fahrenheit"}',
    "record_expense": (
        '{"amount": 42.5, "currency": "EUR", "category": "meals", "date": "2025-03-01"}'
    ),
    "search_documents": '{"query": "quarterly report", "tags": ["finance", "2025"], "limit": 5}',
    "create_task": '{"title": "Renew passport", "priority": "high"}',
    "save_contact": (
        '{"contact": {"name": "Ada", "email": "ada@example.com", "address": '
        '{"street": "1 Main St", "city": "London", "postcode": "N1 9GU"}}, "notify": true}'
    ),
    "get_time": "{}",
}


def fresh_named(fn: types.FunctionType, name: str) -> types.FunctionType:
    """A new function with `fn`'s behaviour and metadata under `name`, sharing no objects."""
    code = fn.__code__.replace(co_name=name)
    new = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = None if fn.__kwdefaults__ is None else dict(fn.__kwdefaults__)
    new.__annotations__ = dict(fn.__annotations__)
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__qualname__ = name
    return new


def fresh(fn: types.FunctionType) -> types.FunctionType:
    """A new function object equal in every visible way to `fn` (same name)."""
    return fresh_named(fn, fn.__name__)
