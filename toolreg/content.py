"""Rich results: images, audio and files a tool returns, alone or mixed with text.

```python
@register_tool
def chart(city: str) -> Image:
    return Image(png_bytes)                          # the media type read from the bytes

@register_tool
def report(month: str) -> list[str | Image | File]:
    return ["The figures:", Image(png, "image/png"), File(pdf, name="report.pdf")]
```

A tool's result is rich when it is an `Image`, `Audio` or `File`, or a list (or tuple)
holding at least one of them; any other list stays JSON, as every plain result does. In a
rich list, a `str` is text, a part is itself, anything else is written as JSON text.
Dispatch bounds the parts (`bounded`) and puts them in `ToolResult.parts`;
`ToolResult.content` stays text: the text parts, with a marker for each image, sound or file
(`[image left out: image/png, 68 bytes]`), the text of a text file after a line naming it.
That text is what a model reads where its API takes no media in a tool result, and what
`dispatch_tool` callers, logs and `return_direct` replies see.

The bytes are checked against their media type where toolreg knows the type's signature
(`SIGNATURES`: PNG, JPEG, GIF, WebP, PDF, WAV, MP3, Ogg, FLAC): `Image(jpeg, "image/png")`
raises `UsageError` (a provider would refuse the whole request, and the history holding it
with it). Parts from outside (a mounted MCP server's result, a saved state) go through
`from_wire`, which never raises: a part that is malformed, mislabelled or too large becomes
a text marker saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Union

from .errors import UsageError

__all__ = [
    "MAX_PARTS",
    "MAX_RESULT_BYTES",
    "SIGNATURES",
    "Audio",
    "File",
    "Image",
    "Media",
    "Part",
    "bounded",
    "fallback_text",
    "from_wire",
    "is_rich",
    "left_out",
    "parts_json",
    "parts_of",
    "read_parts_json",
    "sniff",
]

MAX_PARTS = 100
"""Parts of one result at most; the rest are left out, with a marker saying how many."""

MAX_RESULT_BYTES = 10 << 20
"""The default bound on the bytes of one result's images, audio and files together (10
MiB): `ToolRegistry(max_result_bytes=...)`, a tool's own `max_result_bytes=`."""

_MAX_MEDIA_TYPE = 127
_MAX_NAME = 255
_MAX_URI = 2048
_TOKEN = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,62}"
_MEDIA_TYPE = re.compile(
    rf"({_TOKEN}/{_TOKEN})((?:\s*;\s*[a-z0-9!#$%&'*+.^_`|~-]+=[^;\s]{{1,64}}){{0,4}})"
)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}:[^\s\x00-\x1f\x7f]*")
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")


def _riff(kind: bytes) -> Callable[[bytes], bool]:
    return lambda data: data[:4] == b"RIFF" and data[8:12] == kind


def _mp3(data: bytes) -> bool:
    return data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0)


SIGNATURES: dict[str, Callable[[bytes], bool]] = {
    "image/png": lambda data: data[:8] == b"\x89PNG\r\n\x1a\n",
    "image/jpeg": lambda data: data[:3] == b"\xff\xd8\xff",
    "image/gif": lambda data: data[:6] in (b"GIF87a", b"GIF89a"),
    "image/webp": _riff(b"WEBP"),
    "application/pdf": lambda data: data[:5] == b"%PDF-",
    "audio/wav": _riff(b"WAVE"),
    "audio/mpeg": _mp3,
    "audio/ogg": lambda data: data[:4] == b"OggS",
    "audio/flac": lambda data: data[:4] == b"fLaC",
}
"""The media types whose bytes toolreg checks, each with its check of the first bytes (the
file's signature): a part that says it is one of these and is not is refused."""

_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/x-flac": "audio/flac",
    "application/x-pdf": "application/pdf",
}
"""Names in use for the types above, read as those types."""


def sniff(data: bytes, prefix: str = "") -> str | None:
    """The media type the signature of `data` (its first bytes) says (`SIGNATURES`),
    among the types starting with `prefix` (`"image/"`, `"audio/"`); None when none
    matches."""
    for media_type, matches in SIGNATURES.items():
        if media_type.startswith(prefix) and matches(data):
            return media_type
    return None


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} byte" if count == 1 else f"{count} bytes"
    if count < 1 << 20:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1 << 20):.1f} MiB"


