"""`ToolRegistry`: a name -> `Tool` map with the verbs register, export and dispatch.

Every `ToolRegistry()` is fresh and independent. The module-level `register_tool`,
`get_tools` and `dispatch_tool` (in `toolreg`) act on `default_registry`.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from types import FunctionType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, overload

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

from . import formats
from .content import MAX_RESULT_BYTES
from .definition.options import ResultFilter
from .dispatch import (
    Dispatcher,
    DispatchSettings,
    DispatchVerb,
    ErrorMode,
)
from .dispatch.calling import rank
from .errors import DuplicateToolError, ToolDefinitionError, ToolNotFoundError, UsageError
from .formats import export_tools
from .tool import Tool
from .toolsets.base import searched_names
from .toolsets.versions import mixed_versions as _mixed_versions
from .toolsets.versions import same_version, same_version_text, version_order

if TYPE_CHECKING:  # the index loads on the first search (its patterns take ~6 ms to compile)
    from .toolsets import StepContext
    from .toolsets.search import SearchIndex

__all__ = ["Ranker", "ToolRegistry", "default_registry"]

F = TypeVar("F", bound=Callable[..., Any])
D = TypeVar("D")


class ExportOptions(TypedDict, total=False):
    """The options of `ToolRegistry.get_tools`, declared once for its typed overloads."""

    strict: bool | None
    """Export strict schemas (True), loose ones (False), or each tool's own flag (None)."""
    names: Sequence[str] | None
    """Only these tools, in this order (unknown names raise `ToolNotFoundError`)."""
    tags: Iterable[str] | None
    """Only tools carrying at least one of these tags."""
    advertise_required: bool
    """False leaves `required` out of the parameters (not with strict)."""


Ranker = Callable[[str, list[Tool]], Iterable[Tool]]
"""`ranker(query, candidates)`: the candidates (the index's best, best first) in the
application's order; it may drop some (e.g. below an embedding similarity)."""
_CANDIDATES = 32  # tools a ranker sees at least (4 x limit when that is more)
_MAX_EXPORTS = 256  # cached exports per registry before the cache starts over


