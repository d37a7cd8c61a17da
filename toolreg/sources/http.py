"""One OpenAPI operation's call: validated arguments -> an HTTP request -> what the model reads.

- **Parameters** are written as the document's `style` / `explode` say, for the cases APIs
  use: path `simple`, `label`, `matrix`; query `form`, `spaceDelimited`, `pipeDelimited`,
  `deepObject`; header `simple`; cookie `form`. A parameter described by `content`
  (a JSON media type) is sent as JSON text. Values are percent-encoded (`allowReserved`
  keeps RFC 3986's reserved characters in a query); a path value `.` or `..` is refused.
- **The body** is JSON, a form (`application/x-www-form-urlencoded`) or text.
- **Credentials** are put where the security scheme says (`Authorization`, a header, the
  query, a cookie) on the request only, never anywhere else.
- **Sending**: through httpx's transport (no cookie jar shared by callers, nothing logged),
  with a time limit for the whole call; a redirect is followed (at most `MAX_REDIRECTS`)
  only within the base URL; the response is read in chunks and cut at the size limit.
- **Answers**: a 2xx is the result (JSON parsed, text as it is, other media described);
  a 4xx is a `ToolError` with its status and a bounded, safe excerpt, which the model reads
  as written; a 5xx, a connection failure or a broken response is a `RemoteFailure`, read
  under the registry's `errors=` policy. Every form of the call's secrets is replaced by
  `[redacted]` in all of them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urljoin, urlsplit

from ..dispatch.redaction import RemoteFailure, redact
from ..errors import ToolError, exception_text
from .credentials import Secret, scrub

__all__ = [
    "MAX_EXCERPT_CHARS",
    "MAX_REDIRECTS",
    "ApiResponse",
    "BodySpec",
    "ParamSpec",
    "Prepared",
    "RequestPlan",
    "SchemeSpec",
    "answer",
    "apply_secret",
    "prepare",
    "redirect_target",
    "within",
]

MAX_REDIRECTS = 5
MAX_EXCERPT_CHARS = 500
"""Characters of an error response's body the model reads."""

Where = Literal["path", "query", "header", "cookie"]


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One parameter of an operation: `prop` in the tool's schema, `name` in the API."""

    prop: str
    name: str
    where: Where
    style: str
    explode: bool
    allow_reserved: bool = False
    as_json: bool = False  # described by `content`: sent as JSON text


@dataclass(frozen=True, slots=True)
class BodySpec:
    """The request body: `kind` of encoding and its media type; either one property holds
    it whole (`prop`), or its properties are the tool's own (`fields`: (prop, key) pairs)."""

    kind: Literal["json", "form", "text"]
    media_type: str
    prop: str | None = None
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SchemeSpec:
    """A security scheme of the document, as a secret is applied for it."""

    name: str
    kind: Literal["bearer", "basic", "apiKey"]
    where: Literal["header", "query", "cookie"] = "header"
    param: str = "Authorization"


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """Everything one operation's call needs, worked out when the tool is built.
    `security`: the alternatives, each the schemes (with their scopes) all needed together;
    `()` for an operation that needs none, and an empty alternative makes them optional."""

    tool: str
    method: str
    path: str
    params: tuple[ParamSpec, ...]
    body: BodySpec | None
    security: tuple[tuple[tuple[SchemeSpec, tuple[str, ...]], ...], ...] = ()


