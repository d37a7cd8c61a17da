"""`RedisStore`: states in Redis, the store for many app servers behind a load balancer.

Needs the `redis` package (`pip install 'toolreg[redis]'`), imported when a `RedisStore`
is made. A state is a hash `<prefix>state:<id>` with its version `v` and JSON text `s`;
`load` and `save` are Lua scripts, so each is one atomic step on the server: `save`
compares the version and writes in the same step (no other client's write can come
between), `load` measures the text before it sends it (an oversized value is refused
without being transferred). A claim is `SET <prefix>claim:<id> <token> NX PX <ttl>`: only
the first `SET` takes the name, and Redis forgets it after `ttl`.

Sync methods use a `redis.Redis`, the async ones a `redis.asyncio.Redis`, both made from
`url` (or give your own `client=` / `async_client=`, e.g. with TLS or a Sentinel). redis-py
ties an async client's connections to the event loop that opened them, so the store makes
one async client per event loop it is used in (each `asyncio.run()`, each thread's loop); a
given `async_client=` is used as it is, in the one loop it belongs to.

A server that cannot be reached or refuses a command (down, a wrong password, a timeout, a
read-only replica) is a `StateStoreError` naming the server's URL without credentials,
never a bare `redis` error; `load` and `save` are single atomic scripts, so a failed one
changed nothing.
"""

from __future__ import annotations

import contextlib
import urllib.parse
import weakref
from collections.abc import Iterator
from typing import Any

from ..errors import StateStoreError, UsageError, exception_text, with_article
from .base import (
    DEFAULT_MAX_BYTES,
    StoredState,
    check_claim,
    check_expected,
    check_id,
    check_max_bytes,
    conflict,
    decode_state,
    encode_state,
)

__all__ = ["RedisStore", "redacted"]

# KEYS[1]: the state's hash. ARGV: the expected version ("" for none), the JSON text.
# Returns {1, new version} or {0, the version found ("" for none)}.
_SAVE = """
local found = redis.call('HGET', KEYS[1], 'v')
if (found or '') ~= ARGV[1] then return {0, found or ''} end
local version = (tonumber(found) or 0) + 1
redis.call('HSET', KEYS[1], 'v', version, 's', ARGV[2])
return {1, version}
"""
# KEYS[1]: the state's hash. ARGV[1]: the largest text sent back.
# Returns {} (no state), {version, text} or {version, false, its length} (too large).
_LOAD = """
local version = redis.call('HGET', KEYS[1], 'v')
if not version then return {} end
local size = redis.call('HSTRLEN', KEYS[1], 's')
if size > tonumber(ARGV[1]) then return {version, false, size} end
return {version, redis.call('HGET', KEYS[1], 's')}
"""


