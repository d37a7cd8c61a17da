"""Rich results: a tool returns an image, a file, or a list mixing them with text."""

import struct
import zlib

from toolreg import File, Image, ToolRegistry
from toolreg.formats import anthropic, openai, responses


def red_dot() -> bytes:
    """A 1x1 red PNG (a chart library's output, in a real tool)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


registry = ToolRegistry()


@registry.register_tool(read_only=True)
def sales_report(month: str) -> list[str | Image | File]:
    """The sales report of a month: a summary, its chart and the figures as CSV."""
    chart = Image(red_dot())  # the media type is read from the bytes: image/png
    figures = File("region,total\nnorth,120\n", "text/csv", name="figures.csv")
    return [f"Sales for {month}: 120 units.", chart, figures]


result = registry.dispatch_tool("sales_report", {"month": "May"})
assert result.parts[1] == Image(red_dot())  # the parts, as the tool returned them
print(result.content)  # the text fallback: what a text-only API reads
# Sales for May: 120 units.
# [image left out: image/png, 69 bytes]
# [file figures.csv (text/csv):]
# region,total
# north,120

# Each format writes the parts its API takes in a tool result, and text for the others.
blocks = anthropic.observation(result)["content"]
assert [block["type"] for block in blocks] == ["text", "image", "text"]
items = responses.observation(result)["output"]
assert [item["type"] for item in items] == ["input_text", "input_image", "input_text"]
assert openai.observation(result)["content"] == result.content  # chat completions: text

try:
    Image(red_dot(), "image/jpeg")  # bytes that are not what they say: refused at once
except ValueError as exc:
    print(exc)  # ... the bytes are not image/jpeg (they are image/png); pass media_type='image/png'
