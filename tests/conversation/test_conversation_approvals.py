"""Approvals that outlive a request: confirm="defer", export_state, from_state, resume."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationError,
    ConversationStateError,
    Hooks,
    PendingCall,
    ToolRegistry,
    UsageError,
)
from toolreg.cli.target import load_file
from toolreg.testing import ScriptedServer, call, error, text, tool_call, tool_calls

MODEL = "scripted-model"
DIALECTS = ["tools", "responses", "chatglm3"]
# the id of the second call of the first round: the model's, or the loop's own for a
# dialect whose calls carry none
SECOND_CALL_ID = {"tools": "call_2", "responses": "call_2", "chatglm3": "toolreg_1_1"}


class Bank:
    """A registry with a read-only tool and two that need approval; `ran` records runs."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.registry = reg = ToolRegistry()

        @reg.register_tool(read_only=True)
        def get_balance(account: str) -> int:
            """Balance of an account."""
            self.ran.append(f"balance {account}")
            return 100

        @reg.register_tool(destructive=True)
        def transfer(account: str, amount: int) -> str:
            """Send money from an account."""
            self.ran.append(f"transfer {amount} from {account}")
            return f"sent {amount}"

        @reg.register_tool(requires_confirmation=True)
        def notify(message: str) -> str:
            """Tell the account holder something."""
            self.ran.append(f"notify {message}")
            return "notified"


def round_one() -> Any:
    """A round with a call that runs at once and one that needs approval (amount as text:
    the pending arguments are the validated ones)."""
    return tool_calls(
        call("get_balance", account="A"),
        call("transfer", account="A", amount="5"),
        content="Checking, then sending.",
    )


def chat_for(server: ScriptedServer, bank: Bank, dialect: str = "tools", **options: Any) -> Any:
    return Conversation(
        server.client(), MODEL, registry=bank.registry, dialect=dialect, confirm="defer", **options
    )


def observations(history: list[dict[str, Any]]) -> list[str]:
    """The text of every tool answer in a history, in order, whatever the dialect."""
    found = []
    for m in history:
        if m.get("type") == "function_call_output":
            found.append(m["output"])
        elif m.get("role") in ("tool", "observation", "function"):
            found.append(m["content"])
    return found


# -- the flow, in every dialect, sync and async ----------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_paused_turn_resumes_in_another_conversation(dialect: str) -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Sent 5 from A.")]) as server:
        chat = chat_for(server, bank, dialect)
        reply = chat.send("Send 5 from A")
        assert reply.stop_reason == "approval_required"
        pending = PendingCall(SECOND_CALL_ID[dialect], "transfer", {"account": "A", "amount": 5})
        assert reply.pending == [pending]
        assert chat.pending == [pending]
        assert reply.text == "Checking, then sending."
        assert bank.ran == ["balance A"]  # the call that needs no approval ran
        assert [r.tool_name for r in reply.tool_results] == ["get_balance"]
        with pytest.raises(UsageError, match="waits for approvals"):
            chat.send("And?")

        saved = json.dumps(chat.export_state())  # plain JSON, e.g. into a database
        fresh = Bank()  # another process: its own registry, same tools
        later = Conversation.from_state(json.loads(saved), server.client(), registry=fresh.registry)
        assert later.pending == [pending]
        done = later.resume({pending.call_id: True})
        server.assert_all_consumed()  # the server refuses a history with a call unanswered
        sent = server.history(1)
    assert fresh.ran == ["transfer 5 from A"]
    assert bank.ran == ["balance A"]
    assert done.stop_reason == "answer"
    assert done.text == "Sent 5 from A."
    assert observations(sent) == ["100", "sent 5"]  # every call answered once, in order
    assert [r.tool_name for r in done.tool_results] == ["get_balance", "transfer"]
    assert done.rounds == 2
    assert done.usage.total_tokens == 30  # counted from the send that started the turn
    assert done.pending == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_async_conversations_pause_and_resume(dialect: str) -> None:
    bank, fresh = Bank(), Bank()

    async def main(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            chat = AsyncConversation(
                client, MODEL, registry=bank.registry, dialect=dialect, confirm="defer"
            )
            paused = await chat.send("Send 5 from A")
            state = json.loads(json.dumps(chat.export_state()))
            later = AsyncConversation.from_state(state, client, registry=fresh.registry)
            return paused, await later.resume({paused.pending[0].call_id: True})

    with ScriptedServer([round_one(), text("Sent.")]) as server:
        paused, done = asyncio.run(main(server))
        server.assert_all_consumed()
        sent = server.history(1)
    assert paused.stop_reason == "approval_required"
    assert (bank.ran, fresh.ran) == (["balance A"], ["transfer 5 from A"])
    assert done.text == "Sent."
    assert observations(sent) == ["100", "sent 5"]


# -- decisions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (False, "Tool 'transfer' was not run: the user declined. Do not retry it"),
        ("over my limit", "Tool 'transfer' was not run: the user declined (over my limit)."),
    ],
)
def test_a_denied_call_is_answered_and_never_runs(decision: Any, expected: str) -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Not sent.")]) as server:
        chat = chat_for(server, bank)
        chat.send("Send 5 from A")
        reply = chat.resume({"call_2": decision})
        sent = server.history(1)
    assert bank.ran == ["balance A"]
    assert observations(sent)[1].startswith(expected)
    assert reply.tool_results[1].error_kind == "denied"
    assert reply.text == "Not sent."


