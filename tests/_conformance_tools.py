"""The tools the official MCP conformance suite's server scenarios call
(`@modelcontextprotocol/conformance`), written as any toolreg user would: typed functions
in a registry, served by `toolreg serve` (see tests/mcp/test_mcp_conformance.py). Only what a
tools-only server can do: text and rich results (an image, a sound, an embedded file, a
mix), errors, progress and log lines, a given schema."""

from __future__ import annotations

import asyncio
import struct
import zlib
from typing import Any

from toolreg import Audio, File, Image, ToolContext, ToolError, ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def test_simple_text() -> str:
    """Answer a fixed text (scenario tools-call-simple-text)."""
    return "This is a simple text response for testing."


@registry.register_tool
def test_error_handling() -> str:
    """Always fail (scenario tools-call-error)."""
    raise ToolError("This tool intentionally returns an error for testing")


@registry.register_tool
async def test_tool_with_logging(ctx: ToolContext[Any]) -> str:
    """Send three log lines at info level while running (scenario tools-call-with-logging)."""
    ctx.log("Tool execution started")
    await asyncio.sleep(0.05)
    ctx.log("Tool processing data")
    await asyncio.sleep(0.05)
    ctx.log("Tool execution completed")
    return "Tool with logging executed successfully"


@registry.register_tool
async def test_tool_with_progress(ctx: ToolContext[Any]) -> str:
    """Report progress 0, 50 and 100 of 100 (scenario tools-call-with-progress)."""
    for done in (0, 50, 100):
        ctx.report_progress(done, 100)
        if done < 100:
            await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


def _echo(**arguments: Any) -> str:
    return f"received {sorted(arguments)}"


registry.register_schema(
    "json_schema_2020_12_tool",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
    _echo,
    description="Tool with JSON Schema 2020-12 features (scenario json-schema-2020-12).",
)


def png() -> bytes:
    """A 1x1 red PNG, made here (signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8 bits, RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # one row: no filter, red
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def wav() -> bytes:
    """A tenth of a second of silence: 8 kHz, 8-bit mono WAV."""
    samples = b"\x80" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


@registry.register_tool
def test_image_content() -> Image:
    """Answer a 1x1 red PNG (scenario tools-call-image)."""
    return Image(png())


@registry.register_tool
def test_audio_content() -> Audio:
    """Answer a short WAV sound (scenario tools-call-audio)."""
    return Audio(wav())


@registry.register_tool
def test_embedded_resource() -> File:
    """Answer a text file as an embedded resource (scenario tools-call-embedded-resource)."""
    return File("This is an embedded resource content.", uri="test://embedded-resource")


@registry.register_tool
def test_multiple_content_types() -> list[str | Image | File]:
    """Answer text, an image and a JSON file (scenario tools-call-mixed-content)."""
    data = File(
        '{"test":"data","value":123}', "application/json", uri="test://mixed-content-resource"
    )
    return ["Multiple content types test:", Image(png()), data]