class RedisStore:
    """A `StateStore` (and `AsyncStateStore`) in Redis at `url`; keys start with `prefix`.

    For many app servers: saves are compare-and-set and claims are atomic in Redis
    (`pip install 'toolreg[redis]'`).

    Args:
        url: the Redis server's URL.
        prefix: what every key starts with, at most 100 characters.
        max_bytes: the largest state's JSON text it keeps (32 MB by default).
        client: a `redis.Redis` to use instead of one made from `url`.
        async_client: a `redis.asyncio.Redis` for `AsyncConversation`, used in the event loop
            it belongs to (else the store makes one per event loop, from `url`).

    Raises:
        UsageError: the `redis` package is missing, or `prefix` is not short text.
        StateStoreError: (from every method) the server cannot be reached or refuses the
            command; the message names its URL without credentials.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "toolreg:",
        max_bytes: int = DEFAULT_MAX_BYTES,
        client: Any = None,
        async_client: Any = None,
    ) -> None:
        try:
            import redis
            import redis.asyncio
        except ImportError:
            raise UsageError(
                "RedisStore needs the redis package: pip install 'toolreg[redis]'"
            ) from None
        if not isinstance(prefix, str) or len(prefix) > 100:
            raise UsageError(f"prefix={prefix!r}: text of at most 100 characters")
        self.prefix = prefix
        self.max_bytes = check_max_bytes(max_bytes)
        self.client = client if client is not None else redis.Redis.from_url(url)
        self._save = self.client.register_script(_SAVE)
        self._load = self.client.register_script(_LOAD)
        self._url = url
        self._errors: type[Exception] = redis.exceptions.RedisError
        self.where = redacted(url) if client is None else _client_url(client)
        """The server, as messages name it (no user name, no password)."""
        self._given = None if async_client is None else _AsyncSide(async_client)
        # event loop -> the async client made for it (gone with the loop)
        self._sides: weakref.WeakKeyDictionary[Any, _AsyncSide] = weakref.WeakKeyDictionary()
        self._unbound: Any = None  # `async_client` asked for outside any loop

    @property
    def async_client(self) -> Any:
        """The `redis.asyncio.Redis` the async methods use in the running event loop: the
        given `async_client=`, else the one made for this loop. Outside any loop, one made
        for the caller (the same each time), which binds to the loop that first uses it."""
        if self._given is not None:
            return self._given.client
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._unbound is None:
                import redis.asyncio

                self._unbound = redis.asyncio.Redis.from_url(self._url)
            return self._unbound
        return self._side().client

    def _side(self) -> _AsyncSide:
        """The async client (and its scripts) for the running event loop."""
        if self._given is not None:
            return self._given
        import asyncio

        loop = asyncio.get_running_loop()
        side = self._sides.get(loop)
        if side is None:
            import redis.asyncio

            side = self._sides[loop] = _AsyncSide(redis.asyncio.Redis.from_url(self._url))
        return side

    @contextlib.contextmanager
    def _failing(self, operation: str, id: str) -> Iterator[None]:
        """A `redis` error of `operation` as a `StateStoreError` naming the server."""
        try:
            yield
        except self._errors as err:
            raise StateStoreError(
                f"the Redis store at {self.where}: cannot {operation} {id!r}: "
                f"{type(err).__name__}: {_safe_text(err, self._url)}",
                store=self.where,
                operation=operation,
                id=id,
            ) from err

    def _key(self, kind: str, id: str) -> str:
        return f"{self.prefix}{kind}:{id}"

    def _loaded(self, id: str, answer: Any) -> StoredState | None:
        if not answer:
            return None
        version, text, *size = [*answer, None][:3]
        measured = size[0] if size and isinstance(size[0], int) else None
        return decode_state(id, text, version, self.max_bytes, size=measured)

    def _saved(self, id: str, expected: int | None, answer: Any) -> int:
        done, version = answer
        if done != 1:
            found = _version(version)
            raise conflict(id, expected, found)
        return int(version)

    # -- sync ------------------------------------------------------------------------------

    def load(self, id: str) -> StoredState | None:
        key = self._key("state", check_id(id))
        with self._failing("load", id):
            answer = self._load(keys=[key], args=[self.max_bytes])
        return self._loaded(id, answer)

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        key = self._key("state", check_id(id))
        text = encode_state(id, state, self.max_bytes)
        expected = _expected(expected_version)
        with self._failing("save", id):
            answer = self._save(keys=[key], args=[expected, text])
        return self._saved(id, expected_version, answer)

    def claim(self, id: str, token: str, ttl: float) -> bool:
        key = self._key("claim", id)
        millis = max(1, round(check_claim(id, token, ttl) * 1000))
        with self._failing("claim", id):
            if self.client.set(key, token, nx=True, px=millis):
                return True
            return _text(self.client.get(key)) == token

    def delete(self, id: str) -> bool:
        key = self._key("state", check_id(id))
        with self._failing("delete", id):
            return bool(self.client.delete(key))

    def close(self) -> None:
        """Close the sync client's connections (the async client: `await aclose()`)."""
        self.client.close()

    # -- async -----------------------------------------------------------------------------

    async def aload(self, id: str) -> StoredState | None:
        key = self._key("state", check_id(id))
        with self._failing("load", id):
            answer = await self._side().load(keys=[key], args=[self.max_bytes])
        return self._loaded(id, answer)

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        key = self._key("state", check_id(id))
        text = encode_state(id, state, self.max_bytes)
        expected = _expected(expected_version)
        with self._failing("save", id):
            answer = await self._side().save(keys=[key], args=[expected, text])
        return self._saved(id, expected_version, answer)

    async def aclaim(self, id: str, token: str, ttl: float) -> bool:
        key = self._key("claim", id)
        millis = max(1, round(check_claim(id, token, ttl) * 1000))
        with self._failing("claim", id):
            client = self._side().client
            if await client.set(key, token, nx=True, px=millis):
                return True
            return _text(await client.get(key)) == token

    async def adelete(self, id: str) -> bool:
        key = self._key("state", check_id(id))
        with self._failing("delete", id):
            return bool(await self._side().client.delete(key))

    async def aclose(self) -> None:
        """Close the running event loop's async client (the given one, or the one made for
        this loop)."""
        if self._given is None:
            import asyncio

            side = self._sides.pop(asyncio.get_running_loop(), None)
            if side is not None:
                await side.client.aclose()
            return
        await self._given.client.aclose()


class _AsyncSide:
    """An async client and the store's scripts registered on it."""

    __slots__ = ("client", "load", "save")

    def __init__(self, client: Any) -> None:
        self.client = client
        self.save = client.register_script(_SAVE)
        self.load = client.register_script(_LOAD)


def _expected(version: int | None) -> str:
    return "" if check_expected(version) is None else str(version)


def _version(value: Any) -> int | None:
    text = _text(value)
    return int(text) if text is not None and text.isdigit() and len(text) < 19 else None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def redacted(url: str) -> str:
    """A Redis URL as messages show it: scheme, host and port (or socket path) only."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return "<a URL that does not parse>"
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    host = parts.hostname or ""
    if not host:
        return f"<{with_article(parts.scheme or 'schemeless')} URL without a host>"
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + ("" if port is None else f":{port}")


def _client_url(client: Any) -> str:
    """Where a given client connects, as `redacted` shows a URL (its connection settings
    hold no credentials we show)."""
    settings = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None)
    if not isinstance(settings, dict):
        return f"<{with_article(type(client).__name__)}>"
    path = settings.get("path")
    if isinstance(path, str):
        return f"unix://{path}"
    host, port = settings.get("host", "localhost"), settings.get("port", 6379)
    shown = f"[{host}]" if ":" in str(host) else str(host)
    return f"redis://{shown}:{port}"


def _safe_text(err: BaseException, url: str) -> str:
    """The error's text, without anything of the URL's credentials."""
    text = exception_text(err, 200)
    try:
        parts = urllib.parse.urlsplit(url)
        secrets = [parts.password, parts.username]
    except ValueError:
        return "(its text is not shown)"
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
            text = text.replace(urllib.parse.unquote(secret), "***")
    return text
