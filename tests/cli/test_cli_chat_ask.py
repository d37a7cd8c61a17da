"""`toolreg chat` asks a tool's question (`ctx.ask`) at the terminal, field by field, and
resumes the turn with the answer; an answer that does not fit is asked again."""

from __future__ import annotations

from pathlib import Path

from test_cli import toolreg

from toolreg.testing import ScriptedServer, last_tool_result, text, tool_call

TARGET = '''
from toolreg import ToolContext, ToolRegistry

registry = ToolRegistry()
FORM = {
    "type": "object",
    "properties": {
        "night": {"type": "string"},
        "guests": {"type": "integer", "minimum": 1},
        "breakfast": {"type": "boolean"},
        "note": {"type": "string"},
    },
    "required": ["night", "guests"],
}


@registry.register_tool
def book(room: str, ctx: ToolContext[None]) -> str:
    """Book a room."""
    answer = ctx.ask(f"Which night for room {room}?", FORM)
    return f"{answer.action} {answer.data}"
'''


def run_chat(tmp_path: Path, terminal: str) -> str:
    target = tmp_path / "hotel.py"
    target.write_text(TARGET, encoding="utf-8")

    def reply(request: dict[str, object]) -> object:
        return text(f"told: {last_tool_result(request)}")

    with ScriptedServer([tool_call("book", room="12"), reply]) as server:
        done = toolreg(
            "chat", str(target), "--model", "m", "--base-url", server.base_url, stdin=terminal
        )
        server.assert_all_consumed()
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_chat_asks_the_form_field_by_field(tmp_path: Path) -> None:
    out = run_chat(tmp_path, "book 12\ny\n2026-12-24\n3\nyes\n\n")
    assert "  ?? book asks: Which night for room 12?" in out
    assert "  ?? guests (integer): " in out
    assert "  ?? note (string, optional): " in out
    expected = "accept {'night': '2026-12-24', 'guests': 3, 'breakfast': True}"
    assert f"assistant> told: {expected}" in out


def test_chat_declines_and_asks_again_after_an_answer_that_does_not_fit(tmp_path: Path) -> None:
    assert "assistant> told: decline None" in run_chat(tmp_path, "book 12\nn\n")
    out = run_chat(tmp_path, "book 12\ny\n2026-12-24\n0\n\n\ny\n2026-12-24\n2\nno\nlate\n")
    assert (
        "  !! resume(): the answer for 'call_1' does not fit its question's form ('guests')" in out
    )
    expected = "accept {'night': '2026-12-24', 'guests': 2, 'breakfast': False, 'note': 'late'}"
    assert f"assistant> told: {expected}" in out
