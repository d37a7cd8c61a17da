"""Rich results over MCP: `toolreg serve` sends images, audio and files as MCP content
blocks (read by the official SDK's client), a mount keeps a server's blocks as parts, and a
server that lies about its media (mislabelled bytes, no base64, floods) gets a marker in
place of each bad part while the call answers the rest."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from _conformance_tools import png, wav
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from test_mcp_untrusted import yes

import toolreg.mcp.results
from toolreg import Audio, File, Image, ToolError, ToolRegistry, combined, prefixed
from toolreg.content import MAX_PARTS, SIGNATURES, Media
from toolreg.mcp import HttpServer, Mount, asgi_app, mount

PDF = b"%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 32


def rich_tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(read_only=True)
    def chart(city: str) -> Image:
        """A chart of a city's weather."""
        return Image(png())

    @registry.register_tool(read_only=True)
    def jingle() -> Audio:
        """A short sound."""
        return Audio(wav())

    @registry.register_tool(read_only=True)
    def report(month: str) -> list[str | Image | File]:
        """A month's report: a caption, a chart, the PDF and the figures as CSV."""
        return [
            f"Report for {month}:",
            Image(png()),
            File(PDF, name="report.pdf"),
            File("city,temp\nOslo,3\n", "text/csv", uri="test://figures.csv"),
        ]

    @registry.register_tool(read_only=True)
    def broken() -> Image:
        """Always fails."""
        raise ToolError("No chart today.")

    return registry


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with HttpServer(asgi_app(rich_tools())) as server:
        yield server.url


def call(url: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def run() -> types.CallToolResult:
        async with Client(url) as session:
            return await session.call_tool(name, arguments)

    return asyncio.run(run())


def test_serve_sends_images_audio_and_files_as_mcp_content(served: str) -> None:
    image = call(served, "chart", {"city": "Oslo"})
    assert not image.is_error
    [block] = image.content
    assert isinstance(block, types.ImageContent)
    assert (base64.b64decode(block.data), block.mime_type) == (png(), "image/png")

    sound = call(served, "jingle", {}).content[0]
    assert isinstance(sound, types.AudioContent)
    assert (base64.b64decode(sound.data), sound.mime_type) == (wav(), "audio/wav")

    mixed = call(served, "report", {"month": "May"})
    assert [b.type for b in mixed.content] == ["text", "image", "resource", "resource"]
    caption, _, pdf, csv = mixed.content
    assert isinstance(caption, types.TextContent)
    assert caption.text == "Report for May:"
    assert isinstance(pdf, types.EmbeddedResource)
    assert isinstance(pdf.resource, types.BlobResourceContents)
    assert (pdf.resource.uri, pdf.resource.mime_type) == ("file:///report.pdf", "application/pdf")
    assert base64.b64decode(pdf.resource.blob) == PDF
    assert isinstance(csv, types.EmbeddedResource)
    assert isinstance(csv.resource, types.TextResourceContents)
    assert (csv.resource.uri, csv.resource.text) == ("test://figures.csv", "city,temp\nOslo,3\n")
    assert mixed.structured_content is None


def test_a_failure_is_text_only(served: str) -> None:
    failed = call(served, "broken", {})
    assert failed.is_error
    assert [(b.type, getattr(b, "text", None)) for b in failed.content] == [
        ("text", "No chart today.")
    ]


def test_a_mount_keeps_a_servers_media_as_parts(served: str) -> None:
    registry = ToolRegistry()
    with mount(registry, served, trust_annotations=True):
        chart = registry.dispatch_tool("chart", {"city": "Oslo"})
        report = registry.dispatch_tool("report", {"month": "May"})
        jingle = registry.dispatch_tool("jingle", {})
    assert chart.ok
    assert chart.parts == (Image(png()),)
    assert chart.content == "[image left out: image/png, 69 bytes]"
    assert jingle.parts == (Audio(wav()),)
    caption, image, pdf, csv = report.parts
    assert (caption, image) == ("Report for May:", Image(png()))
    assert isinstance(pdf, File)
    assert (pdf.data, pdf.media_type) == (PDF, "application/pdf")
    assert pdf.uri == "file:///report.pdf"
    assert pdf.filename() == "report.pdf"
    assert isinstance(csv, File)
    assert csv.data == "city,temp\nOslo,3\n"
    assert report.content == (
        "Report for May:\n[image left out: image/png, 69 bytes]\n"
        "[file left out: file:///report.pdf, application/pdf, 36 bytes]\n"
        "[file test://figures.csv (text/csv):]\ncity,temp\nOslo,3\n"
    )
    assert report.value.parts == report.parts  # the RemoteResult keeps them too


def test_a_reexported_mount_passes_the_parts_on(served: str) -> None:
    with Mount(served, trust_annotations=True) as upstream:
        tools = combined(prefixed(upstream, "up"))
        with HttpServer(asgi_app(tools)) as server:
            mixed = call(server.url, "up_report", {"month": "June"})
    assert [b.type for b in mixed.content] == ["text", "image", "resource", "resource"]
    image = mixed.content[1]
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data) == png()


