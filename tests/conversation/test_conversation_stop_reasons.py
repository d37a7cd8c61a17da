"""Every `stop_reason` and every `Reply` field is declared once in code; the tables of
them in the loop guide (docs/guides/loop/index.md) agree with those declarations, in order.
A repeated call has its own stop reason, on both drivers."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from toolreg import AsyncConversation, Conversation, Reply, ToolRegistry
from toolreg.conversation import REPLY_FIELDS, STOP_REASONS
from toolreg.testing import ScriptedServer, text, tool_call

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "loop" / "index.md"
PAGE = GUIDE.read_text(encoding="utf-8")


def table_after(header: str) -> list[str]:
    """The first column of the loop guide's table whose first header cell is `header`."""
    tokens = MarkdownIt("commonmark").enable("table").parse(PAGE)
    column: list[str] | None = None
    cell = 0
    in_head = False
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            column, in_head = [], False
        elif token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            cell = 0
        elif token.type in ("th_open", "td_open"):
            cell += 1
            content = tokens[i + 1].content
            if column is not None and cell == 1:
                if in_head and content != header:
                    column = None  # another table
                elif not in_head:
                    column.append(content)
        elif token.type == "table_close" and column is not None:
            return column
    raise AssertionError(f"{GUIDE.name} has no table headed {header!r}")


def test_the_guide_lists_every_stop_reason() -> None:
    assert table_after("`stop_reason`") == [f'`"{value}"`' for value in STOP_REASONS]


def test_the_guide_lists_every_reply_field() -> None:
    assert table_after("Field") == [f"`{name}`" for name in REPLY_FIELDS]


def test_the_constants_are_the_declarations() -> None:
    assert tuple(f.name for f in dataclasses.fields(Reply)) == REPLY_FIELDS
    assert "repeated_calls" in STOP_REASONS
    assert len(set(STOP_REASONS)) == len(STOP_REASONS) == 9


def polling_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def job_status(job: str) -> str:
        """Status of a job."""
        return "running"

    return reg


def polls(n: int) -> list[object]:
    return [*(tool_call("job_status", job="a") for _ in range(n)), text("Still running.")]


@pytest.mark.parametrize("dialect", ["tools", "responses"])
def test_a_refused_repeated_call_stops_with_repeated_calls(dialect: str) -> None:
    with ScriptedServer(polls(3)) as server:
        chat = Conversation(server.client(), "m", registry=polling_registry(), dialect=dialect)
        reply = chat.send("?")
        server.assert_all_consumed()
    assert [r.error_kind for r in reply.tool_results] == [None, None, "repeated"]
    assert (reply.stop_reason, reply.text) == ("repeated_calls", "Still running.")


def test_the_async_driver_says_repeated_calls_too() -> None:
    async def main(server: ScriptedServer) -> Reply:
        async with server.async_client() as client:
            chat = AsyncConversation(client, "m", registry=polling_registry(), max_repeats=2)
            return await chat.send("?")

    with ScriptedServer(polls(2)) as server:
        reply = asyncio.run(main(server))
    assert reply.stop_reason == "repeated_calls"


def test_max_rounds_is_still_max_rounds_when_nothing_repeats() -> None:
    turns = [tool_call("job_status", job=str(i)) for i in range(2)]
    with ScriptedServer([*turns, text("Enough.")]) as server:
        chat = Conversation(server.client(), "m", registry=polling_registry(), max_rounds=2)
        reply = chat.send("?")
    assert reply.stop_reason == "max_rounds"
