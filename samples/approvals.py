"""Approvals across two requests: a web app cannot wait while a person decides.

Request 1 (the user asks) runs the conversation with `confirm="defer"` until a payment needs
the account holder's approval, saves the conversation state to a JSON file and ends.
Request 2 (the holder clicks) claims that file, so that a second click finds nothing, rebuilds
the conversation and resumes it with the decision: the payment runs at most once.

    python samples/approvals.py ask "Pay 120 EUR to Ada for the concert tickets"
    python samples/approvals.py decide call_2 yes      # or: no, or a reason for declining
    toolreg demo --sample approvals --yes              # the same tools, asked at the terminal

Each request starts its own scripted model unless `OPENAI_BASE_URL` and `TOOLREG_MODEL` are
set; the state file is `--state FILE` (default: in the temporary directory).

The saved state is signed: whoever can write the file could otherwise change the payment
after the holder saw it. The key is the application's secret: `TOOLREG_STATE_KEY` (at least
16 bytes; a real deployment keeps it with its other secrets), or else a random key generated
once into a file beside the state, readable only by its owner (`STATE.key`).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from toolreg import Conversation, Param, Reply, ToolError, ToolRegistry
from toolreg.cli.demo import Demo, run_demo
from toolreg.testing import ScriptedServer, TurnLike, last_tool_result, text, tool_call

registry = ToolRegistry()
SYSTEM = "You manage the user's bank account. Check the balance before paying anyone."
STATE_FILE = Path(tempfile.gettempdir()) / "toolreg-approval.json"

_account = {"balance": Decimal("500.00")}  # a real tool would talk to the bank


@registry.register_tool(read_only=True)
def get_balance() -> dict[str, str]:
    """Get the balance of the user's account, in EUR. Use it before a payment, or when the
    user asks how much money is left."""
    return {"balance": f"{_account['balance']:.2f}", "currency": "EUR"}


@registry.register_tool(destructive=True)
def pay(
    payee: Annotated[str, Param(description="Who receives the money", min_length=1, max_length=80)],
    amount: Annotated[Decimal, "Amount in EUR, e.g. 120 or 19.99"],
) -> dict[str, str]:
    """Pay someone from the user's account, in EUR. Use it only when the user clearly asks
    to pay; the account holder approves every payment before it is made."""
    if amount <= 0:
        raise ToolError("The amount must be more than 0 EUR.")
    if amount > _account["balance"]:
        raise ToolError(f"Insufficient funds: {_account['balance']:.2f} EUR left.")
    _account["balance"] -= amount
    left = f"{_account['balance']:.2f}"
    return {"payee": payee, "amount": f"{amount:.2f}", "balance": left}


def _after_payment(request: dict[str, Any]) -> Any:
    outcome = last_tool_result(request)
    if isinstance(outcome, dict) and "payee" in outcome:
        return text(
            f"Paid {outcome['amount']} EUR to {outcome['payee']}; {outcome['balance']} EUR left."
        )
    return text(f"I did not pay: {outcome}")


# The scripted model of each request (a real model decides for itself).
ASK_SCRIPT: list[TurnLike] = [tool_call("get_balance"), tool_call("pay", payee="Ada", amount=120)]
DECIDE_SCRIPT: list[TurnLike] = [_after_payment]


def signing_key(state_file: Path) -> bytes:
    """The secret that signs saved states: `TOOLREG_STATE_KEY`, or a key file made once."""
    given = os.environ.get("TOOLREG_STATE_KEY")
    if given:
        return given.encode("utf-8")
    key_file = state_file.with_name(state_file.name + ".key")
    try:
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return key_file.read_bytes()
    key = secrets.token_bytes(32)
    with os.fdopen(descriptor, "wb") as out:
        out.write(key)
    return key


def ask(prompt: str, client: Any, model: str, state_file: Path = STATE_FILE) -> Reply:
    """Request 1: run the turn; when a payment waits for approval, save the signed state."""
    chat = Conversation(client, model, registry=registry, system=SYSTEM, confirm="defer")
    reply = chat.send(prompt)
    if reply.stop_reason == "approval_required":
        state = chat.export_state(key=signing_key(state_file))
        state_file.write_text(json.dumps(state), encoding="utf-8")
    return reply


def decide(decisions: dict[str, Any], client: Any, state_file: Path = STATE_FILE) -> Reply:
    """Request 2: claim the saved state (atomically: a second request finds no file), then
    rebuild the conversation and resume it with the decisions."""
    claimed = state_file.with_name(state_file.name + ".claimed")
    os.replace(state_file, claimed)  # FileNotFoundError: nothing waits (or it was taken)
    state = json.loads(claimed.read_text(encoding="utf-8"))
    key = signing_key(state_file)
    chat = Conversation.from_state(state, client, registry=registry, key=key)  # verified
    reply = chat.resume(decisions)
    claimed.unlink()
    if reply.stop_reason == "approval_required":  # the model asked for another payment
        state_file.write_text(json.dumps(chat.export_state(key=key)), encoding="utf-8")
    return reply


def _decision(word: str) -> Any:
    if word.lower() in ("y", "yes"):
        return True
    if word.lower() in ("n", "no"):
        return False
    return word  # declined, and the model is told why


def _request(script: Sequence[TurnLike], handle: Any) -> Reply:
    """Run one request against the configured endpoint, or a scripted model of its own."""
    base_url, model = os.environ.get("OPENAI_BASE_URL"), os.environ.get("TOOLREG_MODEL")
    if base_url and model:
        import openai

        api_key = os.environ.get("OPENAI_API_KEY", "none")
        reply: Reply = handle(openai.OpenAI(base_url=base_url, api_key=api_key), model)
        return reply
    with ScriptedServer(script) as server:
        return handle(server.client(), server.model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, default=STATE_FILE, help="the saved state")
    sub = parser.add_subparsers(dest="request", required=True)
    sub.add_parser("ask", help="request 1: the user asks").add_argument("prompt")
    decide_parser = sub.add_parser("decide", help="request 2: the account holder decides")
    decide_parser.add_argument("call_id")
    decide_parser.add_argument("decision", help="yes, no, or a reason for declining")
    args = parser.parse_args(argv)
    if args.request == "ask":
        reply = _request(
            ASK_SCRIPT, lambda client, model: ask(args.prompt, client, model, args.state)
        )
    else:
        decisions = {args.call_id: _decision(args.decision)}
        try:
            reply = _request(DECIDE_SCRIPT, lambda client, _: decide(decisions, client, args.state))
        except FileNotFoundError:
            print("nothing waits for approval (already decided?)", file=sys.stderr)
            return 1
    for pending in reply.pending:
        shown = json.dumps(pending.arguments, ensure_ascii=False)
        print(f"waiting for approval: {pending.call_id} {pending.tool_name}({shown})")
    if reply.pending:
        print(f"state saved to {args.state}")
    else:
        print(f"assistant: {reply.text}")
    return 0


DEMO = Demo(
    registry=registry,
    system=SYSTEM,
    prompts=["Pay 120 EUR to Ada for the concert tickets."],
    script=[*ASK_SCRIPT, *DECIDE_SCRIPT],
)

if __name__ == "__main__":
    if len(sys.argv) > 1:
        raise SystemExit(main())
    run_demo(DEMO)
