"""Rich results in a conversation, through the real SDKs against `ScriptedServer` (which
refuses, like each API, media a tool result may not hold there): Anthropic gets image and
document blocks in its `tool_result`, the Responses API `input_image` / `input_file` parts
in its `function_call_output`, chat completions the text fallback that says what was left
out. What the server received is checked, not what toolreg meant to send."""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import openai
import pytest
from _conformance_tools import png, wav

from toolreg import Audio, Conversation, ConversationStateError, File, Image, ToolRegistry
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls

MODEL = "m"
PDF = b"%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n"
PNG64 = base64.b64encode(png()).decode()
PDF64 = base64.b64encode(PDF).decode()
MARKER = "[image left out: image/png, 69 bytes]"


def tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(read_only=True)
    def chart(city: str) -> Image:
        """A chart of a city's weather."""
        return Image(png())

    @registry.register_tool(read_only=True)
    def report(month: str) -> list[str | Image | Audio | File]:
        """A month's report."""
        return [
            f"Report for {month}:",
            Image(png()),
            File(PDF, name="report.pdf"),
            Audio(wav()),
            File("a,b\n1,2\n", "text/csv", name="figures.csv"),
        ]

    @registry.register_tool(read_only=True, return_direct=True)
    def snapshot() -> list[str | Image]:
        """A picture, shown to the person as it is."""
        return ["Here:", Image(png())]

    @registry.register_tool(destructive=True)
    def crop(size: int) -> Image:
        """Crop the chart to a size."""
        return Image(png())

    @registry.register_tool(destructive=True)
    def delete(chart: str) -> str:
        """Delete a chart."""
        return f"deleted {chart}"

    return registry