class Media:
    """What `Image`, `Audio` and `File` share: `data` (bytes; a `File`'s may be text),
    `media_type` (`type/subtype`, lower case), read-only; equal when both are."""

    __slots__ = ("data", "media_type")
    kind: ClassVar[str] = ""
    prefix: ClassVar[str] = ""
    data: bytes | str
    media_type: str

    def _set(self, data: Any, media_type: Any, default: str | None) -> None:
        owner = f"{type(self).__name__}(data, media_type={media_type!r})"
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, (bytes, str)) or (isinstance(data, str) and self.prefix):
            wanted = "bytes or str" if not self.prefix else "bytes"
            raise _refused(
                "malformed", f"{owner}: data must be {wanted}, not {type(data).__name__}"
            )
        if not data:
            raise _refused("malformed", f"{owner}: data is empty; a part has at least one byte")
        if media_type is None:
            found = sniff(data, self.prefix) if isinstance(data, bytes) else "text/plain"
            if found is None and default is None:
                known = ", ".join(t for t in SIGNATURES if t.startswith(self.prefix))
                raise _refused(
                    "unknown",
                    f"{owner}: the bytes are none of {known}; pass media_type='{self.prefix}...'",
                )
            media_type = found or default
        media_type = _checked_type(owner, media_type, self.prefix)
        if isinstance(data, bytes):
            essence = media_type.split(";", 1)[0]
            check = SIGNATURES.get(essence)
            if check is not None and not check(data):
                actual = sniff(data)
                said = f"they are {actual}" if actual else "their first bytes are no such file"
                fix = f"pass media_type='{actual}'" if actual else "check the data"
                raise _refused("mismatch", f"{owner}: the bytes are not {essence} ({said}); {fix}")
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "media_type", media_type)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    @property
    def essence(self) -> str:
        """The media type without its parameters (`text/plain; charset=utf-8` ->
        `text/plain`)."""
        return self.media_type.split(";", 1)[0].rstrip()

    @property
    def size(self) -> int:
        """Its bytes (a text file's, in UTF-8)."""
        data = self.data
        return len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "replace"))

    def base64(self) -> str:
        """The data, base64-encoded (a text file's UTF-8 bytes)."""
        data = self.data
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "replace")
        from base64 import b64encode  # not by `import toolreg`

        return b64encode(raw).decode("ascii")

    def data_url(self) -> str:
        """`data:<media type>;base64,<data>`."""
        return f"data:{self.essence};base64,{self.base64()}"

    def describe(self) -> str:
        """What the part is, for a marker: its media type and size."""
        return f"{self.media_type}, {_size(self.size)}"

    def _key(self) -> tuple[Any, ...]:
        return (type(self), self.data, self.media_type)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Media):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_size(self.size)}, {self.media_type!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), self._state()))

    def _state(self) -> dict[str, Any]:
        return {"data": self.data, "media_type": self.media_type}


def _rebuilt(cls: type[Media], state: dict[str, Any]) -> Media:
    return cls(**state)


def _refused(code: str, message: str) -> UsageError:
    """A part refused; `part_problem` says why, for `from_wire` ("malformed", "unknown": no
    type given and none read from the bytes, "kind": a type of another kind, "mismatch":
    bytes not of the type said)."""
    error = UsageError(message)
    error.part_problem = code  # type: ignore[attr-defined]
    return error


def _checked_type(owner: str, media_type: Any, prefix: str) -> str:
    example = {"image/": "image/png", "audio/": "audio/wav"}.get(prefix, "application/pdf")
    if not isinstance(media_type, str) or len(media_type) > _MAX_MEDIA_TYPE:
        raise _refused("malformed", f"{owner}: media_type must be a media type, e.g. '{example}'")
    matched = _MEDIA_TYPE.fullmatch(media_type.strip().lower())
    if matched is None:
        raise _refused(
            "malformed",
            f"{owner}: {media_type[:40]!r} is not a media type (type/subtype, e.g. '{example}')",
        )
    essence = _ALIASES.get(matched.group(1), matched.group(1))
    if prefix and not essence.startswith(prefix):
        what = "an image" if prefix == "image/" else "a sound"
        raise _refused("kind", f"{owner}: {what} has a media type {prefix}..., not {essence!r}")
    return essence + matched.group(2)


