"""An HTTP API's OpenAPI document as a toolset: one tool per operation.

```python
from toolreg.sources import OpenAPI

with OpenAPI.from_url("http://127.0.0.1:8000/openapi.json") as api:
    api.dispatcher.dispatch_tool("get_item", {"item_id": 3})     # checked here, run there
    Conversation(client, model, toolset=combined(registry, api))
```

`OpenAPI(document)` reads an OpenAPI 3.0 or 3.1 document (a dict, its JSON or YAML text,
a `pathlib.Path`; `from_url` / `from_file` fetch or read it) as untrusted input (see
`document`): bounded, its `$ref`s followed inside it only. Each operation becomes a tool:

- **Named** by its `operationId`, else its method and path (`get_pets_petId`), with any
  character a provider refuses replaced by `_` and cut to 64 characters (with a hash of the
  whole); `names={"operationId or METHOD /path": "name"}` renames. Two operations that
  would get one name are an `OpenAPIError` naming both.
- **Described** by its `summary` and `description` (a `title` from the summary).
- **Parameters**: its path, query, header and cookie parameters and its request body are
  folded into one JSON Schema object. Each parameter is a property named as in the API
  (a character outside `a-z A-Z 0-9 _ . -` becomes `_`). A JSON or form body whose schema
  is an object with `properties` has those properties folded in too; any other body is the
  property `body`. When two of these get one name (`id` in the path and in the query),
  each of them gets its location appended (`id_path`, `id_query`, `id_body`), and a
  clash still left a number (`_2`, `_3`), in the order path, query, header, cookie, body.
- **Output schema**: the first 2xx response's JSON schema, when it is a closed object (the
  strict output schema a tool can carry); else none.
- **Flags**: GET, HEAD and OPTIONS are `read_only`; DELETE is `destructive` (dispatch asks
  `confirm=` first); PUT and DELETE are `idempotent`. The operation's `tags` are the tool's.

A call is validated against that schema, then sent (see `http`): parameters written as
`style` / `explode` say, to the one base URL (`base_url=`, else the document's first server,
relative to where the document came from), `timeout` seconds for the whole call, at most
`max_response_bytes` of the answer read, no redirect followed outside the base URL. A
`credentials=` provider (`credentials`) is asked, for each call, for the calling user's
secret for the operation's security scheme (bearer, basic, an API key in a header, the
query or a cookie; OAuth 2 and OpenID Connect as bearer tokens); a user without one gets an
observation saying so. Sync dispatch sends through a sync client, async dispatch through an
async one; `with` / `async with` (or `close()` / `aclose()`) close their connections.

An operation that cannot be made a tool (a `$ref` to another document, a schema past the
limits, a body media type toolreg does not send, such as multipart) is left out with a
warning, and `refused` says why.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import os
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from ..definition.injection import instructions_to_model
from ..definition.names import NAME_RULES, check_name
from ..definition.strict import strict_problem
from ..dispatch import DispatchSettings
from ..errors import ToolDefinitionError, ToolFailed, UsageError
from ..params import ToolContext
from ..registry import default_registry
from ..tool import Tool
from ..toolsets import BaseToolset
from .credentials import CredentialRequest, Credentials, Secret, as_credentials
from .document import (
    MAX_DOCUMENT_BYTES,
    OpenAPIError,
    RefRefused,
    Resolver,
    SchemaBundle,
    checked_document,
    parse_document,
)
from .http import (
    ApiResponse,
    BodySpec,
    Deadline,
    ParamSpec,
    Prepared,
    Received,
    RequestPlan,
    SchemeSpec,
    Where,
    answer,
    apply_secret,
    asend,
    prepare,
    send,
    unreachable,
)

__all__ = ["MAX_OPERATIONS", "OpenAPI", "Operation"]

_log = logging.getLogger("toolreg.sources")

MAX_OPERATIONS = 2000
"""Operations in one document (the largest public APIs have about a thousand)."""
MAX_DESCRIPTION_CHARS = 4000
"""Characters of a tool's description taken from the document (cut with a marker)."""
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_READ_ONLY = frozenset({"get", "head", "options"})
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_CONTEXT = "toolreg_context"
_PROPERTY = re.compile(r"[^a-zA-Z0-9_.-]")
_NAME = re.compile(r"[^a-zA-Z0-9_-]+")
_LOCATIONS = ("path", "query", "header", "cookie")
_STYLES = {
    "path": ("simple", "label", "matrix"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject"),
    "header": ("simple",),
    "cookie": ("form",),
}
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}


