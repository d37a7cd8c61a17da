"""Credentials resolved for each call from the call's context: who is calling.

One toolset (an `OpenAPI` document's tools, a `Mount` of an MCP server over HTTP) serves
many users; each call carries its user in `context=` (`ToolContext.deps`), and a
`Credentials` provider answers that user's secret for it:

```python
def fetch(request: CredentialRequest) -> Secret | str | None:
    token = vault.token_of(request.context["user_id"], request.scheme)
    return None if token is None else Secret(token.value, expires_at=token.expires_at)

credentials = Credentials(fetch, user=lambda deps: deps["user_id"])
api = OpenAPI.from_url("https://api.example.com/openapi.json", credentials=credentials)
api.dispatcher.dispatch_tool("list_orders", {}, context={"user_id": "u1"})
```

- `fetch` (sync or async) gets a `CredentialRequest`: the call's `context`, the security
  scheme asked for (`scheme`, the document's name for it; `"mcp"` for a mount), its `kind`
  and the tool. It answers a `Secret` (a `str` is one), or None: this caller has none, and
  the call fails with an observation that says so (never another user's secret).
- A `Secret` with `expires_at` is kept per user and scheme until then (less `leeway`
  seconds), then asked for again; one without is asked for on every call. When the server
  refuses a secret (HTTP 401), `fetch` is asked once more with `refresh=True`, and the call
  is retried once if the answer is a different secret.
- `user` says who a context is (what secrets are kept by, and what a mount keys its
  per-user sessions by): by default the context itself, when it is hashable.

A secret never reaches the model, a log line, a trace or a saved state: it goes into the
request's headers (or query, or cookie) as the API's document says, and a response or an
error text that quotes it has it replaced by `[redacted]`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..dispatch.calling import acredential, credential
from ..errors import UsageError, with_article

__all__ = [
    "MAX_SECRET_CHARS",
    "CredentialKind",
    "CredentialRequest",
    "Credentials",
    "Secret",
    "as_credentials",
    "scrub",
]

MAX_SECRET_CHARS = 8192
"""The longest secret accepted (a bearer token, a key, a password)."""

CredentialKind = Literal["bearer", "basic", "apiKey"]
"""What a secret is for: `Authorization: Bearer` (OAuth 2 and OpenID Connect tokens too),
`Authorization: Basic` (with `Secret.username`), or an API key (header, query or cookie)."""


def _check_text(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise UsageError(f"Secret({what}=...): a string, not {type(value).__name__}")
    if not value or len(value) > MAX_SECRET_CHARS:
        raise UsageError(f"Secret({what}=...): 1 to {MAX_SECRET_CHARS:,} characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise UsageError(f"Secret({what}=...): control characters (a line break...) refused")
    return value


@dataclass(frozen=True, slots=True)
class Secret:
    """A caller's secret: `value` (a token, a key or a password), when it expires
    (`expires_at`, seconds since the epoch as `time.time()`; None: not known, asked for
    again on every call) and, for HTTP basic authentication, the `username`.
    Its `repr` never shows the value."""

    value: str = field(repr=False)
    expires_at: float | None = None
    username: str | None = None

    def __post_init__(self) -> None:
        _check_text("value", self.value)
        if self.username is not None:
            _check_text("username", self.username)
            if ":" in self.username:
                raise UsageError("Secret(username=...): HTTP basic usernames have no ':'")
        at = self.expires_at
        if at is not None and (
            isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at)
        ):
            raise UsageError("Secret(expires_at=...): seconds since the epoch, as time.time()")

    def __repr__(self) -> str:
        user = "" if self.username is None else f", username={self.username!r}"
        return f"Secret(***, expires_at={self.expires_at!r}{user})"

    def fresh(self, leeway: float, now: float | None = None) -> bool:
        """Whether it may still be used `leeway` seconds from now (never, without an expiry:
        such a secret is not kept)."""
        if self.expires_at is None:
            return False
        return self.expires_at - leeway > (time.time() if now is None else now)

    def texts(self) -> tuple[str, ...]:
        """Every form of it that may show up in a text: the value as it is, percent-encoded
        (a query or a cookie), escaped in JSON, and the basic-auth header's."""
        import json
        from urllib.parse import quote

        forms = [self.value, quote(self.value, safe=""), json.dumps(self.value)[1:-1]]
        if self.username is not None:
            import base64

            pair = f"{self.username}:{self.value}".encode()
            forms.append(base64.b64encode(pair).decode("ascii"))
        return tuple(dict.fromkeys(forms))


@dataclass(frozen=True, slots=True)
class CredentialRequest:
    """What a provider is asked: the secret for `scheme` (the OpenAPI document's name of
    the security scheme; `"mcp"` for a mounted server), of `kind`, for the call whose
    `context` is given (`ToolContext.deps`: who is calling; None for a mount's own tool
    listing), calling `tool` (None: not a call). `scopes` are the OAuth scopes the
    operation asks for; `refresh=True`: the server refused the secret given last (HTTP
    401): answer a fresh one, or None."""

    context: Any
    scheme: str
    kind: CredentialKind
    tool: str | None = None
    scopes: tuple[str, ...] = ()
    refresh: bool = False


Fetch = Callable[[CredentialRequest], Any]