class Image(Media):
    """An image a tool returns: `Image(data)` (PNG, JPEG, GIF or WebP: the `media_type` is
    read from the bytes) or `Image(data, "image/svg+xml")` (a `media_type` given; a few
    names in use are read as the standard one: `image/jpg` is `image/jpeg`).

    Raises:
        UsageError: the data is not bytes or is empty, the media type is not `image/...`,
            or the bytes are not the type given (`SIGNATURES`); without a media type,
            bytes of no type toolreg recognises.
    """

    __slots__ = ()
    kind = "image"
    prefix = "image/"

    def __init__(self, data: bytes, media_type: str | None = None) -> None:
        self._set(data, media_type, None)


class Audio(Media):
    """A sound a tool returns: `Audio(data)` (WAV, MP3, Ogg or FLAC: the `media_type` is
    read from the bytes) or `Audio(data, "audio/webm")`. Raises `UsageError` as `Image`
    does."""

    __slots__ = ()
    kind = "audio"
    prefix = "audio/"

    def __init__(self, data: bytes, media_type: str | None = None) -> None:
        self._set(data, media_type, None)


class File(Media):
    """A file a tool returns: bytes (`File(pdf, name="report.pdf")`: the `media_type` is
    read from the bytes, else `application/octet-stream`) or text (`File(csv_text,
    "text/csv")`; text is `text/plain` unless told). `name` is its file name (no path),
    `uri` where it comes from (served over MCP as an embedded resource with that URI;
    without one, `file:///<name>`).

    Raises:
        UsageError: the data is empty or neither bytes nor text, the media type is
            malformed or does not match the bytes (`SIGNATURES`), the name holds a path or
            a control character, the URI has no scheme.
    """

    __slots__ = ("name", "uri")
    kind = "file"
    name: str | None
    uri: str | None

    def __init__(
        self,
        data: bytes | str,
        media_type: str | None = None,
        *,
        name: str | None = None,
        uri: str | None = None,
    ) -> None:
        self._set(data, media_type, "application/octet-stream")
        owner = f"File(data, name={name!r})"
        if name is not None and (
            not isinstance(name, str)
            or not name.strip()
            or len(name) > _MAX_NAME
            or _BAD_NAME.search(name)
        ):
            raise UsageError(
                f"{owner}: a file name of 1 to {_MAX_NAME} characters, without a path "
                "or control characters, e.g. name='report.pdf'"
            )
        if uri is not None and (
            not isinstance(uri, str) or len(uri) > _MAX_URI or not _URI.fullmatch(uri)
        ):
            raise UsageError(
                f"File(data, uri={str(uri)[:60]!r}): a URI with a scheme, at most {_MAX_URI} "
                "characters, e.g. uri='https://example.com/report.pdf'"
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "uri", uri)

    @property
    def is_text(self) -> bool:
        """Whether the data is text."""
        return isinstance(self.data, str)

    @property
    def location(self) -> str:
        """Its URI: the one given, else `file:///<name>` (`file:///file` without a name)."""
        if self.uri is not None:
            return self.uri
        from urllib.parse import quote  # not by `import toolreg`

        return "file:///" + quote(self.name or "file", safe="")

    @property
    def label(self) -> str:
        """What a marker calls it: its name, else its URI, else "file"."""
        return self.name or self.uri or "file"

    def filename(self) -> str:
        """A file name for an API that wants one: its name, else one made from its URI's
        last segment or its type (`file.pdf`)."""
        if self.name:
            return self.name
        if self.uri:
            tail = self.uri.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
            if tail and not _BAD_NAME.search(tail) and len(tail) <= _MAX_NAME and ":" not in tail:
                return tail
        subtype = self.essence.split("/", 1)[1]
        return "file." + ("txt" if subtype == "plain" else subtype.split("+")[-1][:16])

    def describe(self) -> str:
        return f"{self.label}, {self.media_type}, {_size(self.size)}"

    def _key(self) -> tuple[Any, ...]:
        return (File, self.data, self.media_type, self.name, self.uri)

    def __repr__(self) -> str:
        named = f", name={self.name!r}" if self.name else ""
        return f"File({_size(self.size)}, {self.media_type!r}{named})"

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "name": self.name, "uri": self.uri}