class ToolRegistry:
    """A set of tools a model may call: register, look up, export, dispatch. A `Toolset`
    (see `toolreg.toolsets`): it offers every tool to every step, and `revision` grows with
    each registration and unregistration.

    `ToolRegistry()` is always fresh and independent; the module-level `register_tool`,
    `get_tools` and `dispatch_tool` act on `toolreg.default_registry`. The registry holds a
    `Dispatcher` over its own tool map; the dispatch verbs here hand over to it.

    Args:
        coerce: safe coercion of near-miss arguments (`"42"` for an integer) at dispatch;
            a tool's own `coerce=` wins.
        errors: what the model reads of a tool's exception: `"redact"` (the default: type
            and message, credentials, paths and the context's strings redacted), `"mask"`
            (only that the tool failed) or `"full"`.
        max_payload_bytes: the largest JSON text (or bytes) of arguments, 1 MiB by default.
        max_depth: the deepest nesting of arguments, 64 by default.
        max_concurrency: how many calls `dispatch_many` runs at once.
        max_result_chars: the default cut for results (a tool's own `max_result_chars=`
            wins); None: no cut.
        max_result_bytes: the most bytes of images, audio and files one result may hold,
            10 MiB by default (a tool's own `max_result_bytes=` wins); a part past them is
            left out with a marker; None: no bound.
        ranker: reorders tool-search candidates with the application's own ranking (e.g.
            embeddings): a function `(query, candidates) -> tools`, best first.

    Raises:
        UsageError: `ranker` is not callable.

    Example:
        registry = ToolRegistry(errors="mask", max_concurrency=4)
    """

    def __init__(
        self,
        *,
        coerce: bool = True,
        errors: ErrorMode = "redact",
        max_payload_bytes: int = 1 << 20,
        max_depth: int = 64,
        max_concurrency: int = 8,
        max_result_chars: int | None = None,
        max_result_bytes: int | None = MAX_RESULT_BYTES,
        ranker: Ranker | None = None,
    ) -> None:
        if ranker is not None and not callable(ranker):
            raise UsageError(
                f"ranker={ranker!r} is not callable; pass a function (query, candidates) -> "
                "tools, best first"
            )
        self._tools: dict[str, Tool] = {}  # by name: each name's tool (its latest version)
        self._versions: dict[str, list[Tool]] = {}  # a versioned name's tools, latest first
        self._lock = threading.RLock()
        self._exports: dict[tuple[Any, ...], tuple[formats.Format[Any, Any], list[Any]]] = {}
        self._index: SearchIndex | None = None  # built by the first search
        self.revision = 0
        """Grows with every change of the tools (the `Toolset` protocol's)."""
        self.ranker = ranker
        self.dispatcher = Dispatcher(
            self._tools,
            DispatchSettings(
                coerce=coerce,
                errors=errors,
                max_payload_bytes=max_payload_bytes,
                max_depth=max_depth,
                max_concurrency=max_concurrency,
                max_result_chars=max_result_chars,
                max_result_bytes=max_result_bytes,
            ),
        )

    @property
    def settings(self) -> DispatchSettings:
        """The dispatch settings this registry was made with."""
        return self.dispatcher.settings

    # -- registration ---------------------------------------------------------------------
    @overload
    def register_tool(self, fn: F, /) -> F: ...
    @overload
    def register_tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool = False,
        read_only: bool = False,
        destructive: bool = False,
        requires_confirmation: bool = False,
        timeout: float | None = None,
        return_direct: bool = False,
        max_result_chars: int | None = None,
        max_result_bytes: int | None = None,
        tags: Iterable[str] = (),
        result_filter: ResultFilter | None = None,
        coerce: bool | None = None,
        flatten: bool = False,
        title: str | None = None,
        idempotent: bool = False,
        defer_loading: bool = False,
        examples: Iterable[Mapping[str, Any]] = (),
        scopes: Iterable[str] = (),
        retries: int | None = None,
        task: Literal["optional", "required"] | None = None,
        on_worker_lost: Literal["rerun", "fail"] | None = None,
        input_guardrails: Callable[[Any], Any] | Iterable[Callable[[Any], Any]] = (),
        output_guardrails: Callable[[Any], Any] | Iterable[Callable[[Any], Any]] = (),
        eager: bool | None = None,
        allowed_callers: Iterable[Literal["direct", "programmatic"]] = (),
        output_schema: Mapping[str, Any] | bool | None = None,
        lock: str | Callable[[dict[str, Any]], Hashable | None] | None = None,
        version: str | int | None = None,
        replace: bool = False,
    ) -> Callable[[F], F]: ...

    def register_tool(
        self, fn: Callable[..., Any] | None = None, /, *, replace: bool = False, **options: Any
    ) -> Any:
        """Register `fn` as a tool; works bare, with options, or called on a function.

        `@register_tool`, `@register_tool(read_only=True, ...)` and `register_tool(fn)` all
        register; each returns the function itself, unchanged, so it stays callable and typed
        as before. Registration reads the signature, type hints, `Annotated` metadata and
        docstring, and builds the schema, the validator and the converters once.

        Args:
            fn: the function (sync or async); left out when options are given, as a decorator.
            replace: replace a tool of the same name instead of raising `DuplicateToolError`.
            options: the tool's options (`name`, `description`, `strict`, `read_only`,
                `destructive`, `timeout`, `tags`, ...): the reference's table of tool options.

        Raises:
            ToolDefinitionError: the function cannot be a tool as written (a default that does
                not match its annotation, `*args`, an option out of range); the message names
                the function, the parameter and the fix. A `fn` that is not callable
                (`@register_tool("name")`) is one too.
            UnsupportedTypeError: a parameter's annotation has no JSON Schema.
            DuplicateToolError: the name is taken and `replace` is false, unless by this
                function defined again in the same place (module, name, file and line: a
                notebook cell run again, a reloaded module): that replaces it with a warning.

        Example:
            @registry.register_tool(read_only=True, timeout=5)
            def stock(item: str) -> int:
                # the docstring (not shown here) is the description the model reads
                return 3
        """

        if fn is not None and not callable(fn):
            raise ToolDefinitionError(
                f"register_tool got {fn!r} where a function belongs",
                function=repr(fn),
                fix=f"pass the name as a keyword: @register_tool(name={fn!r})",
            )

        def decorate(func: F, stacklevel: int = 3) -> F:
            self._insert(Tool.from_function(func, **options), replace, stacklevel)
            return func

        return decorate(fn, 4) if fn is not None else decorate

    def register_schema(
        self,
        name: str,
        parameters: dict[str, Any],
        function: Callable[..., Any],
        *,
        description: str = "",
        replace: bool = False,
        **options: Any,
    ) -> Tool:
        """Register `function` under an explicit JSON Schema (checked against the metaschema).

        For a tool whose schema already exists (an OpenAPI operation, another library's
        definition): the arguments are validated against `parameters` and passed to `function`
        as keywords. Returns the registered `Tool`.

        Args:
            name: the tool's name, as the model calls it.
            parameters: the JSON Schema of its arguments, an `"object"` schema.
            function: what runs, called with the validated arguments as keywords.
            description: what the model reads to choose the tool.
            replace: replace a tool of the same name instead of raising `DuplicateToolError`.
            options: the other tool options, as for `register_tool`.

        Raises:
            ToolDefinitionError: the schema is not valid JSON Schema, or an option is wrong.
            DuplicateToolError: the name is taken and `replace` is false.
        """
        tool = Tool.from_schema(name, parameters, function, description=description, **options)
        return self.add(tool, replace=replace)

    def add(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Add a ready `Tool`; a taken name raises `DuplicateToolError` unless `replace`."""
        return self._insert(tool, replace, 0)

    def _insert(self, tool: Tool, replace: bool, again: int) -> Tool:
        """Add `tool`. `again` (register_tool: the stack level of its caller, else 0): the
        function that holds the name defined again, from the same place (a notebook cell run
        again, a reloaded module), replaces it with a warning instead of an error.

        A tool with a `version` goes beside the other versions of its name (each version
        once); the name's tool is then its latest version. A name's tools either all have
        versions or it is one tool without."""
        with self._lock:
            family = self._family(tool.name)
            mixing = bool(family) and (family[0].version is None) != (tool.version is None)
            taken = family if mixing else [t for t in family if same_version(t, tool)]
            redefined = False
            if taken and not replace:
                place = _place(tool.function)
                if not again or place is None or any(place != _place(t.function) for t in taken):
                    if mixing:
                        raise _mixed_versions(tool, family, _owner(tool))
                    raise DuplicateToolError(
                        tool.name,
                        function=_owner(tool),
                        existing=_owner(taken[0]),
                        version=tool.version,
                    )
                redefined = True
            kept = [t for t in family if all(t is not gone for gone in taken)]
            self._place_versions(tool.name, [*kept, tool])
        if redefined:
            warnings.warn(
                f"register_tool: {_owner(tool)} was registered again from the same place; "
                f"the new definition replaces the tool '{tool.name}' (a notebook cell run "
                "again, a reloaded module). replace=True says so and silences this warning",
                UserWarning,
                stacklevel=again,
            )
        return tool

    def _family(self, name: str) -> list[Tool]:
        """The tools registered under `name`: its versions, latest first, or its one tool."""
        versions = self._versions.get(name)
        if versions is not None:
            return list(versions)
        tool = self._tools.get(name)
        return [] if tool is None else [tool]

    def _place_versions(self, name: str, family: list[Tool]) -> None:
        """Make `family` what `name` holds (none: nothing); its latest version becomes the
        name's tool. Under the lock."""
        before = self._tools.get(name)
        if not family:
            del self._tools[name]
            self._versions.pop(name, None)
        else:
            family.sort(key=version_order, reverse=True)
            self._tools[name] = family[0]
            if family[0].version is None:
                self._versions.pop(name, None)
            else:
                self._versions[name] = family
        self._exports = {}
        self.revision += 1
        index = self._index
        if index is not None and before is not self._tools.get(name):
            if family:
                index.add(family[0])
            else:
                index.remove(name)

    def unregister(self, name: str, *, version: str | None = None) -> Tool:
        """Remove and return the tool `name` (`ToolNotFoundError`, a KeyError, if none):
        every version of it, returning the latest; with `version=`, that version only (the
        latest of the others is then the name's tool)."""
        with self._lock:
            family = self._family(name)
            if not family:
                raise self._not_found([name])
            if version is None:
                gone = family
            else:
                gone = [t for t in family if same_version_text(t, version)]
                if not gone:
                    shown = ", ".join(str(t.version) for t in family if t.version) or "none"
                    raise ToolNotFoundError(
                        f"the tool {name!r} has no version {version!r} (its versions: {shown})",
                        names=[name],
                    )
            self._place_versions(name, [t for t in family if all(t is not g for g in gone)])
        return gone[0]

    # -- lookup ---------------------------------------------------------------------------
    def get(self, name: str, *, version: str | None = None) -> Tool | None:
        """The tool `name` (its latest version), or None; with `version=`, that version of
        it (`"1"` finds `"1.0"` too: the same version), or None."""
        if version is None:
            return self._tools.get(name)
        with self._lock:
            family = self._family(name)
        return next((t for t in family if same_version_text(t, version)), None)

    def versions(self, name: str | None = None) -> list[Tool]:
        """The versions of the tool `name`, latest first (a tool without versions: itself;
        an unknown name: none). Without a name: every version of every tool, the tools in
        registration order, each one's versions latest first (what `toolreg lint --lock`
        checks)."""
        with self._lock:
            if name is not None:
                return self._family(name)
            return [t for n in self._tools for t in self._family(n)]

    def __getitem__(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise self._not_found([name])
        return tool

    def _not_found(self, missing: Sequence[str]) -> ToolNotFoundError:
        registered = ", ".join(self._tools) or "none"
        return ToolNotFoundError(
            f"no tool named {', '.join(map(repr, missing))} (registered: {registered})",
            names=missing,
        )

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(
        self, names: Sequence[str] | None = None, tags: Iterable[str] | None = None
    ) -> list[Tool]:
        """Tools in registration order (or in the order of `names`), filtered by `tags`.

        `tags` keeps the tools that carry at least one of them; an unknown name is a `KeyError`.
        """
        wanted = _tag_set(tags)
        with self._lock:
            if names is not None:
                names = _name_list(names)
                missing = [n for n in names if n not in self._tools]
                if missing:
                    raise self._not_found(missing)
                selected = [self._tools[n] for n in names]
            else:
                selected = list(self._tools.values())
        if wanted is not None:
            selected = [t for t in selected if t.tags & wanted]
        return selected

    def offer(self, step: StepContext) -> list[Tool]:
        """The tools offered for one step (`Toolset`): all of them, in registration order."""
        return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tools))

    def __repr__(self) -> str:
        return f"<ToolRegistry {len(self._tools)} tools: {', '.join(self._tools)}>"

    # -- search ---------------------------------------------------------------------------
    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        among: Iterable[str] | None = None,
        step: StepContext | None = None,
    ) -> list[Tool]:
        """The `limit` tools whose definitions best match `query`, best first (none when no
        word matches). Names (split on `_ . -` and camelCase), descriptions, parameter names
        and descriptions are searched, in any language (see `toolreg.toolsets.search`); `among`
        keeps only those tool names, `step` only those `offer(step)` gives. With a
        `ranker`, it orders the index's candidates."""
        if not isinstance(query, str):
            raise UsageError(f"search_tools() takes a query string, not {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise UsageError(f"search_tools(limit={limit!r}): a whole number >= 0")
        accept = searched_names(self, among, step)
        ranker = self.ranker
        wanted = limit if ranker is None else max(4 * limit, _CANDIDATES)
        with self._lock:
            index = self._index
            if index is None:
                from .toolsets.search import SearchIndex  # lazily: `import toolreg` stays light

                index = self._index = SearchIndex()
                index.update(self._tools.values())
            found = [self._tools[name] for name in index.search(query, wanted, accept=accept)]
        if ranker is None or not found or limit == 0:
            return found
        return _ranked(rank(ranker, query, found), found, limit)

    # -- dispatch: the registry's Dispatcher's own verbs (declared once, in Dispatcher) -----
    dispatch_tool = DispatchVerb(Dispatcher.dispatch_tool)
    adispatch_tool = DispatchVerb(Dispatcher.adispatch_tool)
    dispatch_many = DispatchVerb(Dispatcher.dispatch_many)
    adispatch_many = DispatchVerb(Dispatcher.adispatch_many)

    # -- export ---------------------------------------------------------------------------
    # Typed per format, with the options declared once (`ExportOptions`): a format name gets
    # what that format writes (the `openai` SDK's own param types for OpenAI's APIs), so
    # `tools=registry.get_tools()` type-checks against the SDK; a `Format` object gets its
    # `DefinitionT`; a name only known at run time gets plain dicts. mypy calls a Literal
    # overload and the `str` one "overlapping": both are true at run time.
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["openai"] = "openai", **options: Unpack[ExportOptions]
    ) -> list[formats.openai.ToolDefinition]: ...
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["responses"], **options: Unpack[ExportOptions]
    ) -> list[formats.responses.ToolDefinition]: ...
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["anthropic"], **options: Unpack[ExportOptions]
    ) -> list[formats.anthropic.ToolDefinition]: ...
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["gemini"], **options: Unpack[ExportOptions]
    ) -> list[formats.gemini.ToolDefinition]: ...
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["mcp"], **options: Unpack[ExportOptions]
    ) -> list[formats.mcp.ToolDefinition]: ...
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["chatglm3"], **options: Unpack[ExportOptions]
    ) -> list[formats.chatglm3.ToolDefinition]: ...
    @overload
    def get_tools(  # type: ignore[overload-overlap]
        self, format: Literal["functions"], **options: Unpack[ExportOptions]
    ) -> list[formats.functions.ToolDefinition]: ...
    @overload
    def get_tools(
        self, format: formats.Format[D, Any], **options: Unpack[ExportOptions]
    ) -> list[D]: ...
    @overload
    def get_tools(self, format: str, **options: Unpack[ExportOptions]) -> list[dict[str, Any]]: ...

    def get_tools(
        self,
        format: str | formats.Format[Any, Any] = "openai",
        *,
        strict: bool | None = None,
        names: Sequence[str] | None = None,
        tags: Iterable[str] | None = None,
        advertise_required: bool = True,
    ) -> list[Any]:
        """Definitions of the selected tools in `format`; cached until the registry changes.

        `format` is a format's name (`toolreg.formats.FORMATS`) or a `Format` object, e.g.
        one of your own. Typed per format: `get_tools()` is a list of the `openai` SDK's
        `ChatCompletionToolParam`, `get_tools("responses")` of its Responses
        `FunctionToolParam`, the other names of their module's `ToolDefinition`, a `Format`
        of its `DefinitionT`. The returned dicts are shared with the cache: treat them as
        read-only.

        Args:
            format: `"openai"` (the default), `"responses"`, `"anthropic"`, `"gemini"`, `"mcp"`,
                `"chatglm3"`, `"functions"`, or a `Format`.
            strict: True for strict schemas (OpenAI structured outputs), False for none, None
                for each tool's own `strict=`.
            names: only these tools, in this order.
            tags: only the tools with one of these tags.
            advertise_required: False leaves `required` out of the schemas (dispatch still
                enforces it: the model is told what is missing instead of inventing values).

        Raises:
            UsageError: an unknown format name (the message lists the names), or
            `advertise_required=False` with strict schemas.
            ToolNotFoundError: a name in `names` that is not registered.
            ToolDefinitionError: a tool's name breaks the format's provider rule, or its schema
                cannot be strict when `strict=True`.

        Example:
            tools = registry.get_tools("anthropic", names=["get_weather"])
        """
        names = None if names is None else _name_list(names)
        wanted = _tag_set(tags)
        form = formats.format_named(format) if isinstance(format, str) else format
        # A name, or a Format object by identity (the entry keeps it, so its id stays its own).
        which = format if isinstance(format, str) else id(format)
        key = (which, strict, None if names is None else tuple(names), wanted, advertise_required)
        exports = self._exports
        entry = exports.get(key)
        if entry is None or entry[0] is not form:
            defs = export_tools(
                self.tools(names, wanted),
                form,
                strict=strict,
                advertise_required=advertise_required,
            )
            if len(exports) >= _MAX_EXPORTS:  # e.g. a different `names=` per request
                exports.clear()
            entry = exports[key] = (form, defs)
        cached = entry[1]
        return list(cached)