# -- a server that lies about its media ---------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


LIES: dict[str, list[Any]] = {
    # a JPEG said to be a PNG: the one part is left out, the text stays
    "mislabelled": [
        types.TextContent(type="text", text="Here it is:"),
        types.ImageContent(type="image", data=b64(JPEG), mime_type="image/png"),
        types.ImageContent(type="image", data=b64(png()), mime_type="image/png"),
    ],
    "not_base64": [
        types.ImageContent(type="image", data="%%% not base64 %%%", mime_type="image/png")
    ],
    "bad_type": [types.ImageContent(type="image", data=b64(png()), mime_type="png please")],
    "other_kind": [types.AudioContent(type="audio", data=b64(png()), mime_type="image/png")],
    "html_as_image": [
        types.ImageContent(
            type="image", data=b64(b"<html><script>x</script>"), mime_type="image/png"
        )
    ],
    "flood": [types.ImageContent(type="image", data=b64(png()), mime_type="image/png")] * 150,
    "big": [
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="test://big.bin", mime_type="application/octet-stream", blob=b64(b"x" * 5000)
            ),
        )
    ],
    "link": [
        types.ResourceLink(type="resource_link", uri="test://elsewhere", name="elsewhere"),
        types.ImageContent(type="image", data=b64(png()), mime_type="image/png"),
    ],
}