Part = Union[str, Image, Audio, File]
"""One part of a rich result: text, an image, a sound or a file."""

_MEDIA = (Image, Audio, File)


def is_rich(value: Any) -> bool:
    """Whether a tool's return value is a rich result: a part, or a list or tuple holding
    one (a NamedTuple is a record, never a list of parts)."""
    if isinstance(value, _MEDIA):
        return True
    if type(value) is list or type(value) is tuple:
        return any(isinstance(item, _MEDIA) for item in value)
    return False


def parts_of(value: Any, as_text: Callable[[Any], str]) -> list[Part]:
    """The parts of a rich return value: a part alone, or a list's items (a `str` is text, a
    part itself, anything else `as_text(item)`)."""
    if isinstance(value, _MEDIA):
        return [value]
    return [item if isinstance(item, (str, *_MEDIA)) else as_text(item) for item in value]


def left_out(part: Media, why: str | None = None) -> str:
    """The marker for a part that is not shown: `[image left out: image/png, 68 bytes]`,
    with `why` after a semicolon."""
    reason = f"; {why}" if why else ""
    return f"[{part.kind} left out: {part.describe()}{reason}]"


def _truncated(text: str, room: int) -> str:
    cut = len(text) - room
    return f"{text[:room]}\n[truncated: {cut} of {len(text)} characters cut]"


def bounded(parts: list[Part], max_chars: int | None, max_bytes: int | None) -> tuple[Part, ...]:
    """The parts a result keeps: at most `MAX_PARTS` (the last a marker for the rest, when
    there are more: bounding again changes nothing); text cut
    where the text parts together pass `max_chars` (with the marker a plain result gets);
    an image, sound or file that would take the media past `max_bytes` left out, a marker
    in its place. None: no bound."""
    out: list[Part] = []
    chars = spent = 0
    more = len(parts) - MAX_PARTS + 1 if len(parts) > MAX_PARTS else 0
    for part in parts[: MAX_PARTS - 1] if more else parts:
        if isinstance(part, str):
            if max_chars is not None:
                room = max(max_chars - chars, 0)
                if len(part) > room:
                    part = _truncated(part, room)
                    chars = max_chars
                else:
                    chars += len(part)
            out.append(part)
            continue
        size = part.size
        if max_bytes is not None and spent + size > max_bytes:
            out.append(left_out(part, f"over the {_size(max_bytes)} a result may hold"))
            continue
        spent += size
        out.append(part)
    if more:
        out.append(f"[{more} more parts left out: at most {MAX_PARTS} in one result]")
    return tuple(out)


def fallback_text(parts: tuple[Part, ...] | list[Part]) -> str:
    """The text of a rich result: its text parts, one per line, a marker for each image,
    sound or binary file (`left_out`), and a text file's text after a line naming it."""
    lines: list[str] = []
    for part in parts:
        if isinstance(part, str):
            lines.append(part)
        elif isinstance(part, File) and isinstance(part.data, str):
            lines.append(f"[file {part.label} ({part.media_type}):]\n{part.data}")
        else:
            lines.append(left_out(part))
    return "\n".join(lines)


# -- parts from outside: a mounted server's blocks, a saved state -------------------------


def _decoded(data: Any, limit: int) -> bytes | str:
    """Base64 text -> bytes, or the reason it is not usable."""
    if not isinstance(data, str) or not data:
        return "it has no data"
    if len(data) > (limit + 2) // 3 * 4 + 4:
        return f"its data is over the {_size(limit)} allowed"
    from base64 import b64decode  # not by `import toolreg`
    from binascii import Error as NotBase64

    try:
        return b64decode(data, validate=True)
    except (NotBase64, ValueError):
        return "its data is not base64"