def _name_list(names: Sequence[str]) -> list[str]:
    if isinstance(names, str):
        return [names]  # one name, not its letters
    return list(names)


def _tag_set(tags: Iterable[str] | None) -> frozenset[str] | None:
    if tags is None:
        return None
    return frozenset([tags] if isinstance(tags, str) else tags)


def _ranked(answer: Any, candidates: list[Tool], limit: int) -> list[Tool]:
    """A ranker's answer: the candidates it returned, in its order, once each."""
    if isinstance(answer, (str, bytes, Mapping)) or not isinstance(answer, Iterable):
        raise UsageError(
            f"the search ranker returned {type(answer).__name__}; it must return the "
            "candidate tools it keeps, best first"
        )
    allowed = {id(tool) for tool in candidates}
    out: list[Tool] = []
    for tool in answer:
        if not isinstance(tool, Tool) or id(tool) not in allowed:
            raise UsageError(
                f"the search ranker returned {tool!r}, which is not one of its candidates; "
                "return the candidate Tool objects it was given"
            )
        if all(tool is not kept for kept in out):
            out.append(tool)
        if len(out) == limit:
            break
    return out


def _place(function: object) -> tuple[object, ...] | None:
    """Where a plain function is defined: its module, qualified name, file and first line;
    None for a nested function (a factory's closures share one place), a method, a partial
    or a callable object, which are never taken for the same function defined again."""
    if not isinstance(function, FunctionType) or "<locals>" in function.__qualname__:
        return None
    code = function.__code__
    return (function.__module__, function.__qualname__, code.co_filename, code.co_firstlineno)


def _owner(tool: Tool) -> str:
    fn = tool.function
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


default_registry = ToolRegistry()
"""The registry behind `toolreg.register_tool`, `toolreg.get_tools` and `toolreg.dispatch_tool`."""