@dataclass(frozen=True, slots=True)
class Operation:
    """The operation a tool calls: its `method` and `path` in the API, its `operation_id`
    (None when it has none) and the `RequestPlan` a call follows."""

    tool: str
    method: str
    path: str
    operation_id: str | None
    plan: RequestPlan

    @property
    def label(self) -> str:
        """`GET /pets/{petId}` (with `(operationId 'x')` when it has one)."""
        said = f"{self.method.upper()} {self.path}"
        return said + (f" (operationId {self.operation_id!r})" if self.operation_id else "")


class _Refused(Exception):
    """An operation that cannot be a tool; the message says why."""


class OpenAPI(BaseToolset):
    """The operations of an OpenAPI document as tools (see the module).

    Args:
        document: the document: a dict, its text (JSON or YAML, a `str` or `bytes`), or a
            `pathlib.Path` of a file.
        base_url: where calls go (default: the document's first `servers` URL, resolved
            against `document_url`).
        document_url: where the document came from (`from_url` sets it).
        credentials: a `Credentials` provider (or a fetch function), asked per call.
        include: keep only these operations (tool names or operationIds).
        names: rename operations: `{"operationId or METHOD /path": "tool_name"}`.
        headers: sent with every call (after the toolset's own; never a user's secret).
        timeout: seconds for a whole call, redirects and reading included.
        max_response_bytes: the most of an answer read; a longer one is cut with a marker.

    Raises:
        OpenAPIError: the document is malformed, past a limit, not OpenAPI 3.0/3.1, or two
            operations would make one tool name.
        UsageError: an option is wrong (a relative base URL, `include` naming nothing...).
    """

    def __init__(
        self,
        document: Mapping[str, Any] | str | bytes | os.PathLike[str],
        *,
        base_url: str | None = None,
        document_url: str | None = None,
        credentials: Credentials | Callable[[CredentialRequest], Any] | None = None,
        include: Iterable[str] | None = None,
        names: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        max_response_bytes: int = 1_000_000,
    ) -> None:
        super().__init__()
        self.timeout = _positive("timeout", timeout)
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise UsageError("OpenAPI(max_response_bytes=...): a whole number of bytes >= 1")
        self.max_response_bytes = max_response_bytes
        self.credentials = as_credentials(credentials, "OpenAPI")
        self.headers = _headers(headers)
        self.document = _document(document)
        self.openapi_30 = str(self.document["openapi"]).startswith("3.0.")
        info = self.document.get("info")
        self.title = str(info.get("title") or "") if isinstance(info, dict) else ""
        self.base_url = _base_url(self.document, base_url, document_url)
        self.refused: dict[str, str] = {}
        """Operations left out (`GET /path`), with why."""
        self.operations: dict[str, Operation] = {}
        """The operation each tool calls, by tool name."""
        self._tools: dict[str, Tool] = {}
        self._transport: Any = None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._scheme_specs = self._schemes()
        self._build(include, names)

    # -- sources of documents -------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **options: Any) -> OpenAPI:
        """The document in the file `path` (JSON or YAML); see the class for `options`."""
        return cls(Path(path), **options)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> OpenAPI:
        """The document at `url` (fetched now, within the size limit and `timeout`); server
        URLs in it that are relative resolve against `url`. See the class for `options`."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UsageError(f"OpenAPI.from_url({url!r}): an http:// or https:// URL")
        timeout = _positive("timeout", options.get("timeout", 30.0))
        text = _fetch(url, _headers(options.get("headers")), timeout)
        options.setdefault("document_url", url)
        return cls(text, **options)

    # -- the toolset -----------------------------------------------------------------------------
    @property
    def label(self) -> str:  # type: ignore[override]
        return f"the OpenAPI document {self.title or self.base_url!r}"

    @property
    def revision(self) -> int:
        return 0  # built once: the tools never change

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def dispatch_settings(self) -> DispatchSettings:
        return default_registry.settings

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    # -- connections ---------------------------------------------------------------------------
    def __enter__(self) -> OpenAPI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> OpenAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Close the sync client's connections (a later call opens new ones)."""
        with self._lock:
            transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()

    async def aclose(self) -> None:
        """Close this event loop's async connections, and the sync client's."""
        transport = self._async.pop(asyncio.get_running_loop(), None)
        if transport is not None:
            await transport.aclose()
        self.close()

    def _sync_transport(self) -> Any:
        with self._lock:
            if self._transport is None:
                import httpx2

                self._transport = httpx2.HTTPTransport(retries=0)
            return self._transport

    def _async_transport(self) -> Any:
        loop = asyncio.get_running_loop()
        transport = self._async.get(loop)
        if transport is None:
            import httpx2

            transport = self._async[loop] = httpx2.AsyncHTTPTransport(retries=0)
        return transport

    # -- building -------------------------------------------------------------------------------
    def _build(self, include: Iterable[str] | None, names: Mapping[str, str] | None) -> None:
        renames = _renames(names)
        found = list(self._operations())
        chosen = _included(found, include)
        taken: dict[str, str] = {}
        for method, path, item, operation in found:
            label = f"{method.upper()} {path}"
            operation_id = operation.get("operationId")
            operation_id = operation_id if isinstance(operation_id, str) else None
            if chosen is not None and (label, operation_id) not in chosen:
                continue
            name = renames.get(label) or (renames.get(operation_id) if operation_id else None)
            name = name or _tool_name(operation_id or f"{method} {path}")
            said = label + (f" (operationId {operation_id!r})" if operation_id else "")
            if name in taken:
                raise OpenAPIError(
                    f"the operations {taken[name]} and {said} both make the tool name "
                    f"{name!r}; rename one: OpenAPI(..., names={{{label!r}: 'another_name'}})"
                )
            taken[name] = said
            try:
                tool, plan = self._tool(name, method, path, item, operation)
            except (_Refused, RefRefused) as exc:
                self._refuse(label, str(exc))
                continue
            except ToolDefinitionError as exc:
                self._refuse(label, exc.problem)
                continue
            self._tools[name] = tool
            self.operations[name] = Operation(name, method, path, operation_id, plan)

    def _refuse(self, label: str, reason: str) -> None:
        self.refused[label] = reason
        _log.warning("left out the operation %s of %s: %s", label, self.label, reason)

    def _operations(self) -> Iterable[tuple[str, str, dict[str, Any], dict[str, Any]]]:
        """(method, path, path item, operation) of every operation, in document order."""
        resolver = Resolver(self.document)
        count = 0
        paths = self.document.get("paths") or {}
        for path, item in paths.items():
            try:
                item = resolver.follow(item)
            except RefRefused as exc:
                self._refuse(f"{path}", str(exc))
                continue
            if not isinstance(item, dict) or not path.startswith("/"):
                continue
            for method in _METHODS:
                operation = item.get(method)
                if not isinstance(operation, dict):
                    continue
                count += 1
                if count > MAX_OPERATIONS:
                    raise OpenAPIError(
                        f"the OpenAPI document has more than {MAX_OPERATIONS:,} operations "
                        "(toolreg's limit)"
                    )
                yield method, path, item, operation

    def _tool(
        self, name: str, method: str, path: str, item: dict[str, Any], operation: dict[str, Any]
    ) -> tuple[Tool, RequestPlan]:
        resolver = Resolver(self.document)
        bundle = SchemaBundle(resolver, self.openapi_30, "request")
        folded = _Folded()
        for where, spec, given, needed, text in self._parameters(resolver, path, item, operation):
            folded.add(where, spec.name, given, needed, text, spec)
        body = self._body(resolver, bundle, operation, folded)
        properties, required, params = folded.finish(bundle)
        _check_template(path, params)
        defs = _reachable(properties, bundle.finish())
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        if defs:
            schema["$defs"] = defs
        plan = RequestPlan(
            name,
            method,
            path,
            tuple(params),
            body.spec(folded) if body is not None else None,
            self._security(operation),
        )
        context = _CONTEXT
        while context in properties:
            context += "_"
        description = _description(operation, method, path)
        self._warn_of_instructions(name, description)
        summary = operation.get("summary")
        tags = operation.get("tags")
        options: dict[str, Any] = {
            "read_only": method in _READ_ONLY,
            "destructive": method == "delete",
            "idempotent": method in ("put", "delete"),
            "title": summary.strip()[:200]
            if isinstance(summary, str) and summary.strip()
            else None,
            "result_filter": _shown,
            "tags": [t for t in tags if isinstance(t, str) and t][:20]
            if isinstance(tags, list)
            else (),
        }
        call, acall = self._functions(plan, context)
        output = self._output_schema(resolver, operation)

        def build(**extra: Any) -> Tool:
            return Tool.from_schema(
                name,
                schema,
                call,
                description=description,
                untrusted=True,
                context_parameter=context,
                async_function=acall,
                **options,
                **extra,
            )

        if output is not None and strict_problem(output, signature=False) is None:
            try:
                return build(output_schema=output), plan
            except ToolDefinitionError:
                pass  # it does not fit as a strict output schema: the tool goes without
        return build(), plan

    def _parameters(
        self,
        resolver: Resolver,
        path: str,
        item: dict[str, Any],
        operation: dict[str, Any],
    ) -> Iterable[tuple[str, ParamSpec, Any, bool, str]]:
        """(location, spec, schema, required, description) of each parameter, the
        operation's own overriding the path item's of the same name and location."""
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for source in (item.get("parameters"), operation.get("parameters")):
            if source is None:
                continue
            if not isinstance(source, list):
                raise _Refused("its 'parameters' is not a list")
            for raw in source:
                param = resolver.follow(raw)
                if not isinstance(param, dict):
                    raise _Refused("a parameter is not an object")
                name, where = param.get("name"), param.get("in")
                if not isinstance(name, str) or not name or where not in _LOCATIONS:
                    raise _Refused(f"a parameter has no name or location ({_said(name)})")
                merged[(where, name)] = param
        ordered = sorted(merged.items(), key=lambda kv: _LOCATIONS.index(kv[0][0]))
        for (where, name), param in ordered:
            if where == "header" and name.lower() in _IGNORED_HEADERS:
                continue  # the OpenAPI specification: such a definition SHALL be ignored
            style = param.get("style", _DEFAULT_STYLE[where])
            if style not in _STYLES[where]:
                raise _Refused(f"the {where} parameter {_said(name)} has style {_said(style)}")
            explode = param.get("explode", style == "form")
            schema, as_json = param.get("schema"), False
            content = param.get("content")
            if schema is None and isinstance(content, dict) and content:
                media, entry = next(iter(content.items()))
                if "json" not in str(media) or not isinstance(entry, dict):
                    raise _Refused(f"the parameter {_said(name)} is sent as {_said(media)}")
                schema, as_json = entry.get("schema", {}), True
            if schema is None:
                schema = {}
            spec = ParamSpec(
                "",
                name,
                cast(Where, where),
                str(style),
                bool(explode),
                bool(param.get("allowReserved", False)),
                as_json,
            )
            text = param.get("description")
            text = text if isinstance(text, str) else ""
            if param.get("deprecated") is True:
                text = f"(deprecated) {text}".strip()
            required = where == "path" or param.get("required") is True
            yield where, spec, schema, required, text

    def _body(
        self,
        resolver: Resolver,
        bundle: SchemaBundle,
        operation: dict[str, Any],
        folded: _Folded,
    ) -> _Body | None:
        raw = operation.get("requestBody")
        if raw is None:
            return None
        body = resolver.follow(raw)
        if not isinstance(body, dict):
            raise _Refused("its request body is not an object")
        content = body.get("content")
        if not isinstance(content, dict) or not content:
            return None
        media, kind = _media_of(content)
        entry = content[media]
        schema = entry.get("schema", {}) if isinstance(entry, dict) else {}
        required = body.get("required") is True
        text = body.get("description")
        converted = bundle.convert(schema)
        bundle.finish()  # the defs a top-level $ref leads to, to see the object inside
        target = bundle.resolved(converted) if kind != "text" else None
        if (
            isinstance(target, dict)
            and isinstance(target.get("properties"), dict)
            and target.get("type", "object") == "object"
            and not any(k in target for k in ("allOf", "anyOf", "oneOf", "not", "if"))
            and target.get("additionalProperties") in (None, False)
            and not target.get("patternProperties")
        ):
            needed = target.get("required")
            needed = needed if isinstance(needed, list) else []
            keys = []
            for key, sub in target["properties"].items():
                keys.append(folded.add("body", key, sub, required and key in needed, "", None))
            return _Body(kind, media, None, tuple(keys))
        if kind == "text":
            converted = {"type": "string"}
        if isinstance(text, str) and text.strip() and isinstance(converted, dict):
            converted = {**converted, "description": text.strip()}
        return _Body(kind, media, folded.add("body", "body", converted, required, "", None), ())

    def _security(
        self, operation: dict[str, Any]
    ) -> tuple[tuple[tuple[SchemeSpec, tuple[str, ...]], ...], ...]:
        needs = operation.get("security", self.document.get("security"))
        if not isinstance(needs, list) or not needs:
            return ()
        schemes = self._scheme_specs
        alternatives = []
        for requirement in needs:
            if not isinstance(requirement, dict):
                continue
            alternative = []
            for scheme_name, scopes in requirement.items():
                scheme = schemes.get(scheme_name)
                if scheme is None:
                    break
                given = (
                    tuple(s for s in scopes if isinstance(s, str))
                    if isinstance(scopes, list)
                    else ()
                )
                alternative.append((scheme, given))
            else:
                alternatives.append(tuple(alternative))
        return tuple(alternatives)

    def _schemes(self) -> dict[str, SchemeSpec]:
        """The document's security schemes toolreg can send a secret for, by name."""
        resolver = Resolver(self.document)
        components = self.document.get("components")
        found = components.get("securitySchemes") if isinstance(components, dict) else None
        specs: dict[str, SchemeSpec] = {}
        for name, raw in (found or {}).items() if isinstance(found, dict) else ():
            try:
                scheme = resolver.follow(raw)
            except RefRefused:
                continue
            spec = _scheme(name, scheme) if isinstance(scheme, dict) else None
            if spec is not None:
                specs[name] = spec
            else:
                _log.warning(
                    "%s: the security scheme %s is of a kind toolreg cannot send; operations "
                    "that need it alone are called without credentials",
                    self.label,
                    _said(name),
                )
        return specs

    def _output_schema(self, resolver: Resolver, operation: dict[str, Any]) -> Any:
        """The first 2xx response's JSON schema, converted, when it may be a closed object."""
        responses = operation.get("responses")
        if not isinstance(responses, dict):
            return None
        for code in sorted(str(c) for c in responses):
            if not code.startswith("2"):
                continue
            try:
                response = resolver.follow(responses[code])
                content = response.get("content") if isinstance(response, dict) else None
                entry = (
                    next((v for k, v in (content or {}).items() if "json" in str(k)), None)
                    if isinstance(content, dict)
                    else None
                )
                if not isinstance(entry, dict) or "schema" not in entry:
                    return None
                top = resolver.follow(entry["schema"])
                if not (isinstance(top, dict) and top.get("additionalProperties") is False):
                    return None
                bundle = SchemaBundle(resolver, self.openapi_30, "response")
                schema = bundle.convert(entry["schema"])
                defs = bundle.finish()
                target = bundle.resolved(schema)
                if not isinstance(target, dict):
                    return None
                defs = _reachable(target, defs)
                return {**target, "$defs": defs} if defs else target
            except RefRefused:
                return None
        return None

    def _warn_of_instructions(self, name: str, description: str) -> None:
        phrases = instructions_to_model(description)
        if phrases:
            _log.warning(
                "the operation of the tool %s in %s has a description that reads like "
                "instructions to the model, a prompt injection?: %s",
                name,
                self.label,
                ", ".join(ascii(p) for p in phrases),
            )

    # -- calls ------------------------------------------------------------------------------------
    def _functions(
        self, plan: RequestPlan, context: str
    ) -> tuple[Callable[..., ApiResponse], Callable[..., Awaitable[ApiResponse]]]:
        def call(**arguments: Any) -> ApiResponse:
            ctx: ToolContext[Any] = arguments.pop(context)
            return self._run(self._flow(plan, arguments, ctx.deps))

        async def acall(**arguments: Any) -> ApiResponse:
            ctx: ToolContext[Any] = arguments.pop(context)
            return await self._arun(self._flow(plan, arguments, ctx.deps))

        label = f"openapi:{plan.method.upper()} {plan.path}"
        for fn in (call, acall):
            fn.__name__ = fn.__qualname__ = label
        return call, acall

    def _flow(
        self, plan: RequestPlan, arguments: dict[str, Any], deps: Any
    ) -> Generator[_Effect, Any, ApiResponse]:
        """One call, as the effects it needs (a credential asked for, a request sent) and
        what it makes of their answers: the sync and async drivers only perform them."""
        deadline = Deadline(self.timeout)
        chosen: list[tuple[SchemeSpec, tuple[str, ...], Secret]] = []
        if self.credentials is not None and plan.security:
            chosen = yield from self._choose(plan, deps)
        request = self._request(plan, arguments, chosen)
        secrets = [secret for _, _, secret in chosen]
        received: Received = yield _Send(plan.tool, request, deadline, secrets)
        if received[0] == 401 and chosen:  # refused: ask once for fresh ones, and retry once
            fresh = []
            for scheme, scopes, _ in chosen:
                ask = CredentialRequest(deps, scheme.name, scheme.kind, plan.tool, scopes, True)
                renewed = yield _Ask(ask)
                if renewed is None:
                    break
                fresh.append((scheme, scopes, renewed))
            changed = any(new[2].value != old[2].value for new, old in zip(fresh, chosen))
            if len(fresh) == len(chosen) and changed:
                secrets += [secret for _, _, secret in fresh]
                request = self._request(plan, arguments, fresh)
                received = yield _Send(plan.tool, request, deadline, secrets)
        return answer(plan.tool, *received, self.max_response_bytes, secrets)

    def _choose(
        self, plan: RequestPlan, deps: Any
    ) -> Generator[_Effect, Any, list[tuple[SchemeSpec, tuple[str, ...], Secret]]]:
        """The first alternative of the operation's security that this caller has every
        secret of; a `ToolFailed` when there is none."""
        for alternative in plan.security:
            got = []
            for scheme, scopes in alternative:
                ask = CredentialRequest(deps, scheme.name, scheme.kind, plan.tool, scopes)
                secret = yield _Ask(ask)
                if secret is None:
                    break
                got.append((scheme, scopes, secret))
            else:
                return got
        wanted = sorted({scheme.name for alt in plan.security for scheme, _ in alt})
        raise ToolFailed(
            f"Tool '{plan.tool}' needs a credential ({', '.join(wanted)}) that the current user "
            "does not have: ask the user to sign in or connect the account first."
        )

    def _request(
        self,
        plan: RequestPlan,
        arguments: dict[str, Any],
        chosen: list[tuple[SchemeSpec, tuple[str, ...], Secret]],
    ) -> Prepared:
        request = prepare(plan, self.base_url, arguments, self.headers)
        for scheme, _, secret in chosen:
            apply_secret(request, scheme, secret)
        return request

    def _run(self, flow: Generator[_Effect, Any, ApiResponse]) -> ApiResponse:
        import httpx2

        value: Any = None
        try:
            while True:
                try:
                    effect = flow.send(value)
                except StopIteration as done:
                    result: ApiResponse = done.value
                    return result
                if isinstance(effect, _Ask):
                    assert self.credentials is not None
                    value = self.credentials.get(effect.request)
                    continue
                tool = effect.tool
                try:
                    value = send(
                        self._sync_transport(),
                        tool,
                        effect.request,
                        self.base_url,
                        effect.deadline,
                        self.max_response_bytes,
                    )
                except httpx2.HTTPError as exc:
                    raise unreachable(tool, exc, effect.secrets) from None
        finally:
            flow.close()

    async def _arun(self, flow: Generator[_Effect, Any, ApiResponse]) -> ApiResponse:
        import httpx2

        value: Any = None
        try:
            while True:
                try:
                    effect = flow.send(value)
                except StopIteration as done:
                    result: ApiResponse = done.value
                    return result
                if isinstance(effect, _Ask):
                    assert self.credentials is not None
                    value = await self.credentials.aget(effect.request)
                    continue
                tool = effect.tool
                try:
                    value = await asend(
                        self._async_transport(),
                        tool,
                        effect.request,
                        self.base_url,
                        effect.deadline,
                        self.max_response_bytes,
                    )
                except httpx2.HTTPError as exc:
                    raise unreachable(tool, exc, effect.secrets) from None
        finally:
            flow.close()


