"""The endpoints a dialect names (`Dialect.api`): how a driver calls each one and reads it.

Both answer in the one shape the loop reads (`stream.Normalized`), plain or streamed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .responses_api import ResponseStreamAssembler, normalize_response
from .stream import Normalized, StreamAssembler, normalize_completion

__all__ = ["ENDPOINTS", "Assembler", "Endpoint"]


class Assembler(Protocol):
    """Reads a stream piece by piece; `result()` is the normalized answer."""

    def feed(self, chunk: Any) -> None: ...

    def result(self) -> Normalized: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """`method(client)` is the SDK's create method; `normalize` reads a plain answer and
    `assembler(on_text)` a streamed one; `usage_option`: a stream reports usage only when
    asked with `stream_options={"include_usage": True}`."""

    method: Callable[[Any], Callable[..., Any]]
    normalize: Callable[[Any], Normalized]
    assembler: Callable[[Callable[[str], None] | None], Assembler]
    usage_option: bool


ENDPOINTS: dict[str, Endpoint] = {
    "chat.completions": Endpoint(
        lambda client: client.chat.completions.create,
        normalize_completion,
        StreamAssembler,
        usage_option=True,
    ),
    "responses": Endpoint(
        lambda client: client.responses.create,
        normalize_response,
        ResponseStreamAssembler,
        usage_option=False,
    ),
}