def from_wire(
    kind: str,
    data: Any,
    media_type: Any,
    *,
    text: Any = None,
    name: Any = None,
    uri: Any = None,
    limit: int = MAX_RESULT_BYTES,
) -> Part:
    """A part from untrusted data, or the text marker that says why it is left out:
    malformed base64, a missing or malformed media type, bytes that are not the type said,
    more than `limit` bytes. Never raises; quotes nothing of the data, and of the media type
    only its `type/subtype` when it is a well-formed one.

    `kind` is "image", "audio" or "file"; `data` the base64 bytes, or for a text file its
    `text`; `media_type` the type the sender claims (None: read from the bytes); `name` and
    `uri` a file's (dropped when malformed)."""
    matched = (
        _MEDIA_TYPE.fullmatch(media_type.strip().lower())
        if isinstance(media_type, str) and len(media_type) <= _MAX_MEDIA_TYPE
        else None
    )
    shown = matched.group(1) if matched is not None else None

    def refused(why: str) -> str:
        what = f" ({shown})" if shown else ""
        return f"[{kind} left out{what}: {why}]"

    if kind == "file" and text is not None:
        if not isinstance(text, str) or not text:
            return refused("it has no text")
        if len(text) > limit:
            return refused(f"its text is over the {_size(limit)} allowed")
        body: bytes | str = text
    else:
        decoded = _decoded(data, limit)
        if isinstance(decoded, str):
            return refused(decoded)
        if len(decoded) > limit:
            return refused(f"its data is over the {_size(limit)} allowed")
        body = decoded
    if media_type is not None and matched is None:
        return refused("its media type is malformed")
    given = None if matched is None else matched.group(0)
    try:
        if kind == "image":
            return Image(body, given)  # type: ignore[arg-type]
        if kind == "audio":
            return Audio(body, given)  # type: ignore[arg-type]
        ok_name = (
            name
            if isinstance(name, str)
            and name.strip()
            and len(name) <= _MAX_NAME
            and not _BAD_NAME.search(name)
            else None
        )
        fits = isinstance(uri, str) and len(uri) <= _MAX_URI and _URI.fullmatch(uri)
        ok_uri = uri if fits else None
        return File(body, given, name=ok_name, uri=ok_uri)
    except UsageError as exc:
        why = _WHY[getattr(exc, "part_problem", "malformed")]
        return refused(why.format(type=shown, kind=kind, a="an" if kind[0] in "aeiou" else "a"))


_WHY = {
    "mismatch": "its data is not the {type} it says it is",
    "unknown": "it has no media type, and its data is no {kind} toolreg knows",
    "kind": "{type} is not {a} {kind} type",
    "malformed": "it is malformed",
}


def parts_json(parts: tuple[Part, ...]) -> list[Any]:
    """The `parts` of a result as JSON (a saved state): text as a string, media as an object
    with its `kind`, `media_type`, and `data` (base64) or a text file's `text`."""
    out: list[Any] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        entry: dict[str, Any] = {"kind": part.kind, "media_type": part.media_type}
        if isinstance(part.data, str):
            entry["text"] = part.data
        else:
            entry["data"] = part.base64()
        if isinstance(part, File):
            entry["name"], entry["uri"] = part.name, part.uri
        out.append(entry)
    return out


def read_parts_json(data: Any, limit: int = MAX_RESULT_BYTES) -> tuple[Part, ...]:
    """`parts_json`'s output read back. It is untrusted (a saved state): each part is
    checked as a mounted server's would be, and since toolreg writes only parts that pass,
    one that does not means the data was edited.

    Raises:
        ValueError: it is not a list of at most `MAX_PARTS` strings and part objects, or a
            part is malformed, mislabelled or larger than `limit` (the reason says which).
    """
    if not isinstance(data, list) or len(data) > MAX_PARTS:
        raise ValueError(f"not a list of at most {MAX_PARTS} parts")
    out: list[Part] = []
    for entry in data:
        if isinstance(entry, str):
            out.append(entry)
            continue
        if not isinstance(entry, dict) or entry.get("kind") not in ("image", "audio", "file"):
            raise ValueError("a part is neither text nor an image, a sound or a file")
        part = from_wire(
            entry["kind"],
            entry.get("data"),
            entry.get("media_type"),
            text=entry.get("text"),
            name=entry.get("name"),
            uri=entry.get("uri"),
            limit=limit,
        )
        if isinstance(part, str):
            raise ValueError(f"a part that is refused: {part}")
        out.append(part)
    return tuple(out)