# -- effects of a call ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ask:
    request: CredentialRequest


@dataclass(frozen=True, slots=True)
class _Send:
    tool: str
    request: Prepared
    deadline: Deadline
    secrets: list[Secret]


_Effect = _Ask | _Send


# -- folding parameters into one schema ---------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    where: str
    name: str
    schema: Any
    required: bool
    text: str
    spec: ParamSpec | None  # None: a body property
    prop: str = ""


class _Folded:
    """Parameters and body properties on their way to one schema's properties."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []

    def add(
        self, where: str, name: str, schema: Any, required: bool, text: str, spec: ParamSpec | None
    ) -> int:
        self.entries.append(_Entry(where, name, schema, required, text, spec))
        return len(self.entries) - 1

    def finish(self, bundle: SchemaBundle) -> tuple[dict[str, Any], list[str], list[ParamSpec]]:
        """The properties (names made distinct, see the module), the required ones, and
        each parameter's spec with its property."""
        base = [_property_name(e.name) for e in self.entries]
        counts: dict[str, int] = {}
        for name in base:
            counts[name] = counts.get(name, 0) + 1
        chosen: set[str] = set()
        for entry, name in zip(self.entries, base):
            if counts[name] > 1:
                name = _property_name(f"{name}_{entry.where}")
            candidate, n = name, 2
            while candidate in chosen:
                candidate, n = _property_name(f"{name}_{n}"), n + 1
            chosen.add(candidate)
            entry.prop = candidate
        properties: dict[str, Any] = {}
        required: list[str] = []
        params: list[ParamSpec] = []
        for entry in self.entries:
            schema = bundle.convert(entry.schema) if entry.spec is not None else entry.schema
            if entry.text and isinstance(schema, dict):
                schema = {**schema, "description": entry.text}
            properties[entry.prop] = schema
            if entry.required:
                required.append(entry.prop)
            if entry.spec is not None:
                params.append(dataclasses.replace(entry.spec, prop=entry.prop))
        return properties, required, params


