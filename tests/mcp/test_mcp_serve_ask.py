"""A served tool asks the person behind the client: `ctx.ask` as MCP elicitation (form
mode), with the official SDK's client over stdio (`toolreg serve` in a child process) and
streamable HTTP on 127.0.0.1: accept, decline, cancel, an answer that does not fit the
schema, a client without the capability, a connection with no back-channel."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from _mcp_support import child_env, serve_command, text_of
from mcp import Client, StdioServerParameters

from toolreg.mcp import HttpServer, asgi_app

TARGET = "tests/_mcp_ask_tools.py:registry"
CANNOT = "Tool '{}' needs to ask the user, which this caller cannot."


def stdio() -> StdioServerParameters:
    command = serve_command(TARGET)
    return StdioServerParameters(command=command[0], args=command[1:], env=child_env())


class Person:
    """An elicitation callback: answers each question from a script, remembers them."""

    def __init__(self, *answers: tuple[str, dict[str, Any] | None]) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append((params.message, params.requested_schema))
        action, content = self.answers.pop(0)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return result.is_error, text_of(result)


async def check_asking(server: Any, mode: str) -> None:
    person = Person(
        ("accept", {"night": "2026-12-24", "guests": 3}),
        ("decline", None),
        ("cancel", None),
        ("accept", {"night": "2026-12-24", "guests": 99}),  # over its maximum
        ("accept", {"night": "2026-12-31"}),
        ("accept", {"name": "Ann", "vip": True}),
        ("accept", {"guests": 2}),  # no night
    )
    async with Client(server, mode=mode, elicitation_callback=person) as client:
        assert await call(client, "book", room="12") == (
            False,
            "accept {'night': '2026-12-24', 'guests': 3}",
        )
        message, schema = person.asked[0]
        assert message == "Which night for room 12?"
        assert schema == {  # the form as sent: flat, form mode
            "type": "object",
            "properties": {
                "night": {"type": "string", "description": "The night, YYYY-MM-DD"},
                "guests": {"type": "integer", "minimum": 1, "maximum": 8, "default": 2},
            },
            "required": ["night"],
        }
        assert await call(client, "book", room="12") == (False, "decline None")
        assert await call(client, "abook", room="7") == (False, "cancel None")
        # an answer that does not fit: the tool gets the error, never the data
        error, text = await call(client, "book", room="12")
        assert not error
        assert text.startswith("refused a bad answer: The user's answer does not fit")
        assert "guests" in text
        # an async tool asks twice; the second form comes from a TypedDict
        assert await call(client, "abook", room="7") == (
            False,
            "accept {'night': '2026-12-31'}; accept {'name': 'Ann', 'vip': True}",
        )
        assert person.asked[-1][1]["required"] == ["name", "vip"]
        # let through, the error is what the model reads
        error, text = await call(client, "book_unchecked")
        assert error
        assert text.startswith("The user's answer does not fit the question's form: night")
    assert person.answers == []


async def check_cannot_ask(server: Any, mode: str) -> None:
    async with Client(server, mode=mode) as client:  # no elicitation capability
        for tool in ("book_unchecked", "abook"):
            error, text = await call(client, tool, **({"room": "1"} if tool == "abook" else {}))
            assert error
            assert text.startswith(CANNOT.format(tool))


@pytest.mark.slow
def test_stdio_asks_by_elicitation() -> None:
    async def run() -> None:
        await check_asking(stdio(), "legacy")
        await check_cannot_ask(stdio(), "legacy")

    asyncio.run(run())


@pytest.mark.slow
def test_stdio_on_the_2026_protocol_asks_by_the_clients_retry() -> None:
    async def run() -> None:
        await check_asking(stdio(), "auto")
        await check_cannot_ask(stdio(), "auto")

    asyncio.run(run())


def test_stateless_http_on_the_2026_protocol_asks_by_the_clients_retry() -> None:
    """No session, no back-channel: the question goes back in an `InputRequiredResult`
    (the fast path's answer too) and the tool runs again with the answer."""

    async def run() -> None:
        with HttpServer(asgi_app(_registry())) as server:
            await check_asking(server.url, "auto")
            await check_cannot_ask(server.url, "auto")

    asyncio.run(run())


def test_stateful_http_asks_over_the_session() -> None:
    async def run() -> None:
        with HttpServer(asgi_app(_registry(), stateless=False)) as server:
            await check_asking(server.url, "legacy")
            await check_cannot_ask(server.url, "legacy")

    asyncio.run(run())


def test_stateless_http_on_the_2025_protocol_cannot_ask() -> None:
    """No session, no back-channel, no retry on 2025: the tool is told so, nobody asked."""
    mode = "legacy"

    async def run() -> None:
        person = Person()
        with HttpServer(asgi_app(_registry())) as server:
            async with Client(server.url, mode=mode, elicitation_callback=person) as client:
                error, text = await call(client, "book_unchecked")
        assert error
        assert text.startswith(CANNOT.format("book_unchecked"))
        assert person.asked == []

    asyncio.run(run())


def _registry() -> Any:
    import _mcp_ask_tools

    return _mcp_ask_tools.registry


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_confirmed_tool_that_asks_is_confirmed_once_on_the_2026_protocol(transport: str) -> None:
    """The retry that answers the question keeps the confirmation given before it
    (`requestState`): the person is asked each thing once."""
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if "confirm" in params.requested_schema["properties"]:
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="accept", content={"card": "visa"})

    async def run(server: Any) -> tuple[bool, str]:
        async with Client(server, mode="auto", elicitation_callback=answer) as client:
            return await call(client, "pay", amount=5)

    if transport == "http":
        with HttpServer(asgi_app(_registry())) as server:
            outcome = asyncio.run(run(server.url))
    else:
        outcome = asyncio.run(run(stdio()))
    assert outcome == (False, "accept {'card': 'visa'}")
    assert asked == ["""Run the tool 'pay' with {"amount": 5}?""", "Which card pays 5?"]