def test_edited_arguments_are_checked_like_a_models_and_the_model_is_told() -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Sent 7.")]) as server:
        chat = chat_for(server, bank)
        chat.send("Send 5 from A")
        with pytest.raises(UsageError, match="amount: expected integer"):
            chat.resume({"call_2": {"arguments": {"account": "A", "amount": "lots"}}})
        assert chat.pending  # nothing was used up by a bad decision
        chat.resume({"call_2": {"arguments": {"account": "A", "amount": "7"}}})
        sent = server.history(1)
    assert bank.ran == ["balance A", "transfer 7 from A"]
    assert observations(sent)[1] == (
        '(The user changed the arguments to {"account": "A", "amount": 7} before it ran.)\nsent 7'
    )


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        ({}, "no decision for 'call_2'"),
        ({"call_2": True, "call_9": True}, "'call_9' is not pending"),
        ({"call_2": 1}, "must be True, False, a reason"),
        ({"call_2": {"args": {}}}, "must be True, False, a reason"),
        ({"call_2": {"arguments": [1]}}, "must be a dict"),
        ([("call_2", True)], "resume\\(\\) takes a dict"),
    ],
)
def test_bad_decisions_raise_before_anything_runs(decisions: Any, message: str) -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Sent.")]) as server:
        chat = chat_for(server, bank)
        chat.send("Send 5 from A")
        with pytest.raises(UsageError, match=message):
            chat.resume(decisions)
        assert bank.ran == ["balance A"]
        chat.resume({"call_2": True})  # still pending, resumable once
    assert bank.ran == ["balance A", "transfer 5 from A"]


def test_several_pending_calls_keep_their_order() -> None:
    bank = Bank()
    turn = tool_calls(
        call("notify", message="hi"),
        call("get_balance", account="A"),
        call("transfer", account="A", amount=1),
    )
    with ScriptedServer([turn, text("Done.")]) as server:
        chat = chat_for(server, bank)
        reply = chat.send("go")
        assert [p.call_id for p in reply.pending] == ["call_1", "call_3"]
        chat.resume({"call_1": "no spam", "call_3": True})
        sent = server.history(1)
    assert bank.ran == ["balance A", "transfer 1 from A"]
    answers = observations(sent)
    assert answers[0].startswith("Tool 'notify' was not run")
    assert answers[1:] == ["100", "sent 1"]


def test_calls_that_cannot_run_are_not_asked_about() -> None:
    bank = Bank()

    def veto(event: Any) -> Any:
        return "Not that one." if event.call.name == "notify" else None

    turn = tool_calls(call("transfer", account="A", amount="many"), call("notify", message="x"))
    with ScriptedServer([turn, text("Sorry.")]) as server:
        reply = chat_for(server, bank, hooks=Hooks(before_tool_call=veto)).send("go")
    assert reply.stop_reason == "answer"
    assert [r.error_kind for r in reply.tool_results] == ["invalid_arguments", "denied"]
    assert bank.ran == []