def liar() -> Server[Any]:
    listed = [types.Tool(name=name, input_schema={"type": "object"}) for name in LIES]
    listed.append(types.Tool(name="failing", input_schema={"type": "object"}))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "failing":  # a failure whose content holds an image
            image = types.ImageContent(type="image", data=b64(png()), mime_type="image/png")
            text = types.TextContent(type="text", text="Rendering failed:")
            return types.CallToolResult(content=[text, image], is_error=True)
        return types.CallToolResult(content=LIES[params.name])

    return Server("liar", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture(scope="module")
def liar_url() -> Iterator[str]:
    with HttpServer(liar().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def test_mislabelled_bytes_are_left_out_and_the_rest_kept(
    liar_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()
    with caplog.at_level(logging.WARNING, "toolreg.mcp"), mount(registry, liar_url):
        result = registry.dispatch_tool("mislabelled", {}, confirm=yes)
    assert result.ok
    assert result.parts == (
        "Here it is:",
        "[image left out (image/png): its data is not the image/png it says it is]",
        Image(png()),
    )
    assert "with 1 image, audio or file part(s) left out" in caplog.text


@pytest.mark.parametrize(
    ("tool", "marker"),
    [
        ("not_base64", "[image left out (image/png): its data is not base64]"),
        ("bad_type", "[image left out: its media type is malformed]"),
        ("other_kind", "[audio left out (image/png): image/png is not an audio type]"),
        (
            "html_as_image",
            "[image left out (image/png): its data is not the image/png it says it is]",
        ),
    ],
)
def test_a_result_whose_every_part_is_refused_is_its_markers(
    liar_url: str, tool: str, marker: str
) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url):
        result = registry.dispatch_tool(tool, {}, confirm=yes)
    assert (result.ok, result.content, result.parts) == (True, marker, ())
    assert "script" not in result.content
    assert "%%%" not in result.content


def test_a_flood_of_blocks_is_bounded(liar_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url):
        result = registry.dispatch_tool("flood", {}, confirm=yes)
    assert result.ok
    assert len(result.parts) == 100
    assert result.parts[:99] == (Image(png()),) * 99
    assert result.parts[99] == "[51 more content blocks left out: at most 100 in one result]"


def test_remote_media_past_the_limit_are_left_out(
    liar_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolreg.mcp.results, "MAX_REMOTE_BYTES", 1000)
    registry = ToolRegistry()
    with mount(registry, liar_url):
        big = registry.dispatch_tool("big", {}, confirm=yes)
        flood = registry.dispatch_tool("flood", {}, confirm=yes)
    assert (
        big.content
        == "[file left out (application/octet-stream): its data is over the 1000 bytes allowed]"
    )
    assert flood.parts.count(Image(png())) == 1000 // 69  # then each is left out with a marker
    assert flood.parts[-2] == (
        "[image left out: image/png, 69 bytes; over the 1000 bytes a result may hold]"
    )


def test_the_registrys_byte_limit_applies_to_mounted_results(liar_url: str) -> None:
    registry = ToolRegistry(max_result_bytes=100)
    with mount(registry, liar_url):
        result = registry.dispatch_tool("flood", {}, confirm=yes)
    assert result.parts[0] == Image(png())
    assert result.parts[1] == (
        "[image left out: image/png, 69 bytes; over the 100 bytes a result may hold]"
    )


def test_a_resource_link_stays_text_beside_the_media(liar_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url):
        result = registry.dispatch_tool("link", {}, confirm=yes)
    link, image = result.parts
    assert isinstance(link, str)
    assert '"uri": "test://elsewhere"' in link
    assert image == Image(png())


def test_a_failure_with_media_says_so_without_their_data(liar_url: str) -> None:
    registry = ToolRegistry(errors="full")
    with mount(registry, liar_url):
        result = registry.dispatch_tool("failing", {}, confirm=yes)
    assert (result.ok, result.parts) == (False, ())
    assert result.content == "Rendering failed:\n[image left out]"


# -- property: whatever blocks a server sends, the parts are bounded and checked ------------

_data = st.one_of(
    st.sampled_from([png(), wav(), JPEG, PDF, b""]).map(b64),
    st.binary(max_size=40).map(b64),
    st.text(max_size=20),
)
_types = st.one_of(
    st.sampled_from(["image/png", "image/jpeg", "audio/wav", "application/pdf"]),
    st.text(max_size=20),
)
_blocks = st.one_of(
    st.builds(lambda t: types.TextContent(type="text", text=t), st.text(max_size=50)),
    st.builds(lambda d, m: types.ImageContent(type="image", data=d, mime_type=m), _data, _types),
    st.builds(lambda d, m: types.AudioContent(type="audio", data=d, mime_type=m), _data, _types),
    st.builds(
        lambda d, m: types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="test://x", mime_type=m, blob=d),
        ),
        _data,
        st.one_of(st.none(), _types),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_blocks, max_size=120))
def test_remote_parts_are_bounded_and_every_media_part_is_what_it_says(blocks: list[Any]) -> None:
    found = toolreg.mcp.results.remote_parts(blocks)
    if found is None:
        assert all(isinstance(b, types.TextContent) for b in blocks)
        return
    parts, refused = found
    assert len(parts) <= MAX_PARTS
    media = [p for p in parts if isinstance(p, Media)]
    assert sum(p.size for p in media) <= toolreg.mcp.results.MAX_REMOTE_BYTES
    for part in media:
        check = SIGNATURES.get(part.essence)
        assert check is None or isinstance(part.data, str) or check(part.data)
    assert refused <= len(blocks)
