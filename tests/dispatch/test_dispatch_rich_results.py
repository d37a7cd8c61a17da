"""Rich results at dispatch: a tool returns `Image`, `Audio`, `File` or a list mixing them
with text; `ToolResult.parts` holds them, bounded, and `content` the text that says what
was left out. Plain results stay exactly what they were."""

from __future__ import annotations

import base64
import copy
import pickle
from typing import Any

import pytest
from _conformance_tools import png, wav
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg import Audio, File, Image, ToolRegistry, UsageError
from toolreg.content import (
    MAX_PARTS,
    SIGNATURES,
    bounded,
    fallback_text,
    from_wire,
    parts_json,
    read_parts_json,
)
from toolreg.formats import anthropic, chatglm3, functions, gemini, mcp, openai, responses

PDF = b"%PDF-1.7\n%%EOF\n"
JPEG = b"\xff\xd8\xff\xdb" + b"\x00" * 20
GIF = b"GIF89a" + b"\x00" * 10
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8
MP3 = b"ID3\x04\x00" + b"\x00" * 10


def registry(**options: Any) -> ToolRegistry:
    reg = ToolRegistry(**options)

    @reg.register_tool
    def picture() -> Image:
        """A picture."""
        return Image(png())

    @reg.register_tool
    def mixed() -> list[Any]:
        """Text, a picture, a sound, a file, and a record."""
        return ["Caption", Image(png()), Audio(wav()), File(PDF, name="a.pdf"), {"n": 1}]

    @reg.register_tool
    def words() -> list[str]:
        """A plain list."""
        return ["a", "b"]

    @reg.register_tool
    def pair() -> tuple[str, Image]:
        """A tuple."""
        return ("Here", Image(png()))

    @reg.register_tool(max_result_bytes=100)
    def album() -> list[Image]:
        """Three pictures, over its own limit after the first."""
        return [Image(png())] * 3

    @reg.register_tool
    def many() -> list[Image]:
        """More parts than a result holds."""
        return [Image(png())] * 150

    @reg.register_tool
    def unencodable() -> list[Any]:
        """A picture beside something that is no JSON."""
        return [Image(png()), object()]

    @reg.register_tool
    def mislabelled() -> Image:
        """A JPEG said to be a PNG: the tool's own mistake."""
        return Image(JPEG, "image/png")

    @reg.register_tool(result_filter=lambda parts: [p for p in parts if isinstance(p, str)])
    def filtered() -> list[Any]:
        """The result filter drops the picture."""
        return ["only text", Image(png())]

    return reg


def test_a_plain_list_stays_json_and_has_no_parts() -> None:
    result = registry().dispatch_tool("words", {})
    assert (result.content, result.parts) == ('["a", "b"]', ())


def test_an_image_alone() -> None:
    result = registry().dispatch_tool("picture", {})
    assert result.ok
    assert result.parts == (Image(png()),)
    assert result.content == "[image left out: image/png, 69 bytes]"
    assert isinstance(result.value, Image)


def test_a_mixed_list_keeps_its_order_and_writes_other_values_as_json() -> None:
    result = registry().dispatch_tool("mixed", {})
    assert result.parts == (
        "Caption",
        Image(png()),
        Audio(wav()),
        File(PDF, name="a.pdf"),
        '{"n": 1}',
    )
    assert result.content == (
        "Caption\n[image left out: image/png, 69 bytes]\n[audio left out: audio/wav, 844 bytes]"
        '\n[file left out: a.pdf, application/pdf, 15 bytes]\n{"n": 1}'
    )
    assert registry().dispatch_tool("pair", {}).parts == ("Here", Image(png()))


def test_media_past_the_tools_byte_limit_are_left_out() -> None:
    result = registry().dispatch_tool("album", {})
    assert result.parts[0] == Image(png())
    assert (
        result.parts[1:]
        == ("[image left out: image/png, 69 bytes; over the 100 bytes a result may hold]",) * 2
    )


def test_the_registrys_byte_limit_and_none() -> None:
    assert registry(max_result_bytes=70).dispatch_tool("mixed", {}).parts[2] == (
        "[audio left out: audio/wav, 844 bytes; over the 70 bytes a result may hold]"
    )
    unbounded = registry(max_result_bytes=None).dispatch_tool("mixed", {})
    assert unbounded.parts[1:4] == (Image(png()), Audio(wav()), File(PDF, name="a.pdf"))
    with pytest.raises(UsageError, match="max_result_bytes=0"):
        ToolRegistry(max_result_bytes=0)


def test_a_tool_option_out_of_range_is_refused_at_registration() -> None:
    def picture() -> Image:
        """A picture."""
        return Image(png())

    with pytest.raises(Exception, match=r"max_result_bytes=-1 must be a positive whole number"):
        ToolRegistry().register_tool(max_result_bytes=-1)(picture)