def test_a_resumed_turn_can_stop_for_approval_again() -> None:
    bank = Bank()
    script = [round_one(), tool_call("transfer", account="B", amount=2), text("Both sent.")]
    with ScriptedServer(script) as server:
        chat = chat_for(server, bank)
        chat.send("Send 5 from A and 2 from B")
        first = chat.export_state()
        again = chat.resume({"call_2": True})
        assert again.stop_reason == "approval_required"
        assert again.pending == [PendingCall("call_3", "transfer", {"account": "B", "amount": 2})]
        second = chat.export_state()
        assert second["id"] != first["id"]
        done = chat.resume({"call_3": True})
    assert done.text == "Both sent."
    assert bank.ran == ["balance A", "transfer 5 from A", "transfer 2 from B"]


def test_max_rounds_counts_the_whole_turn() -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Stopping here.")]) as server:
        chat = chat_for(server, bank, max_rounds=1)
        chat.send("go")
        state = json.loads(json.dumps(chat.export_state()))
        done = Conversation.from_state(state, server.client(), registry=bank.registry).resume(
            {"call_2": True}
        )
        server.assert_request(1, tool_choice="none")
    assert done.stop_reason == "max_rounds"


# -- exactly once -------------------------------------------------------------------------


def test_a_state_resumes_once() -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Sent.")]) as server:
        chat = chat_for(server, bank)
        chat.send("go")
        state = chat.export_state()
        assert state["status"] == "approval_required"
        assert len(state["id"]) == 32
        assert [p["call_id"] for p in state["pending"]] == ["call_2"]
        assert json.loads(json.dumps(state)) == state

        first = Conversation.from_state(state, server.client(), registry=bank.registry)
        second = Conversation.from_state(state, server.client(), registry=bank.registry)
        first.resume({"call_2": True})
        assert state["status"] == "resumed"
        with pytest.raises(ConversationStateError, match=f"{state['id']} was resumed already"):
            second.resume({"call_2": True})
        with pytest.raises(ConversationStateError, match="resumed already"):
            Conversation.from_state(state, server.client(), registry=bank.registry)
        # the original conversation exported that state: it cannot run the call again either
        with pytest.raises(ConversationStateError, match="resumed already"):
            chat.resume({"call_2": True})
    assert bank.ran.count("transfer 5 from A") == 1


def test_resuming_in_place_uses_up_the_exported_state() -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Sent.")]) as server:
        chat = chat_for(server, bank)
        chat.send("go")
        state = chat.export_state()
        chat.resume({"call_2": True})
        with pytest.raises(UsageError, match="nothing to resume"):
            chat.resume({"call_2": True})
        with pytest.raises(ConversationStateError, match="resumed already"):
            Conversation.from_state(state, server.client(), registry=bank.registry)
    assert bank.ran.count("transfer 5 from A") == 1


def test_a_failure_after_the_approved_calls_ran_keeps_them_answered() -> None:
    bank = Bank()
    with ScriptedServer([round_one(), error(503, "Overloaded")]) as server:
        chat = chat_for(server, bank)
        chat.send("go")
        with pytest.raises(ConversationError, match="Overloaded"):
            chat.resume({"call_2": True})
        assert bank.ran == ["balance A", "transfer 5 from A"]
        assert chat.pending == []
        assert observations(chat.messages) == ["100", "sent 5"]
        with pytest.raises(UsageError, match="nothing to resume"):
            chat.resume({"call_2": True})
        server.add(text("It went through."))
        assert chat.send("Did it work?").text == "It went through."
        server.assert_all_consumed()  # a valid history: every call answered once
    assert bank.ran.count("transfer 5 from A") == 1