def last_tool_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The last tool answer of a request: a chat `tool` message, a `function_call_output`
    item, or an Anthropic `tool_result` block."""
    entries = body.get("messages") or body.get("input")
    for entry in reversed(entries):
        if entry.get("role") == "tool" or entry.get("type") == "function_call_output":
            return dict(entry)
        content = entry.get("content")
        if isinstance(content, list):
            results = [b for b in content if b.get("type") == "tool_result"]
            if results:
                return dict(results[-1])
    raise AssertionError("no tool answer")


REPORT_TEXT = (
    "Report for May:\n"
    f"{MARKER}\n"
    "[file left out: report.pdf, application/pdf, 36 bytes]\n"
    "[audio left out: audio/wav, 844 bytes]\n"
    "[file figures.csv (text/csv):]\na,b\n1,2\n"
)


def test_anthropic_gets_image_and_document_blocks_in_its_tool_result() -> None:
    with ScriptedServer(
        [tool_call("chart", city="Oslo"), tool_call("report", month="May"), text("Seen.")]
    ) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=tools())
        reply = chat.send("Show me")
        server.assert_all_consumed()
        image = last_tool_answer(server.requests[1])
        report = last_tool_answer(server.requests[2])
    assert reply.text == "Seen."
    assert image["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}}
    ]
    assert image["is_error"] is False
    assert report["content"] == [
        {"type": "text", "text": "Report for May:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
            "title": "report.pdf",
        },
        {
            "type": "text",
            "text": "[audio left out: audio/wav, 844 bytes]\n"
            "[file figures.csv (text/csv):]\na,b\n1,2\n",
        },
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_responses_gets_input_image_and_input_file_parts(stream: bool) -> None:
    with ScriptedServer([tool_call("report", month="May"), text("Seen.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=tools(), dialect="responses", stream=stream
        )
        reply = chat.send("Show me")
        server.assert_all_consumed()
        answer = last_tool_answer(server.requests[1])
    assert reply.text == "Seen."
    assert answer["output"] == [
        {"type": "input_text", "text": "Report for May:"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}"},
        {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{PDF64}",
            "filename": "report.pdf",
        },
        {
            "type": "input_text",
            "text": "[audio left out: audio/wav, 844 bytes]\n"
            "[file figures.csv (text/csv):]\na,b\n1,2\n",
        },
    ]


def test_chat_completions_gets_the_text_that_says_what_was_left_out() -> None:
    with ScriptedServer([tool_call("report", month="May"), text("Seen.")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools())
        chat.send("Show me")
        server.assert_all_consumed()
        body = server.requests[1]
    assert last_tool_answer(body)["content"] == REPORT_TEXT
    # no user message with the image after the tool message: the person did not send it
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]


def test_the_result_keeps_the_parts_and_its_text() -> None:
    with ScriptedServer([tool_call("report", month="May"), text("Seen.")]) as server:
        reply = Conversation(server.client(), MODEL, registry=tools()).send("Show me")
    [result] = reply.tool_results
    assert result.content == REPORT_TEXT
    assert result.parts[:2] == ("Report for May:", Image(png()))


def test_return_direct_answers_with_the_text() -> None:
    with ScriptedServer([tool_call("snapshot")]) as server:
        reply = Conversation(server.anthropic_client(), MODEL, registry=tools()).send("Snap")
    assert (reply.stop_reason, reply.text) == ("return_direct", f"Here:\n{MARKER}")


def test_a_person_s_edit_of_the_arguments_goes_before_the_image() -> None:
    with ScriptedServer([tool_call("crop", size=9), text("Cropped.")]) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=tools(), confirm="defer")
        paused = chat.send("Crop it")
        done = chat.resume({paused.pending[0].call_id: {"arguments": {"size": 2}}})
        answer = last_tool_answer(server.requests[1])
    note = '(The user changed the arguments to {"size": 2} before it ran.)'
    assert done.tool_results[0].parts == (note, Image(png()))
    assert answer["content"] == [
        {"type": "text", "text": note},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
    ]


def test_an_output_guardrail_that_withholds_a_rich_result_withholds_its_media() -> None:
    with ScriptedServer([tool_call("chart", city="Oslo"), text("Hidden.")]) as server:
        chat = Conversation(
            server.anthropic_client(),
            MODEL,
            registry=tools(),
            output_guardrails=lambda event: "Charts are private." if event.result.parts else None,
        )
        chat.send("Show me")
        answer = last_tool_answer(server.requests[1])
    assert answer["content"] == "Charts are private."
    assert answer["is_error"] is True


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_a_rich_result_of_a_paused_round_survives_the_saved_state(dialect: str) -> None:
    round_one = tool_calls(call("chart", city="Oslo"), call("delete", chart="old"))
    with ScriptedServer([round_one, text("Done.")]) as server:
        client = server.anthropic_client() if dialect == "anthropic" else server.client()
        options: dict[str, Any] = {} if dialect == "anthropic" else {"dialect": dialect}
        chat = Conversation(client, MODEL, registry=tools(), confirm="defer", **options)
        paused = chat.send("Chart Oslo, then delete old")
        assert paused.stop_reason == "approval_required"
        saved = json.loads(json.dumps(chat.export_state()))
        later = Conversation.from_state(saved, client, registry=tools())
        done = later.resume({paused.pending[0].call_id: True})
        server.assert_all_consumed()
        body = server.requests[1]
    assert done.text == "Done."
    assert done.tool_results[0].parts == (Image(png()),)
    sent = json.dumps(body)
    if dialect == "tools":  # chat completions: the text, as before the pause
        assert MARKER in sent
        assert PNG64 not in sent
    else:
        assert PNG64 in sent  # the image itself went to the model, after the resume


def test_a_saved_state_whose_parts_were_edited_is_refused() -> None:
    round_one = tool_calls(call("chart", city="Oslo"), call("delete", chart="old"))
    with ScriptedServer([round_one]) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=tools(), confirm="defer")
        chat.send("Chart Oslo, then delete old")
        saved = json.dumps(chat.export_state())
        assert '"parts": [{"kind": "image", "media_type": "image/png", "data": ' in saved
        for edit, why in [
            (base64.b64encode(b"<svg/>").decode(), "its data is not the image/png it says it is"),
            ("!!", "its data is not base64"),
        ]:
            swapped = json.loads(saved.replace(PNG64, edit))
            with pytest.raises(ConversationStateError, match=why):
                Conversation.from_state(swapped, server.anthropic_client(), registry=tools())


# -- ScriptedServer refuses what each API refuses -------------------------------------------

CALLED = {"id": "c1", "type": "function", "function": {"name": "chart", "arguments": "{}"}}


def test_scripted_server_refuses_an_image_in_a_chat_tool_message() -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}
    messages: Any = [
        {"role": "user", "content": "Show me"},
        {"role": "assistant", "content": None, "tool_calls": [CALLED]},
        {"role": "tool", "tool_call_id": "c1", "content": [image]},
    ]
    with ScriptedServer([text("never")]) as server:
        client = server.client()
        with pytest.raises(openai.BadRequestError, match="only allowed in user messages"):
            client.chat.completions.create(model=MODEL, messages=messages)


def test_scripted_server_refuses_a_mislabelled_image_in_a_tool_result() -> None:
    jpeg64 = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 16).decode()
    source = {"type": "base64", "media_type": "image/png", "data": jpeg64}
    messages: Any = [
        {"role": "user", "content": "Show me"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "chart", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "image", "source": source}],
                }
            ],
        },
    ]
    with (
        ScriptedServer([text("never")]) as server,
        pytest.raises(anthropic.BadRequestError, match="does not match the provided media type"),
    ):
        server.anthropic_client().messages.create(model=MODEL, max_tokens=10, messages=messages)


def test_scripted_server_refuses_an_image_type_the_responses_api_does_not_take() -> None:
    items: Any = [
        {"role": "user", "content": "Show me"},
        {"type": "function_call", "call_id": "c1", "name": "chart", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_image", "image_url": "data:image/bmp;base64,Qk0="}],
        },
    ]
    with ScriptedServer([text("never")]) as server:
        client = server.client()
        with pytest.raises(openai.BadRequestError, match="'image/bmp' is not supported"):
            client.responses.create(model=MODEL, input=items, store=False)