@dataclass(slots=True)
class Prepared:
    """A request about to go out (the secrets go in last, by `apply_secret`)."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes | None
    query: list[str]  # encoded `name=value` items
    cookies: list[str]  # `name=value` items
    secret_query: list[str] = field(default_factory=list)  # API keys sent in the query

    def full_url(self) -> str:
        items = self.query + self.secret_query
        return self.url + ("?" + "&".join(items) if items else "")

    def header_list(self) -> list[tuple[str, str]]:
        headers = list(self.headers)
        if self.cookies:
            headers.append(("Cookie", "; ".join(self.cookies)))
        return headers


@dataclass(frozen=True, slots=True)
class ApiResponse:
    """A successful call's answer, as `ToolResult.value`: the HTTP `status`, the body's
    `media_type`, its `data` (parsed JSON, text, or None for a body not shown), its `text`
    (what the model reads) and whether it was `truncated` at the size limit."""

    status: int
    media_type: str
    data: Any
    text: str
    truncated: bool = False


# -- writing parameters --------------------------------------------------------------------

_RESERVED = ":/?#[]@!$&'()*+,;="


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _enc(text: str, reserved: bool = False) -> str:
    return quote(text, safe=_RESERVED if reserved else "")


def _pairs(value: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), _scalar(v)) for k, v in value.items()]


def _path_value(tool: str, spec: ParamSpec, value: Any) -> str:
    if spec.as_json:
        value = _scalar(value) if isinstance(value, str) else json.dumps(value)
    style, explode, name = spec.style, spec.explode, spec.name
    if isinstance(value, list):
        items = [_enc(_scalar(v)) for v in value]
        if style == "label":
            return "." + ("." if explode else ",").join(items)
        if style == "matrix":
            if explode:
                return "".join(f";{name}={v}" for v in items)
            return f";{name}=" + ",".join(items)
        return ",".join(items)
    if isinstance(value, dict):
        pairs = [(_enc(k), _enc(v)) for k, v in _pairs(value)]
        if explode:
            joined = [f"{k}={v}" for k, v in pairs]
            if style == "label":
                return "." + ".".join(joined)
            if style == "matrix":
                return "".join(";" + item for item in joined)
            return ",".join(joined)
        flat = ",".join(f"{k},{v}" for k, v in pairs)
        if style == "label":
            return "." + flat
        if style == "matrix":
            return f";{name}=" + flat
        return flat
    text = _scalar(value)
    if text in (".", ".."):
        raise ToolError(
            f"Tool '{tool}' failed: the path parameter '{spec.prop}' cannot be {text!r}."
        )
    if style == "label":
        return "." + _enc(text)
    if style == "matrix":
        return f";{name}={_enc(text)}"
    return _enc(text)


def _query_items(spec: ParamSpec, value: Any) -> list[str]:
    reserved = spec.allow_reserved
    name = _enc(spec.name)
    if spec.as_json:
        return [f"{name}={_enc(json.dumps(value, ensure_ascii=False), reserved)}"]
    style, explode = spec.style, spec.explode
    if isinstance(value, list):
        values = [_enc(_scalar(v), reserved) for v in value]
        if style == "spaceDelimited" and not explode:
            return [f"{name}=" + "%20".join(values)]
        if style == "pipeDelimited" and not explode:
            return [f"{name}=" + "%7C".join(values)]
        if explode:
            return [f"{name}={v}" for v in values]
        return [f"{name}=" + ",".join(values)]
    if isinstance(value, dict):
        pairs = _pairs(value)
        if style == "deepObject":
            return [f"{name}%5B{_enc(k)}%5D={_enc(v, reserved)}" for k, v in pairs]
        if explode:
            return [f"{_enc(k)}={_enc(v, reserved)}" for k, v in pairs]
        return [f"{name}=" + ",".join(f"{_enc(k)},{_enc(v, reserved)}" for k, v in pairs)]
    return [f"{name}={_enc(_scalar(value), reserved)}"]


def _header_value(tool: str, spec: ParamSpec, value: Any) -> str:
    if spec.as_json:
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, list):
        text = ",".join(_scalar(v) for v in value)
    elif isinstance(value, dict):
        pairs = _pairs(value)
        sep = "="
        text = ",".join(f"{k}{sep}{v}" if spec.explode else f"{k},{v}" for k, v in pairs)
    else:
        text = _scalar(value)
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in text):
        raise ToolError(
            f"Tool '{tool}' failed: the header parameter '{spec.prop}' cannot hold "
            "control characters (a line break)."
        )
    return text


def _cookie(text: str) -> str:
    """A cookie value: the characters RFC 6265 does not allow in one percent-encoded, the
    others as they are (servers do not decode cookies)."""
    return quote(text, safe="!#$&'()*+-./:<=>?@[]^_`{|}~")


def _cookie_items(spec: ParamSpec, value: Any) -> list[str]:
    _enc = _cookie  # the same writing, with a cookie's own encoding
    name = _enc(spec.name)
    if spec.as_json:
        return [f"{name}={_enc(json.dumps(value, ensure_ascii=False))}"]
    if isinstance(value, list):
        if spec.explode:
            return [f"{name}={_enc(_scalar(v))}" for v in value]
        return [f"{name}=" + ",".join(_enc(_scalar(v)) for v in value)]
    if isinstance(value, dict):
        pairs = _pairs(value)
        if spec.explode:
            return [f"{_enc(k)}={_enc(v)}" for k, v in pairs]
        return [f"{name}=" + ",".join(f"{_enc(k)},{_enc(v)}" for k, v in pairs)]
    return [f"{name}={_enc(_scalar(value))}"]


def _form(value: Any) -> bytes:
    items: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, list):
                items.extend(f"{_enc(str(key))}={_enc(_scalar(v))}" for v in item)
            elif item is not None:
                items.append(f"{_enc(str(key))}={_enc(_scalar(item))}")
    return "&".join(items).encode("ascii")


def prepare(
    plan: RequestPlan, base: str, arguments: Mapping[str, Any], headers: Mapping[str, str]
) -> Prepared:
    """The request for `arguments` (validated against the tool's schema): its URL under
    `base`, headers (`headers` first: the toolset's own), query and body."""
    path = plan.path
    query: list[str] = []
    cookies: list[str] = []
    sent = [(k, v) for k, v in headers.items()]
    for spec in plan.params:
        if spec.prop not in arguments or arguments[spec.prop] is None:
            continue
        value = arguments[spec.prop]
        if spec.where == "path":
            path = path.replace("{" + spec.name + "}", _path_value(plan.tool, spec, value))
        elif spec.where == "query":
            query.extend(_query_items(spec, value))
        elif spec.where == "header":
            sent.append((spec.name, _header_value(plan.tool, spec, value)))
        else:
            cookies.extend(_cookie_items(spec, value))
    body: bytes | None = None
    spec_body = plan.body
    if spec_body is not None:
        if spec_body.prop is not None:
            payload = arguments.get(spec_body.prop)
            present = spec_body.prop in arguments
        else:
            payload = {key: arguments[p] for p, key in spec_body.fields if p in arguments}
            present = bool(payload)
        if present:
            if spec_body.kind == "json":
                body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            elif spec_body.kind == "form":
                body = _form(payload)
            else:
                body = _scalar(payload).encode("utf-8")
            sent.append(("Content-Type", spec_body.media_type))
    sent.append(("Accept", "application/json, */*;q=0.5"))
    return Prepared(plan.method.upper(), base.rstrip("/") + path, sent, body, query, cookies)


def apply_secret(request: Prepared, scheme: SchemeSpec, secret: Secret) -> None:
    """Put `secret` where `scheme` says, on this request only."""
    if scheme.kind == "bearer":
        request.headers.append(("Authorization", f"Bearer {secret.value}"))
    elif scheme.kind == "basic":
        import base64

        pair = f"{secret.username or ''}:{secret.value}".encode()
        request.headers.append(("Authorization", "Basic " + base64.b64encode(pair).decode()))
    elif scheme.where == "header":
        request.headers.append((scheme.param, secret.value))
    elif scheme.where == "query":
        request.secret_query.append(f"{_enc(scheme.param)}={_enc(secret.value)}")
    else:
        request.cookies.append(f"{_cookie(scheme.param)}={_cookie(secret.value)}")


# -- where a call may go ----------------------------------------------------------------------


def within(base: str, url: str) -> bool:
    """Whether `url` is under `base`: the same scheme, host and port, and a path below."""
    b, u = urlsplit(base), urlsplit(url)
    if (b.scheme.lower(), b.hostname, b.port) != (u.scheme.lower(), u.hostname, u.port):
        return False
    root = b.path.rstrip("/")
    return u.path == root or u.path.startswith(root + "/") or not root


def redirect_target(request: Prepared, status: int, location: str, base: str) -> bool:
    """Turn `request` into the one a redirect asks for, if it may be followed: inside
    `base` (so the secrets go nowhere else). False when it may not."""
    target = urljoin(
        request.url + ("?" + "&".join(request.query) if request.query else ""), location
    )
    if not within(base, target):
        return False
    if status == 303 or (status in (301, 302) and request.method not in ("GET", "HEAD")):
        request.method = "GET"
        request.body = None
        request.headers = [(k, v) for k, v in request.headers if k.lower() != "content-type"]
    parts = urlsplit(target)
    request.url = parts._replace(query="", fragment="").geturl()
    request.query = [parts.query] if parts.query else []
    return True


# -- answers --------------------------------------------------------------------------------

_TEXTUAL = ("json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "csv")


def _media(content_type: str) -> tuple[str, str]:
    """(media type, charset) of a Content-Type header."""
    kind, _, params = content_type.partition(";")
    charset = "utf-8"
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip('"').strip()
    return kind.strip().lower(), charset


def _decode(body: bytes, charset: str) -> str:
    try:
        return body.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def _excerpt(text: str, secrets: Sequence[Secret]) -> str:
    text = " ".join(scrub(text, secrets).split())
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    if len(text) > MAX_EXCERPT_CHARS:
        text = text[:MAX_EXCERPT_CHARS] + " [cut]"
    return text


def answer(
    tool: str,
    status: int,
    reason: str,
    content_type: str,
    body: bytes,
    truncated: bool,
    limit: int,
    secrets: Sequence[Secret],
) -> ApiResponse:
    """What the model reads of a response: an `ApiResponse` for a 2xx; raised otherwise."""
    media, charset = _media(content_type)
    textual = media.startswith("text/") or any(t in media for t in _TEXTUAL) or not media
    text = scrub(_decode(body, charset), secrets) if textual else ""
    if not 200 <= status < 300:
        said = f"HTTP {status}" + (f" {reason}" if reason else "")
        excerpt = _excerpt(text, secrets) if textual else ""
        if not excerpt and body and not textual:
            excerpt = f"({len(body):,} bytes of {media})"
        message = f"Tool '{tool}' failed: {said}" + (f": {excerpt}" if excerpt else ".")
        if 400 <= status < 500:  # the API on the request the model made: it may fix it
            raise ToolError(redact(message))
        raise RemoteFailure(message)  # the API's own trouble: under errors=
    if not body:
        return ApiResponse(status, media, None, f"HTTP {status} {reason}".strip())
    if truncated:
        shown = text if textual else ""
        note = f"[cut: the response is longer than {limit:,} bytes]"
        return ApiResponse(status, media, None, f"{shown}\n{note}" if shown else note, True)
    if not textual:
        described = f"(HTTP {status}: {len(body):,} bytes of {media}, not shown)"
        return ApiResponse(status, media, None, described)
    if "json" in media:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return ApiResponse(status, media, text, text)
        rendered = text if isinstance(data, (dict, list)) else _plain(data)
        return ApiResponse(status, media, data, rendered)
    return ApiResponse(status, media, text, text)


def _plain(data: Any) -> str:
    return data if isinstance(data, str) else json.dumps(data)


def unreachable(tool: str, exc: BaseException, secrets: Sequence[Secret]) -> RemoteFailure:
    """The failure of a call whose request got no answer (a refused connection, a broken
    response), in words the model may read under `errors=`."""
    detail = scrub(exception_text(exc, 200), secrets)
    return RemoteFailure(
        f"Tool '{tool}' failed: the API could not be reached ({type(exc).__name__}"
        + (f": {detail}" if detail else "")
        + ")."
    )


def timed_out(tool: str, seconds: float) -> ToolError:
    return ToolError(f"Tool '{tool}' failed: the API did not answer within {seconds:g} s.")


class Deadline:
    """The time left for one call, all its requests together."""

    __slots__ = ("end", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def timeouts(self) -> dict[str, float]:
        left = max(0.001, self.left())
        return {"connect": left, "read": left, "write": left, "pool": left}


# -- sending ----------------------------------------------------------------------------------

Received = tuple[int, str, str, bytes, bool]
"""(status, reason, content type, body, whether the body was cut at the limit)"""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
_log = logging.getLogger("toolreg.sources")


def _stale_errors(httpx: Any) -> tuple[type[BaseException], ...]:
    """What a request on a connection the server closed while it was idle fails with: an
    idempotent request is sent once more (on a new connection), as browsers do."""
    return (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


def _request(httpx: Any, request: Prepared, deadline: Deadline) -> Any:
    return httpx.Request(
        request.method,
        request.full_url(),
        headers=request.header_list(),
        content=request.body,
        extensions={"timeout": deadline.timeouts()},
    )


def _outside(tool: str, location: str) -> ToolError:
    parts = urlsplit(location)
    where = f"{parts.scheme}://{parts.hostname}" if parts.hostname else "another address"
    return ToolError(
        f"Tool '{tool}' failed: the API redirected the call outside its base URL (to {where}); "
        "toolreg does not follow it."
    )


def _too_many(tool: str) -> ToolError:
    return ToolError(
        f"Tool '{tool}' failed: the API redirected the call more than {MAX_REDIRECTS} times."
    )


def send(
    transport: Any, tool: str, request: Prepared, base: str, deadline: Deadline, limit: int
) -> Received:
    """Send `request` on an `httpx2.HTTPTransport` (sync), following redirects inside `base`,
    reading at most `limit` bytes of the answer before `deadline`."""
    import httpx2

    try:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = transport.handle_request(_request(httpx2, request, deadline))
            except _stale_errors(httpx2) as exc:  # a kept-alive connection the server had closed
                if request.method not in _IDEMPOTENT:
                    raise
                _log.debug("retrying %s once: %s", tool, type(exc).__name__)
                response = transport.handle_request(_request(httpx2, request, deadline))
            try:
                status = response.status_code
                location = response.headers.get("location")
                if status in _REDIRECTS and location:
                    if not redirect_target(request, status, location, base):
                        raise _outside(tool, location)
                    continue
                chunks, size, truncated = [], 0, False
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        truncated = True
                        break
                    if deadline.left() <= 0:
                        raise httpx2.ReadTimeout("the call's time ran out")
                body = b"".join(chunks)[:limit]
                kind = response.headers.get("content-type", "")
                return status, response.reason_phrase, kind, body, truncated
            finally:
                response.close()
    except httpx2.TimeoutException:
        raise timed_out(tool, deadline.seconds) from None
    raise _too_many(tool)


async def asend(
    transport: Any, tool: str, request: Prepared, base: str, deadline: Deadline, limit: int
) -> Received:
    """`send` on an `httpx2.AsyncHTTPTransport`."""
    import httpx2

    try:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = await transport.handle_async_request(_request(httpx2, request, deadline))
            except _stale_errors(httpx2) as exc:  # a kept-alive connection the server had closed
                if request.method not in _IDEMPOTENT:
                    raise
                _log.debug("retrying %s once: %s", tool, type(exc).__name__)
                response = await transport.handle_async_request(_request(httpx2, request, deadline))
            try:
                status = response.status_code
                location = response.headers.get("location")
                if status in _REDIRECTS and location:
                    if not redirect_target(request, status, location, base):
                        raise _outside(tool, location)
                    continue
                chunks, size, truncated = [], 0, False
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        truncated = True
                        break
                    if deadline.left() <= 0:
                        raise httpx2.ReadTimeout("the call's time ran out")
                body = b"".join(chunks)[:limit]
                kind = response.headers.get("content-type", "")
                return status, response.reason_phrase, kind, body, truncated
            finally:
                await response.aclose()
    except httpx2.TimeoutException:
        raise timed_out(tool, deadline.seconds) from None
    raise _too_many(tool)