def test_a_hook_error_after_the_approved_calls_ran_keeps_them_answered() -> None:
    bank = Bank()

    def broken(event: Any) -> None:
        if event.result.tool_name == "transfer":
            raise RuntimeError("hook bug")

    with ScriptedServer([round_one()]) as server:
        chat = chat_for(server, bank, hooks=Hooks(after_tool_call=broken))
        chat.send("go")
        with pytest.raises(RuntimeError, match="hook bug"):
            chat.resume({"call_2": True})
    assert observations(chat.messages) == ["100", "sent 5"]
    assert bank.ran.count("transfer 5 from A") == 1


def test_an_interrupted_approved_call_is_answered_as_interrupted() -> None:
    bank = Bank()

    @bank.registry.register_tool(destructive=True, replace=True)
    def transfer(account: str, amount: int) -> str:
        """Send money from an account (interrupted half-way here)."""
        bank.ran.append("transfer started")
        raise KeyboardInterrupt

    with ScriptedServer([round_one(), text("I could not tell whether it went through.")]) as server:
        chat = chat_for(server, bank)
        chat.send("go")
        with pytest.raises(KeyboardInterrupt):
            chat.resume({"call_2": True})
        assert observations(chat.messages) == [
            "100",
            "Tool 'transfer' was interrupted while it was running (the turn was stopped): "
            "what it did is not known.",
        ]
        assert [r.outcome for r in chat.turn_results] == ["completed", "interrupted"]
        assert chat.pending == []
        chat.send("Did it work?")
        server.assert_all_consumed()  # every call answered once: a valid history
    assert bank.ran == ["balance A", "transfer started"]


# -- refusals -------------------------------------------------------------------------------


def test_a_state_whose_tool_changed_is_refused() -> None:
    bank = Bank()
    with ScriptedServer([round_one()]) as server:
        chat = chat_for(server, bank)
        chat.send("go")
        state = json.loads(json.dumps(chat.export_state()))
        changed = Bank()
        changed.registry.unregister("transfer")

        @changed.registry.register_tool(destructive=True)
        def transfer(account: str, amount: float) -> str:  # other parameters than paused with
            """Send money from an account."""
            changed.ran.append("transfer")
            return "sent"

        with pytest.raises(ConversationStateError, match="'transfer' has changed its definition"):
            Conversation.from_state(state, server.client(), registry=changed.registry)
        gone = Bank()
        gone.registry.unregister("transfer")
        with pytest.raises(ConversationStateError, match="does not have"):
            Conversation.from_state(state, server.client(), registry=gone.registry)
    assert changed.ran == gone.ran == []


def mangled(**changes: Any) -> Any:
    def change(state: dict[str, Any]) -> Any:
        return {**state, **changes}

    return change


@pytest.fixture(scope="module")
def saved_state() -> str:
    """A paused conversation's state as JSON text (made once for the refusal tests)."""
    with ScriptedServer([round_one()]) as server:
        chat = chat_for(server, Bank())
        chat.send("go")
        return json.dumps(chat.export_state())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda state: [state], "not made by Conversation.export_state"),
        (mangled(toolreg="something"), "not made by Conversation.export_state"),
        (mangled(version=4), "version 4; this toolreg reads version 3"),
        (mangled(version=1), "version 1 .*cannot be resumed safely"),
        (mangled(version=True), "version True"),
        (mangled(version=2.0), "version 2.0"),
        (mangled(status="done"), "unknown status"),
        (mangled(id=7), "no valid 'id'"),
        (mangled(turn=None), "does not match its turn"),
        (mangled(pending=[]), "pending calls do not match"),
        (mangled(messages="hi"), "no valid 'messages'"),
        (lambda state: {**state, "options": {**state["options"], "evil": 1}}, "its options"),
    ],
)
def test_malformed_states_are_refused(saved_state: str, change: Any, message: str) -> None:
    state = change(json.loads(saved_state))
    with pytest.raises(ConversationStateError, match=message):
        Conversation.from_state(state, None, registry=Bank().registry)


def test_request_options_that_are_not_json_cannot_be_exported() -> None:
    class Timeout:  # e.g. the SDK transport's Timeout object, given as timeout=
        pass

    chat = Conversation(object(), MODEL, registry=Bank().registry, timeout=Timeout())
    with pytest.raises(UsageError, match="timeout are not JSON"):
        chat.export_state()


