"""Guardrails on a call's input and output: allow, reject (the model reads why), or raise
(the turn stops with GuardrailTripped); per tool and per conversation, on both drivers,
with approvals, edited approvals, export/resume and streaming."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    GuardrailInput,
    GuardrailOutput,
    GuardrailTripped,
    ToolDefinitionError,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, call, history_problems, text, tool_call, tool_calls

MODEL = "scripted-model"
DRIVERS = ["sync", "async"]


class Bank:
    """`pay` refuses amounts over 100 (its own guardrail); `read` returns a secret once;
    `send` needs approval. `ran` records runs, `seen` the events guardrails got."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.seen: list[Any] = []
        self.registry = reg = ToolRegistry()

        def at_most_100(event: GuardrailInput) -> str | None:
            self.seen.append(event)
            if event.arguments["amount"] > 100:
                return f"Refused: {event.arguments['amount']} is over the limit of 100."
            return None

        @reg.register_tool(input_guardrails=at_most_100)
        def pay(amount: int) -> str:
            """Pay an amount."""
            self.ran.append(f"pay {amount}")
            return f"paid {amount}"

        @reg.register_tool
        def read(key: str) -> str:
            """Read a note."""
            self.ran.append(f"read {key}")
            return f"note {key}: password=hunter2" if key == "secret" else f"note {key}"

        @reg.register_tool(destructive=True)
        def send(amount: int) -> str:
            """Send money (needs approval)."""
            self.ran.append(f"send {amount}")
            return f"sent {amount}"


def no_passwords(event: GuardrailOutput) -> str | None:
    if "password" in event.result.content:
        return "The result was withheld: it holds a password."
    return None


async def async_no_passwords(event: GuardrailOutput) -> str | None:
    await asyncio.sleep(0)
    return no_passwords(event)


