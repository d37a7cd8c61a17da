"""Checked with `mypy --strict` by test_reply_types.py: `Reply[T]` and the typed `output`.

No line here may be an error: `assert_type` pins what each call returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typing_extensions import assert_type

from toolreg import AsyncConversation, Conversation, Reply
from toolreg.compat import chatglm3
from toolreg.formats import chatglm3 as chatglm3_format


@dataclass
class Report:
    title: str
    score: float


def sync(chat: Conversation) -> None:
    reply = chat.send("Report?", output_type=Report)
    assert_type(reply, Reply[Report])
    assert_type(reply.output, Report)
    print(reply.output.title.upper(), reply.output.score + 1)
    assert_type(chat.send("hi"), Reply[None])
    assert_type(chat.send("hi").output, None)
    assert_type(chat.send("n", output_type=int).output, int)
    assert_type(chat.send("s", output_type={"type": "object"}), Reply[Any])
    assert_type(chat.run([{"role": "user", "content": "x"}], output_type=Report), Reply[Report])
    assert_type(chat.resume({"call_1": True}, output_type=Report).output, Report)
    untyped: Reply = chat.send("hi")  # a bare Reply is Reply[Any]
    assert_type(untyped.output, Any)


async def asynchronous(chat: AsyncConversation) -> None:
    reply = await chat.send("Report?", output_type=Report)
    assert_type(reply, Reply[Report])
    assert_type(reply.output.score, float)
    assert_type(await chat.send("hi"), Reply[None])
    assert_type((await chat.run([], output_type=Report)).output, Report)
    assert_type((await chat.resume({}, output_type=Report)).output, Report)


def chatglm3_loop(message: dict[str, Any]) -> list[str]:
    # parse_calls' arguments go straight into the compat dispatch_tool
    return [
        chatglm3.dispatch_tool(call.name, call.arguments)
        for call in chatglm3_format.parse_calls(message)
    ]
