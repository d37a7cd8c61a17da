"""A tool asks the user (ctx.ask): the turn pauses, the answer resumes it, elsewhere."""

import json
from dataclasses import dataclass

from toolreg import Conversation, ToolContext, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

hotel = ToolRegistry()
runs = []


@dataclass
class Stay:
    night: str  # YYYY-MM-DD
    guests: int = 2


@hotel.register_tool
def book(room: str, ctx: ToolContext[dict]) -> str:
    """Book a hotel room. Asks the guest which night."""
    runs.append(room)  # it runs again from the start once the answer comes
    answer = ctx.ask(f"Which night would you like room {room}?", Stay)
    if not answer.accepted:
        return f"Not booked: the guest chose to {answer.action}."
    stay = answer.value  # a Stay, checked against its form
    return f"Booked room {room} on {stay.night} for {stay.guests}."


with ScriptedServer([tool_call("book", room="12"), text("Room 12 is yours.")]) as server:
    # request 1: the tool asks; the turn stops and its state goes to storage
    chat = Conversation(server.client(), "any-model", registry=hotel, context={})
    reply = chat.send("Book room 12, please.")
    (pending,) = reply.pending
    print(reply.stop_reason, pending.question)
    # input_required Which night would you like room 12?
    print(pending.schema["required"])  # ['night']: a flat form, from the dataclass
    saved = json.dumps(chat.export_state())

    # request 2, perhaps in another process: the guest filled in the form
    chat = Conversation.from_state(json.loads(saved), server.client(), registry=hotel, context={})
    reply = chat.resume({pending.call_id: {"night": "2026-12-24", "guests": 3}})
    print(reply.tool_results[0].content)  # Booked room 12 on 2026-12-24 for 3.
assert reply.tool_results[0].content == "Booked room 12 on 2026-12-24 for 3."
assert runs == ["12", "12"]