def test_confirm_takes_only_defer_as_a_string() -> None:
    with pytest.raises(UsageError, match='callable, "defer" or None'):
        Conversation(object(), MODEL, registry=Bank().registry, confirm="ask")


# -- more state -------------------------------------------------------------------------------


def test_a_conversation_between_turns_is_saved_and_rebuilt() -> None:
    bank = Bank()
    with ScriptedServer([text("Hello."), text("Still here.")]) as server:
        chat = chat_for(server, bank, system="Be brief.", temperature=0, max_rounds=3)
        chat.send("hi")
        state = json.loads(json.dumps(chat.export_state()))
        assert (state["status"], state["pending"], state["turn"]) == ("ready", [], None)
        later = Conversation.from_state(state, server.client(), registry=bank.registry)
        later.send("still there?")
        body = server.assert_request(1, contains_text="Be brief.")
    assert body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert later.messages[-1]["content"] == "Still here."
    assert state["options"]["max_rounds"] == 3
    assert later.export_state()["options"] == state["options"]  # every option comes back


def test_server_state_survives_the_pause() -> None:
    bank = Bank()
    with ScriptedServer([round_one(), text("Sent.")]) as server:
        chat = chat_for(server, bank, "responses", state="server")
        chat.send("go")
        state = json.loads(json.dumps(chat.export_state()))
        assert state["server"] == {"previous_response_id": "resp_scripted_1", "known": 4}
        later = Conversation.from_state(state, server.client(), registry=bank.registry)
        later.resume({"call_2": True})
        body = server.requests[1]
    assert body["previous_response_id"] == "resp_scripted_1"
    assert [i["type"] for i in body["input"]] == ["function_call_output"] * 2


@dataclass
class Receipt:
    account: str
    amount: int


def test_the_output_type_of_a_paused_turn() -> None:
    bank = Bank()
    answer = text('{"account": "A", "amount": 5}')
    with ScriptedServer([round_one(), answer, round_one(), answer]) as server:
        chat = chat_for(server, bank)
        chat.send("go", output_type=Receipt)
        assert chat.resume({"call_2": True}).output == Receipt("A", 5)  # in place: kept

        chat.send("again", output_type=Receipt)
        state = json.loads(json.dumps(chat.export_state()))
        later = Conversation.from_state(state, server.client(), registry=bank.registry)
        with pytest.raises(UsageError, match="asked for output_type Receipt"):
            later.resume({"call_4": True})
        with pytest.raises(ConversationStateError, match="output_type differs"):
            later.resume({"call_4": True}, output_type=dict[str, int])
        assert later.resume({"call_4": True}, output_type=Receipt).output == Receipt("A", 5)


# -- the sample signs what it saves -------------------------------------------------------------


def test_the_approvals_sample_signs_its_saved_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLREG_STATE_KEY", raising=False)
    module = load_file(Path(__file__).resolve().parents[2] / "samples" / "approvals.py")
    before = module.get_balance()
    state_file = tmp_path / "pending.json"
    with ScriptedServer(module.ASK_SCRIPT) as server:
        module.ask("Pay Ada", server.client(), server.model, state_file)
    saved = json.loads(state_file.read_text(encoding="utf-8"))
    assert saved["signature"].startswith("hmac-sha256:")
    key_file = tmp_path / "pending.json.key"
    assert len(key_file.read_bytes()) == 32
    assert key_file.stat().st_mode & 0o077 == 0  # only its owner reads the key
    saved["pending"][0]["arguments"]["amount"] = 499  # someone edits the file
    state_file.write_text(json.dumps(saved), encoding="utf-8")
    with (
        ScriptedServer(module.DECIDE_SCRIPT) as server,
        pytest.raises(ConversationStateError, match="signature does not match"),
    ):
        module.decide({"call_2": True}, server.client(), state_file)
    assert module.get_balance() == before
    monkeypatch.setenv("TOOLREG_STATE_KEY", "a key from the environment")
    assert module.signing_key(state_file) == b"a key from the environment"