def test_at_most_max_parts_with_a_marker() -> None:
    result = registry().dispatch_tool("many", {})
    assert len(result.parts) == MAX_PARTS
    assert result.parts[-1] == "[51 more parts left out: at most 100 in one result]"


def test_text_parts_are_cut_by_max_result_chars_together() -> None:
    reg = ToolRegistry(max_result_chars=10)

    @reg.register_tool
    def chatty() -> list[Any]:
        """Long text around a picture."""
        return ["abcdefgh", Image(png()), "ijklmnop"]

    parts = reg.dispatch_tool("chatty", {}).parts
    assert parts == ("abcdefgh", Image(png()), "ij\n[truncated: 6 of 8 characters cut]")


def test_an_item_that_is_no_json_fails_the_call_like_a_plain_result() -> None:
    result = registry().dispatch_tool("unencodable", {})
    assert (result.ok, result.error_kind) == (False, "execution_error")
    assert result.parts == ()
    assert "cannot be written as JSON" in result.content


def test_a_mislabelled_part_made_by_the_tool_is_its_failure() -> None:
    result = registry(errors="full").dispatch_tool("mislabelled", {})
    assert (result.ok, result.parts) == (False, ())
    assert result.content == (
        "Tool 'mislabelled' failed: UsageError: Image(data, media_type='image/png'): the bytes "
        "are not image/png (they are image/jpeg); pass media_type='image/jpeg'"
    )


def test_a_result_filter_sees_the_parts_first() -> None:
    result = registry().dispatch_tool("filtered", {})
    assert (result.content, result.parts) == ('["only text"]', ())


def test_async_tools_too() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    async def later() -> Image:
        """A picture, awaited."""
        return Image(png())

    import asyncio

    assert asyncio.run(reg.adispatch_tool("later", {})).parts == (Image(png()),)


# -- the part types --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "data", "media_type"),
    [
        (Image, png(), "image/png"),
        (Image, JPEG, "image/jpeg"),
        (Image, GIF, "image/gif"),
        (Image, WEBP, "image/webp"),
        (Audio, wav(), "audio/wav"),
        (Audio, MP3, "audio/mpeg"),
        (File, PDF, "application/pdf"),
        (File, b"\x00\x01", "application/octet-stream"),
        (File, "plain words", "text/plain"),
    ],
)
def test_the_media_type_is_read_from_the_bytes(make: Any, data: Any, media_type: str) -> None:
    assert make(data).media_type == media_type