def run(driver: str, server: ScriptedServer, bank: Bank, prompt: str, **options: Any) -> Any:
    if driver == "sync":
        chat = Conversation(server.client(), MODEL, registry=bank.registry, **options)
        return chat, chat.send(prompt)

    async def main() -> Any:
        async with server.async_client() as client:
            chat = AsyncConversation(client, MODEL, registry=bank.registry, **options)
            return chat, await chat.send(prompt)

    return asyncio.run(main())


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("stream", [False, True])
def test_a_tools_input_guardrail_refuses_a_call_and_the_model_reads_why(
    driver: str, stream: bool
) -> None:
    bank = Bank()
    script = [tool_calls(call("pay", amount="500"), call("pay", amount=20)), text("Paid 20.")]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, bank, "pay", stream=stream)
        server.assert_all_consumed()
        server.assert_request(1, tool_result_contains="Refused: 500 is over the limit of 100.")
    assert reply.text == "Paid 20."
    refused, paid = reply.tool_results
    assert (refused.ok, refused.error_kind) == (False, "rejected")
    assert paid.content == "paid 20"
    assert bank.ran == ["pay 20"]
    assert bank.seen[0].arguments == {"amount": 500}  # validated (and coerced) arguments
    assert (bank.seen[0].tool_name, bank.seen[0].edited) == ("pay", False)


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_output_guardrail_withholds_a_result_before_the_model_reads_it(driver: str) -> None:
    bank = Bank()
    guardrail = no_passwords if driver == "sync" else async_no_passwords  # async: awaited
    script = [tool_calls(call("read", key="secret"), call("read", key="todo")), text("ok")]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, bank, "read", output_guardrails=[guardrail])
        server.assert_all_consumed()
        sent = server.history(1)
    assert "hunter2" not in str(sent)
    withheld, kept = reply.tool_results
    assert (withheld.ok, withheld.error_kind, withheld.value) == (False, "rejected", None)
    assert withheld.content == "The result was withheld: it holds a password."
    assert kept.content == "note todo"
    # it ran: only its result is withheld (the two calls run side by side, in either order)
    assert sorted(bank.ran) == ["read secret", "read todo"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_false_rejects_with_a_fixed_message_and_true_or_none_allows(driver: str) -> None:
    bank = Bank()
    answers = iter([True, None, False])
    script = [
        tool_calls(call("read", key="a"), call("read", key="b"), call("read", key="c")),
        text("ok"),
    ]
    with ScriptedServer(script) as server:
        _, reply = run(driver, server, bank, "read", input_guardrails=lambda event: next(answers))
    assert [r.ok for r in reply.tool_results] == [True, True, False]
    assert reply.tool_results[2].content == "Tool 'read' was not run: a guardrail refused the call."
    assert sorted(bank.ran) == ["read a", "read b"]


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("stage", ["input", "output"])
def test_a_guardrail_that_raises_stops_the_turn(driver: str, stage: str) -> None:
    def tripwire(event: Any) -> None:
        raise PermissionError("account frozen")

    bank = Bank()
    script = [tool_call("read", key="a"), text("never asked")]
    with ScriptedServer(script) as server:
        with pytest.raises(GuardrailTripped) as caught:
            run(driver, server, bank, "read", **{f"{stage}_guardrails": [tripwire]})
        assert server.remaining == 1
    error = caught.value
    assert (error.stage, error.tool_name) == (stage, "read")
    assert error.guardrail.endswith("tripwire")
    assert isinstance(error.__cause__, PermissionError)
    assert str(error).startswith(f"the {stage} guardrail ")
    assert str(error).endswith(
        "stopped the turn at a call of tool 'read': PermissionError: account frozen"
    )
    assert bank.ran == ([] if stage == "input" else ["read a"])


def test_the_history_stays_as_it_was_when_a_guardrail_stops_the_turn() -> None:
    def tripwire(event: Any) -> None:
        raise RuntimeError("stop")

    bank = Bank()
    with ScriptedServer([text("hello"), tool_call("read", key="a")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=bank.registry, input_guardrails=tripwire
        )
        chat.send("hi")
        before = list(chat.messages)
        with pytest.raises(GuardrailTripped):
            chat.send("read a")
    assert chat.messages == before


def test_conversation_refuses_an_async_guardrail_naming_it() -> None:
    bank = Bank()
    with pytest.raises(UsageError, match=r"output_guardrails=async_no_passwords is async def"):
        Conversation(object(), MODEL, registry=bank.registry, output_guardrails=async_no_passwords)

    async def check(event: Any) -> None:
        return None

    bank.registry.register_tool(name="other", input_guardrails=[check])(lambda: "x")
    with pytest.raises(UsageError, match=r"other: input_guardrails=.*check is async def"):
        Conversation(object(), MODEL, registry=bank.registry)
    AsyncConversation(object(), MODEL, registry=bank.registry)  # it awaits them


def test_a_guardrail_returning_an_awaitable_to_conversation_is_refused_not_ignored() -> None:
    bank = Bank()

    def sneaky(event: Any) -> Any:
        return async_no_passwords(event)

    with ScriptedServer([tool_call("read", key="secret")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=bank.registry, output_guardrails=sneaky
        )
        with pytest.raises(UsageError, match="returned coroutine, which Conversation cannot await"):
            chat.send("read")


def test_a_guardrail_answering_something_else_is_a_usage_error_naming_it() -> None:
    bank = Bank()

    def counting(event: Any) -> int:
        return 3

    with ScriptedServer([tool_call("read", key="a")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=bank.registry, input_guardrails=counting
        )
        with pytest.raises(UsageError, match=r"the guardrail .*counting returned int"):
            chat.send("read")


def test_bad_guardrail_options_are_refused_when_given() -> None:
    with pytest.raises(UsageError, match="input_guardrails: 'strict' is not a function"):
        Conversation(object(), MODEL, registry=ToolRegistry(), input_guardrails=["strict"])
    with pytest.raises(ToolDefinitionError, match="output_guardrails must be functions"):
        ToolRegistry().register_tool(name="x", output_guardrails=[1])(lambda: None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_arguments_that_do_not_validate_never_reach_an_input_guardrail(driver: str) -> None:
    bank = Bank()
    with ScriptedServer([tool_call("pay", amount="lots"), text("sorry")]) as server:
        _, reply = run(driver, server, bank, "pay")
    assert reply.tool_results[0].error_kind == "invalid_arguments"
    assert bank.seen == []


# -- with approvals ----------------------------------------------------------------------


def test_an_input_guardrail_runs_before_a_call_waits_for_approval() -> None:
    bank = Bank()

    def small(event: GuardrailInput) -> str | None:
        return "Too much." if event.arguments.get("amount", 0) > 10 else None

    with ScriptedServer([tool_call("send", amount=50), text("Refused.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=bank.registry, confirm="defer", input_guardrails=small
        )
        reply = chat.send("send 50")
    assert reply.stop_reason == "answer"  # never asked a person
    assert reply.tool_results[0].content == "Too much."


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_edited_approval_is_checked_again_after_export_and_resume(driver: str) -> None:
    bank = Bank()
    seen: list[GuardrailInput] = []

    def small(event: GuardrailInput) -> str | None:
        seen.append(event)
        return "Too much after the edit." if event.arguments["amount"] > 10 else None

    script = [tool_call("send", amount=5), text("Done.")]
    with ScriptedServer(script) as server:
        first = Conversation(
            server.client(), MODEL, registry=bank.registry, confirm="defer", input_guardrails=small
        )
        paused = first.send("send 5")
        assert paused.stop_reason == "approval_required"
        state = first.export_state()
        decision = {paused.pending[0].call_id: {"arguments": {"amount": 900}}}
        if driver == "sync":
            again = Conversation.from_state(
                state, server.client(), registry=bank.registry, input_guardrails=small
            )
            reply = again.resume(decision)
        else:

            async def main() -> Any:
                async with server.async_client() as client:
                    chat = AsyncConversation.from_state(
                        state, client, registry=bank.registry, input_guardrails=small
                    )
                    return await chat.resume(decision)

            reply = asyncio.run(main())
        server.assert_all_consumed()
    assert [(e.arguments, e.edited) for e in seen] == [
        ({"amount": 5}, False),
        ({"amount": 900}, True),
    ]
    assert reply.tool_results[0].content == "Too much after the edit."
    assert bank.ran == []
    assert history_problems(reply.messages) == []


def test_an_approved_calls_result_passes_the_output_guardrails() -> None:
    bank = Bank()

    def hide(event: GuardrailOutput) -> str | None:
        return "hidden" if event.result.ok else None

    with ScriptedServer([tool_call("send", amount=5), text("Done.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=bank.registry, confirm="defer", output_guardrails=hide
        )
        paused = chat.send("send 5")
        reply = chat.resume({paused.pending[0].call_id: True})
    assert bank.ran == ["send 5"]
    assert reply.tool_results[0].content == "hidden"