@dataclass(frozen=True, slots=True)
class _Body:
    kind: Literal["json", "form", "text"]
    media: str
    index: int | None  # the entry holding the whole body
    keys: tuple[int, ...]  # the entries of its properties, folded

    def spec(self, folded: _Folded) -> BodySpec:
        if self.index is not None:
            return BodySpec(self.kind, self.media, folded.entries[self.index].prop)
        fields = tuple((folded.entries[i].prop, folded.entries[i].name) for i in self.keys)
        return BodySpec(self.kind, self.media, None, fields)


# -- small pieces -------------------------------------------------------------------------------


def _reachable(properties: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The `$defs` that `properties` use, directly or through one another (a body folded
    into the properties leaves its own definition unused)."""
    used: set[str] = set()
    todo: list[Any] = [properties]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                token = ref[len("#/$defs/") :].partition("/")[0]
                name = token.replace("~1", "/").replace("~0", "~")
                if name not in used and name in defs:
                    used.add(name)
                    todo.append(defs[name])
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return {name: schema for name, schema in defs.items() if name in used}


def _shown(response: ApiResponse) -> Any:
    """What the model reads of a response: JSON data as JSON, anything else as text."""
    if isinstance(response.data, (dict, list)) and not response.truncated:
        return response.data
    return response.text


def _media_of(content: dict[str, Any]) -> tuple[str, Literal["json", "form", "text"]]:
    """The media type a body is sent as: JSON first, then a form, then text."""
    medias = [str(m) for m in content]
    for media in medias:
        kind, _, _ = media.partition(";")
        kind = kind.strip().lower()
        if kind == "application/json" or kind.endswith("+json") or kind == "*/*":
            return media, "json"
    for media in medias:
        if media.partition(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            return media, "form"
    for media in medias:
        if media.lower().startswith("text/"):
            return media, "text"
    raise _Refused(f"its request body is {_said(medias[0])}, which toolreg does not send")


def _scheme(name: str, scheme: dict[str, Any]) -> SchemeSpec | None:
    kind = scheme.get("type")
    if kind == "http":
        how = str(scheme.get("scheme", "")).lower()
        if how == "bearer":
            return SchemeSpec(name, "bearer")
        if how == "basic":
            return SchemeSpec(name, "basic")
        return None
    if kind in ("oauth2", "openIdConnect"):
        return SchemeSpec(name, "bearer")
    if kind == "apiKey":
        where, param = scheme.get("in"), scheme.get("name")
        if where in ("header", "query", "cookie") and isinstance(param, str) and param:
            return SchemeSpec(name, "apiKey", where, param)
    return None


def _property_name(name: str) -> str:
    cleaned = _PROPERTY.sub("_", name)[:64]
    return cleaned or "_"


def _tool_name(raw: str) -> str:
    """A name every provider accepts, made from an operationId or `method_path`."""
    name = _NAME.sub("_", raw).strip("_") or "operation"
    if not (name[0].isascii() and (name[0].isalpha() or name[0] == "_")):
        name = "op_" + name
    if len(name) > 64:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = name[:55].rstrip("_-") + "_" + digest
    return name


def _portable(name: str) -> bool:
    return all(check_name(name, rule) is None for rule in NAME_RULES.values())


def _renames(names: Mapping[str, str] | None) -> dict[str, str]:
    if names is None:
        return {}
    if not isinstance(names, Mapping):
        raise UsageError('OpenAPI(names=...): a dict, e.g. names={"GET /pets": "list_pets"}')
    for key, value in names.items():
        if not isinstance(key, str) or not isinstance(value, str) or not _portable(value):
            raise UsageError(
                f"OpenAPI(names={{{key!r}: {value!r}}}): the new name must be 1-64 of a-z A-Z "
                "0-9 _ -, a letter or _ first (what every provider accepts)"
            )
    return {_normal_label(k): v for k, v in names.items()}


def _normal_label(key: str) -> str:
    """`get /pets` -> `GET /pets`; an operationId stays as it is."""
    method, _, path = key.partition(" ")
    if method.lower() in _METHODS and path.startswith("/"):
        return f"{method.upper()} {path}"
    return key


def _included(
    found: list[tuple[str, str, dict[str, Any], dict[str, Any]]], include: Iterable[str] | None
) -> set[tuple[str, str | None]] | None:
    if include is None:
        return None
    if isinstance(include, str):
        raise UsageError(f"OpenAPI(include=...): a list of names, e.g. include=[{include!r}]")
    wanted = {_normal_label(n) for n in include if isinstance(n, str)}
    chosen: set[tuple[str, str | None]] = set()
    matched: set[str] = set()
    for method, path, _, operation in found:
        label = f"{method.upper()} {path}"
        operation_id = operation.get("operationId")
        operation_id = operation_id if isinstance(operation_id, str) else None
        keys = {label, _tool_name(operation_id or f"{method} {path}")}
        if operation_id:
            keys.add(operation_id)
        if keys & wanted:
            chosen.add((label, operation_id))
            matched |= keys & wanted
    missing = sorted(wanted - matched)
    if missing:
        raise UsageError(
            f"OpenAPI(include=...) names {', '.join(map(repr, missing))}, which the document "
            "has no operation for (give tool names, operationIds or 'GET /path')"
        )
    return chosen


def _check_template(path: str, params: list[ParamSpec]) -> None:
    names = set(re.findall(r"\{([^{}]*)\}", path))
    have = {spec.name for spec in params if spec.where == "path"}
    missing = names - have
    if missing:
        raise _Refused(f"its path has {{{sorted(missing)[0]}}}, which no parameter fills")


def _description(operation: dict[str, Any], method: str, path: str) -> str:
    parts = [
        text.strip()
        for text in (operation.get("summary"), operation.get("description"))
        if isinstance(text, str) and text.strip()
    ]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    text = "\n\n".join(parts) or f"{method.upper()} {path}"
    if operation.get("deprecated") is True:
        text = f"(deprecated) {text}"
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[:MAX_DESCRIPTION_CHARS] + " [cut]"
    return text


def _said(value: object) -> str:
    shown = ascii(value)
    return shown if len(shown) <= 60 else shown[:56] + "...'"


def _positive(name: str, value: object) -> float:
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"OpenAPI({name}={value!r}): a positive number of seconds")
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"OpenAPI({name}={value!r}): a positive number of seconds")
    return float(value)


def _headers(headers: object) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise UsageError("OpenAPI(headers=...): a dict of header names to string values")
    return dict(headers)


def _document(document: object) -> dict[str, Any]:
    if isinstance(document, Mapping):
        return checked_document(dict(document))
    if isinstance(document, (str, bytes)):
        return parse_document(document)
    if isinstance(document, os.PathLike):
        path = Path(document)
        try:
            size = path.stat().st_size
            if size > MAX_DOCUMENT_BYTES:
                raise OpenAPIError(
                    f"the OpenAPI document {path.name} is {size:,} bytes long (toolreg's "
                    f"limit: {MAX_DOCUMENT_BYTES:,})"
                )
            return parse_document(path.read_bytes())
        except OSError as exc:
            raise UsageError(f"cannot read the OpenAPI document {path}: {exc.strerror}") from None
    raise UsageError(
        f"OpenAPI(document): a dict, its text or a pathlib.Path, not {type(document).__name__}"
    )


def _base_url(document: dict[str, Any], base_url: str | None, document_url: str | None) -> str:
    from urllib.parse import urljoin, urlsplit

    if base_url is not None:
        url = base_url
        said = f"base_url={base_url!r}"
    else:
        servers = document.get("servers")
        first = servers[0] if isinstance(servers, list) and servers else {}
        url = first.get("url", "/") if isinstance(first, dict) else "/"
        url = url if isinstance(url, str) else "/"
        variables = first.get("variables") if isinstance(first, dict) else None
        if isinstance(variables, dict):
            for name, variable in variables.items():
                default = variable.get("default") if isinstance(variable, dict) else None
                if isinstance(default, str):
                    url = url.replace("{" + str(name) + "}", default)
        if document_url is not None:
            url = urljoin(document_url, url)
        said = f"the document's server URL {url!r}"
    if not isinstance(url, str):
        raise UsageError(f"OpenAPI(base_url={url!r}): an http:// or https:// URL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or "{" in url:
        raise UsageError(
            f"{said} is not an absolute http(s) URL: pass base_url='https://api.example.com'"
        )
    return parts._replace(query="", fragment="").geturl().rstrip("/")


_MAX_FETCH_REDIRECTS = 5


def _fetch(url: str, headers: dict[str, str], timeout: float) -> bytes:
    """The document at `url`: at most `MAX_DOCUMENT_BYTES`, within `timeout` seconds,
    following redirects on the same origin only."""
    import httpx2

    from .http import within

    deadline = Deadline(timeout)
    origin = _origin(url)
    try:
        with httpx2.HTTPTransport(retries=0) as transport:
            for _ in range(_MAX_FETCH_REDIRECTS + 1):
                request = httpx2.Request(
                    "GET",
                    url,
                    headers={
                        "Accept": "application/json, application/yaml;q=0.9, */*;q=0.5",
                        **headers,
                    },
                    extensions={"timeout": deadline.timeouts()},
                )
                response = transport.handle_request(request)
                try:
                    location = response.headers.get("location")
                    if response.status_code in (301, 302, 303, 307, 308) and location:
                        from urllib.parse import urljoin

                        url = urljoin(url, location)
                        if not within(origin, url):
                            raise UsageError(
                                "the OpenAPI document's URL redirects to another origin "
                                f"({_origin(url)}); give that URL itself"
                            )
                        continue
                    if response.status_code != 200:
                        raise UsageError(
                            f"fetching the OpenAPI document answered HTTP {response.status_code}"
                        )
                    chunks, size = [], 0
                    for chunk in response.iter_bytes():
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > MAX_DOCUMENT_BYTES:
                            raise OpenAPIError(
                                f"the OpenAPI document is longer than {MAX_DOCUMENT_BYTES:,} "
                                "bytes (toolreg's limit)"
                            )
                        if deadline.left() <= 0:
                            raise httpx2.ReadTimeout("the time ran out")
                    return b"".join(chunks)
                finally:
                    response.close()
    except httpx2.HTTPError as exc:
        raise UsageError(
            f"cannot fetch the OpenAPI document from {_origin(url)}: {type(exc).__name__}"
        ) from None
    raise UsageError(f"the OpenAPI document's URL redirects more than {_MAX_FETCH_REDIRECTS} times")


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