def test_aliases_and_parameters() -> None:
    assert Image(JPEG, "IMAGE/JPG").media_type == "image/jpeg"
    assert Audio(wav(), "audio/x-wav").media_type == "audio/wav"
    text = File("x", "text/plain; charset=UTF-8")
    assert (text.media_type, text.essence) == ("text/plain; charset=utf-8", "text/plain")
    assert Image(b"<svg/>", "image/svg+xml").media_type == "image/svg+xml"  # no signature known


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image(b"hello"), "the bytes are none of image/png, image/jpeg"),
        (
            lambda: Image(png(), "audio/wav"),
            "an image has a media type image/..., not 'audio/wav'",
        ),
        (lambda: Image(png(), "image/jpeg"), r"not image/jpeg \(they are image/png\)"),
        (lambda: Image(b"", "image/png"), "data is empty"),
        (lambda: Image("text", "image/png"), "data must be bytes, not str"),
        (lambda: Audio(png(), "audio/wav"), "not audio/wav"),
        (lambda: File(PDF, "png"), "'png' is not a media type"),
        (lambda: File(b"x", name="../etc/passwd"), "without a path"),
        (lambda: File(b"x", uri="no scheme"), "a URI with a scheme"),
        (lambda: File(3), "data must be bytes or str, not int"),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_part_is_a_usage_error_that_says_the_fix(make: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make()


def test_parts_are_values() -> None:
    image = Image(png())
    assert image == Image(bytearray(png()))
    assert hash(image) == hash(Image(png()))
    assert image != Audio(wav())
    assert repr(image) == "Image(69 bytes, 'image/png')"
    assert repr(File(PDF, name="a.pdf")) == "File(15 bytes, 'application/pdf', name='a.pdf')"
    with pytest.raises(AttributeError, match="read-only"):
        image.data = b""  # type: ignore[misc]
    named = File(PDF, name="a.pdf", uri="s3://bucket/a.pdf")
    assert copy.deepcopy(named) == named
    assert pickle.loads(pickle.dumps(named)) == named
    assert named.location == "s3://bucket/a.pdf"
    assert File(PDF, name="my report.pdf").location == "file:///my%20report.pdf"
    assert File(PDF, uri="https://x.test/d/q3.pdf?v=2").filename() == "q3.pdf"
    assert File(PDF).filename() == "file.pdf"
    assert image.data_url() == "data:image/png;base64," + base64.b64encode(png()).decode()


# -- every format ----------------------------------------------------------------------------


def test_every_format_writes_a_failure_as_text_only() -> None:
    result = registry().dispatch_tool("mixed", {})
    failed = type(result)(result.tool_name, "c1", False, "boom", parts=result.parts)
    assert mcp.observation(failed)["content"] == [{"type": "text", "text": "boom"}]
    assert anthropic.observation(failed)["content"] == "boom"
    assert responses.observation(failed)["output"] == "boom"  # type: ignore[typeddict-item]
    assert gemini.observation(failed) == {
        "functionResponse": {"name": "mixed", "response": {"error": "boom"}}
    }


def test_text_only_formats_write_the_fallback() -> None:
    result = registry().dispatch_tool("mixed", {})
    assert openai.observation(result)["content"] == result.content
    assert functions.observation(result)["content"] == result.content
    assert chatglm3.observation(result)["content"] == result.content


def test_gemini_puts_images_and_pdfs_in_the_function_responses_parts() -> None:
    result = registry().dispatch_tool("mixed", {})
    encoded = gemini.observation(result)["functionResponse"]
    assert encoded["response"] == {
        "result": 'Caption\n[audio left out: audio/wav, 844 bytes]\n{"n": 1}'
    }
    assert encoded["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png()).decode()}},
        {"inlineData": {"mimeType": "application/pdf", "data": base64.b64encode(PDF).decode()}},
    ]


def test_an_image_type_an_api_does_not_take_is_text_there() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def vector() -> Image:
        """An SVG."""
        return Image(b"<svg/>", "image/svg+xml")

    result = reg.dispatch_tool("vector", {})
    marker = "[image left out: image/svg+xml, 6 bytes]"
    assert anthropic.observation(result)["content"] == [{"type": "text", "text": marker}]
    assert responses.observation(result)["output"] == [  # type: ignore[typeddict-item]
        {"type": "input_text", "text": marker}
    ]
    assert mcp.observation(result)["content"] == [
        {"type": "image", "data": base64.b64encode(b"<svg/>").decode(), "mimeType": "image/svg+xml"}
    ]


# -- properties: untrusted parts never raise, bounds always hold -----------------------------

media_types = st.one_of(
    st.sampled_from(["image/png", "image/jpeg", "audio/wav", "application/pdf", "text/plain"]),
    st.text(max_size=30),
    st.none(),
    st.integers(),
)
payloads = st.one_of(
    st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()),
    st.sampled_from([png(), wav(), PDF, JPEG]).map(lambda b: base64.b64encode(b).decode()),
    st.text(max_size=40),
    st.none(),
    st.integers(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["image", "audio", "file"]),
    data=payloads,
    media_type=media_types,
    text=st.one_of(st.none(), st.text(max_size=20)),
    name=st.one_of(st.none(), st.text(max_size=20)),
    uri=st.one_of(st.none(), st.text(max_size=20)),
)
def test_from_wire_never_raises_and_never_quotes_the_data(
    kind: str, data: Any, media_type: Any, text: Any, name: Any, uri: Any
) -> None:
    part = from_wire(kind, data, media_type, text=text, name=name, uri=uri, limit=100)
    if isinstance(part, str):
        assert part.startswith(f"[{kind} left out")
        assert len(part) < 200
        if isinstance(data, str) and len(data) > 8:
            assert data not in part
    else:
        assert part.kind == kind
        assert part.size <= 100
        check = SIGNATURES.get(part.essence)
        if isinstance(part.data, bytes) and check is not None:
            assert check(part.data)  # a part that says it is a PNG is one


part_values = st.one_of(
    st.text(max_size=30),
    st.sampled_from([Image(png()), Image(JPEG), Audio(wav()), File(PDF), File("text body")]),
)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(part_values, max_size=130),
    max_chars=st.one_of(st.none(), st.integers(1, 200)),
    max_bytes=st.one_of(st.none(), st.integers(1, 3000)),
)
def test_bounded_holds_its_limits_and_changes_nothing_when_run_again(
    parts: list[Any], max_chars: int | None, max_bytes: int | None
) -> None:
    kept = bounded(parts, max_chars, max_bytes)
    assert len(kept) <= MAX_PARTS
    media = [p for p in kept if not isinstance(p, str)]
    if max_bytes is not None:
        assert sum(p.size for p in media) <= max_bytes
    assert bounded(list(kept), None, None) == kept  # bounding again changes nothing more
    assert read_parts_json(parts_json(kept)) == kept
    assert isinstance(fallback_text(kept), str)