class Credentials:
    """A credential provider: `fetch(request)` (sync or async) answers a `Secret`, a `str`
    or None (see the module); secrets with an expiry are kept per user and scheme, at most
    `max_kept` of them (the least recently used go first), until `leeway` seconds before
    they expire. `user(context)` says who a call's context is (default: the context itself,
    when hashable).

    Raises:
        UsageError: an argument is wrong (`fetch` or `user` not callable, a negative
            `leeway` or `max_kept`).
    """

    def __init__(
        self,
        fetch: Fetch,
        *,
        user: Callable[[Any], Hashable] | None = None,
        leeway: float = 30.0,
        max_kept: int = 1024,
    ) -> None:
        if not callable(fetch):
            raise UsageError(
                f"Credentials(fetch): a function of a CredentialRequest, not {type(fetch).__name__}"
            )
        if user is not None and not callable(user):
            raise UsageError("Credentials(user=...): a function of the call's context")
        if isinstance(leeway, bool) or not isinstance(leeway, (int, float)):
            raise UsageError("Credentials(leeway=...): seconds, a number >= 0")
        if not math.isfinite(leeway) or leeway < 0:
            raise UsageError("Credentials(leeway=...): seconds, a number >= 0")
        if isinstance(max_kept, bool) or not isinstance(max_kept, int) or max_kept < 0:
            raise UsageError("Credentials(max_kept=...): a whole number >= 0")
        self.fetch = fetch
        self.leeway = float(leeway)
        self.max_kept = max_kept
        self._user = user
        self._kept: OrderedDict[tuple[Hashable, str], Secret] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        name = getattr(self.fetch, "__qualname__", type(self.fetch).__name__)
        return f"<Credentials {name}: {len(self._kept)} kept>"

    def user_of(self, context: Any) -> Hashable:
        """Who `context` is: `user(context)`, else the context itself; None for no context.

        Raises:
            UsageError: the context cannot say (it is not hashable, and no `user=` was given).
        """
        if context is None:
            return None
        key = context if self._user is None else self._user(context)
        try:
            hash(key)
        except TypeError:
            if self._user is None:
                raise UsageError(
                    f"Credentials: a call's context ({type(context).__name__}) cannot say who "
                    "the caller is; pass Credentials(fetch, user=lambda deps: deps['user_id'])"
                ) from None
            raise UsageError(
                f"Credentials(user=...) returned {with_article(type(key).__name__)}, which is not "
                "hashable; return a user id"
            ) from None
        return key

    def _key(self, request: CredentialRequest) -> tuple[Hashable, str] | None:
        try:
            return (self.user_of(request.context), request.scheme)
        except UsageError:
            return None  # nothing to keep it by: asked for on every call

    def _kept_secret(self, key: tuple[Hashable, str] | None, refresh: bool) -> Secret | None:
        if key is None or refresh:
            return None
        with self._lock:
            secret = self._kept.get(key)
            if secret is None:
                return None
            if secret.fresh(self.leeway):
                self._kept.move_to_end(key)
                return secret
            del self._kept[key]
            return None

    def _keep(self, key: tuple[Hashable, str] | None, answer: object) -> Secret | None:
        secret = _as_secret(answer)
        if key is None:
            return secret
        with self._lock:
            if secret is None or not secret.fresh(self.leeway):
                self._kept.pop(key, None)
            elif self.max_kept:
                self._kept[key] = secret
                self._kept.move_to_end(key)
                while len(self._kept) > self.max_kept:
                    self._kept.popitem(last=False)
        return secret

    def get(self, request: CredentialRequest) -> Secret | None:
        """The secret for `request` (kept, or fetched), from sync code; None: none."""
        key = self._key(request)
        kept = self._kept_secret(key, request.refresh)
        if kept is not None:
            return kept
        return self._keep(key, credential(self.fetch, request))

    async def aget(self, request: CredentialRequest) -> Secret | None:
        """The secret for `request` (kept, or fetched), from async code; None: none."""
        key = self._key(request)
        kept = self._kept_secret(key, request.refresh)
        if kept is not None:
            return kept
        return self._keep(key, await acredential(self.fetch, request))

    def forget(self, context: Any = None) -> None:
        """Drop the kept secrets of the user of `context` (every user's when None)."""
        with self._lock:
            if context is None:
                self._kept.clear()
                return
            user = self.user_of(context)
            for key in [k for k in self._kept if k[0] == user]:
                del self._kept[key]


def _as_secret(answer: object) -> Secret | None:
    if answer is None or isinstance(answer, Secret):
        return answer
    if isinstance(answer, str):
        return Secret(answer)
    raise UsageError(
        f"a credential provider returned {with_article(type(answer).__name__)}; return a "
        "Secret, a str or None (this caller has no credential)"
    )


def as_credentials(value: object, where: str) -> Credentials | None:
    """`credentials=` as given to `where`: a `Credentials`, a plain fetch function (wrapped,
    with the defaults), or None."""
    if value is None or isinstance(value, Credentials):
        return value
    if callable(value):
        return Credentials(value)
    raise UsageError(
        f"{where}(credentials=...): a Credentials(fetch, ...) or a fetch function, not "
        f"{type(value).__name__}"
    )


REDACTED = "[redacted]"


def scrub(text: str, secrets: Iterable[Secret]) -> str:
    """`text` with every form of each secret replaced by `[redacted]`."""
    for secret in secrets:
        for form in secret.texts():
            if form in text:
                text = text.replace(form, REDACTED)
    return text
