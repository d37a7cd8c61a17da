"""`Tool`: one registered tool, built from a function or from an explicit JSON Schema.

Everything a call needs is built here, at registration, so that every problem surfaces
then: the schema, its strict form (for strict tools), the compiled validator and the
`CallPlan` that says how dispatch turns a model's arguments into the function's call.
"""

from __future__ import annotations

import inspect
import json
import math
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .definition.conversion import converter_for
from .definition.docstrings import EMPTY_DOC, parse_docstring
from .definition.fields import kind_of
from .definition.names import NAME_RULES, accepted_somewhere
from .definition.returns import return_object_schema
from .definition.schema import JsonSchema, SchemaBuilder
from .definition.signature import (
    MISSING,
    InjectKind,
    ParamRecord,
    describe_callable,
    qualified_name,
    wrapped_function,
)
from .definition.strict import make_strict
from .definition.versions import VERSION_RULE, check_version
from .errors import ToolDefinitionError
from .jsonvalues import copy_json
from .types import ANY_TYPES, Converter
from .validation import Validator
from .validation.drafts import DraftError, Normalized, normalize_schema
from .validation.keywords import Node
from .validation.metaschema import conforms
from .validation.nulls import NullDropper
from .validation.refs import RefError, check_refs
from .validation.untrusted import UntrustedSchemaError, check_size

__all__ = ["OPTIONS", "CallPlan", "Tool"]

ResultFilter = Callable[[Any], Any]


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A tool: what the model is told (name, description, parameters) and what runs.

    `parameters` is the JSON Schema of the arguments object; treat it as read-only.
    Flags are read by dispatch (`timeout`, `destructive`, `requires_confirmation`,
    `max_result_chars`, `max_result_bytes`, `result_filter`, `coerce`), by exports (`read_only`,
    `destructive` as MCP annotations; `strict`) and by an MCP server (`scopes`: the OAuth
    scopes a client's token must hold for the tool to be listed or called).
    """

    name: str
    description: str
    parameters: JsonSchema
    function: Callable[..., Any]
    plan: CallPlan = field(repr=False)
    strict: bool = False
    """Export a strict schema (OpenAI structured outputs): every property required, optional
    ones nullable (`null` means the default), no other keys; `get_tools(strict=)` overrides."""
    read_only: bool = False
    """It only reads: MCP's `readOnlyHint`; a read-only call may start while the model still
    streams, and `toolreg serve` may cache its results."""
    destructive: bool = False
    """It changes or deletes something: dispatch asks `confirm=` first (in a conversation,
    `confirm="defer"` pauses the turn for a person); MCP's `destructiveHint`."""
    requires_confirmation: bool = False
    """Ask `confirm=` before every call, as for a destructive tool, without saying it is one."""
    timeout: float | None = None
    """Seconds a call may take; past them the model reads a `timeout` error (an async tool is
    cancelled, a sync one runs on in its thread). None: no limit."""
    return_direct: bool = False
    """In a conversation, a round whose tools are all `return_direct` ends the turn with their
    output as the reply's text (`stop_reason="return_direct"`), without another model call."""
    max_result_chars: int | None = None
    """The longest result text the model reads; a longer one is cut with a visible marker
    (else the registry's `max_result_chars`)."""
    max_result_bytes: int | None = None
    """The most bytes of images, audio and files one result may hold (see
    `toolreg.content`); a part past them is left out, a marker in its place (else the
    registry's `max_result_bytes`, 10 MiB by default)."""
    tags: frozenset[str] = frozenset()
    """Labels to select tools by: `get_tools(tags=...)`, `Conversation(tools=[tag])`, a tool
    search's `always=`."""
    result_filter: ResultFilter | None = None
    """A function of the tool's return value run before it is rendered (drop or mask fields
    the model must not read)."""
    coerce: bool | None = None
    """Safe coercion of near-miss arguments (`"42"` for an integer, `"true"` for a boolean, a
    JSON-encoded string for an array or object); None: the registry's setting."""
    flatten: bool = False
    """For a function of one record (dataclass, TypedDict, NamedTuple, pydantic model): the
    model sees the record's fields as the tool's parameters, the function gets the record."""
    title: str | None = None
    """A human-readable name, shown by MCP clients (`title` and the annotations' `title`)."""
    idempotent: bool = False
    """Calling it again with the same arguments changes nothing more: MCP's `idempotentHint`;
    such a call may start while the model streams, and `toolreg serve` may cache it."""
    defer_loading: bool = False
    """Not offered to the model until its search (`search_tools`) finds it."""
    examples: tuple[dict[str, Any], ...] = ()
    """Example arguments, each valid for `parameters` (checked at registration); exported
    as Anthropic's `input_examples`, appended to the description for other providers."""
    scopes: frozenset[str] = frozenset()
    """The OAuth scopes a client's token must hold for `toolreg serve` to list or run it."""
    retries: int | None = None
    """Calls of this tool in one conversation turn that may ask the model to try again
    (invalid arguments, `ToolRetry`) before the turn stops; None: the conversation's
    `tool_retries`."""
    task: Literal["optional", "required"] | None = None
    """Served over MCP, run as a task (`toolreg.mcp.tasks`) when the client supports them:
    `"optional"` runs inline for a client that does not, `"required"` refuses it."""
    on_worker_lost: Literal["rerun", "fail"] | None = None
    """For a task on a shared backend (`TaskOptions(backend=...)`): what happens when the
    worker running it dies or stops: `"rerun"` runs it again in another worker, with the
    same `ToolContext.idempotency_key`; `"fail"` ends it `failed`, saying it was interrupted
    while running. None: `"rerun"` for a `read_only` or `idempotent` tool, else `"fail"`."""
    input_guardrails: tuple[Callable[[Any], Any], ...] = ()
    """Run by a conversation on a call's validated arguments before it runs (see
    `toolreg.conversation.guardrails`); not by `dispatch_tool` itself."""
    output_guardrails: tuple[Callable[[Any], Any], ...] = ()
    """Run by a conversation on a call's result before the model reads it."""
    eager: bool | None = None
    """Start it while the model still streams, once its arguments are complete: True, False
    (never), or None: when it is `read_only` or `idempotent`. Never one needing confirmation."""
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] = ()
    """Who may call it on the Responses API (its `allowed_callers`): the model directly
    ("direct"), a program the model runs ("programmatic"); none given: the API's default."""
    output_schema: JsonSchema | None = None
    """The strict JSON Schema (an object) of what it returns, exported as the Responses API's
    `output_schema` (a program the model writes reads the result by it); checked at
    registration, derived from the return annotation with `output_schema=True`."""
    lock: str | Callable[[dict[str, Any]], Any] | None = None
    """Calls that share a resource run one at a time (others overlap): a name (every call
    of every tool of the registry with that lock waits for the one running), or a function
    of the validated arguments giving the resource's key (`lambda args: args["account"]`;
    None: no lock for that call). A call waits at most its `timeout` for the lock (then it
    is not run); the lock is held until the tool has really stopped."""
    version: str | None = None
    """Which version of the tool this is (`"2"`, `"2.1"`, `"2025-01-31"`: see
    `toolreg.definition.versions`): a registry holds several versions of one name side by
    side; the latest is the default, `pinned(...)` or an MCP client picks another, and
    `toolreg lint --lock` fails when a definition changed without a new version. None: the
    tool has no versions (one definition per name)."""
    is_async: bool = False
    async_function: Callable[..., Awaitable[Any]] | None = field(default=None, repr=False)
    """An async twin of a sync `function`, awaited instead of it by async dispatch (a tool
    made from an HTTP API: a sync client for sync dispatch, an async one for async)."""
    params: tuple[ParamRecord, ...] = ()
    description_source: str = "none"
    schema_changes: tuple[str, ...] = ()
    """What toolreg rewrote in a given parameters schema (`from_schema`: `register_schema`, a
    mount, an OpenAPI document) to make an older JSON Schema draft's keywords 2020-12, one
    sentence each (`toolreg.validation.drafts`); empty when nothing."""
    strict_parameters: JsonSchema | None = field(default=None, repr=False)
    needs_confirmation: bool = field(init=False, repr=False)
    """`destructive` or `requires_confirmation`: dispatch asks `confirm=` first."""

    def __post_init__(self) -> None:
        # read on every dispatch: worked out once
        object.__setattr__(
            self, "needs_confirmation", self.destructive or self.requires_confirmation
        )

    @property
    def accepts_extra_keys(self) -> bool:
        return self.parameters.get("additionalProperties", True) is not False

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> Tool:
        """Build a tool from a typed function; raises `ToolDefinitionError` subclasses."""
        _check_option_names(qualified_name(fn), options)
        sig = describe_callable(fn)
        doc = parse_docstring(sig.doc) if sig.doc else EMPTY_DOC
        builder = SchemaBuilder(sig.qualname)
        visible = [p for p in sig.params if p.inject is None and not p.var_keyword]
        if options.get("flatten"):
            schema = _flattened(builder, visible, sig.params, sig.qualname)
        else:
            extra = _extra_keys_schema(builder, sig.params)
            schema = builder.object_schema(visible, doc.params, extra)
        if builder.defs:
            schema["$defs"] = builder.defs
        tool_name = _check_name(name if name is not None else _default_name(fn), sig.qualname)
        if description is not None:
            _check_description(description, sig.qualname)
            text, source = description, "argument"
        else:
            text, source = doc.summary, ("docstring" if doc.summary else "none")
        return cls._checked(
            name=tool_name,
            description=text,
            parameters=schema,
            function=fn,
            is_async=sig.is_async,
            params=sig.params,
            description_source=source,
            owner=sig.qualname,
            # the builder (alive until then) holds these dicts: their ids stay unique
            nodes={id(schema): check for schema, check in builder.checks},
            **options,
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        parameters: Mapping[str, Any],
        function: Callable[..., Any],
        *,
        description: str = "",
        untrusted: bool = False,
        context_parameter: str | None = None,
        raw_context_parameter: str | None = None,
        async_function: Callable[..., Awaitable[Any]] | None = None,
        **options: Any,
    ) -> Tool:
        """A tool from an existing JSON Schema (checked against the metaschema) and a callable.

        The callable receives the validated arguments as keyword arguments, unconverted.
        `untrusted=True`: the schema comes from someone else (a mounted server): it must
        keep the bounds of `toolreg.validation.untrusted` (size, depth) before anything
        compiles it, and its patterns run bounded (RE2, or `re` on patterns that cannot
        backtrack badly; limited input per string and per call).
        `context_parameter="ctx"`: the callable also receives the call's `ToolContext` as
        that keyword argument (never in the schema: a name the schema's properties must not
        use, and that the model may not send); `raw_context_parameter="raw"`: it also
        receives the `context=` given to dispatch, as it was given, under that name.
        `async_function=`: an async function taking the same arguments as the sync
        `function`, which async dispatch awaits instead (sync dispatch calls `function`).
        A schema of an older draft (4, 6, 7, 2019-09) is rewritten as 2020-12 says the same
        (`toolreg.validation.drafts`); `Tool.schema_changes` says what changed, and what
        cannot be rewritten is a `ToolDefinitionError` naming the keyword.
        """
        owner = qualified_name(function)
        _check_option_names(owner, options)
        _check_description(description, owner)
        if untrusted:
            _check_untrusted(parameters, owner, name)
        normalized = _normalized(parameters, owner, name)
        schema = _checked_schema(normalized.schema, owner, name)
        injected: tuple[tuple[str, InjectKind], ...] = ()
        if context_parameter is not None:
            _check_context_parameter(context_parameter, schema, owner)
            injected = ((context_parameter, "context"),)
        if raw_context_parameter is not None:
            _check_context_parameter(raw_context_parameter, schema, owner)
            if raw_context_parameter == context_parameter:
                raise ToolDefinitionError(
                    "context_parameter and raw_context_parameter are the same name",
                    function=owner,
                    fix="give each its own name",
                )
            injected = (*injected, (raw_context_parameter, "raw"))
        if async_function is not None and (
            not inspect.iscoroutinefunction(async_function) or inspect.iscoroutinefunction(function)
        ):
            raise ToolDefinitionError(
                "async_function= is the async twin of a sync function",
                function=owner,
                fix="pass a sync function and an `async def` taking the same arguments",
            )
        return cls._checked(
            injected=injected,
            name=_check_name(name, owner),
            description=description,
            parameters=schema,
            function=function,
            is_async=inspect.iscoroutinefunction(function),
            async_function=async_function,
            description_source="argument" if description else "none",
            owner=owner,
            untrusted=untrusted,
            schema_changes=normalized.changes,
            **options,
        )

    @classmethod
    def _checked(
        cls,
        *,
        owner: str,
        tags: Iterable[str] = (),
        scopes: Iterable[str] = (),
        nodes: Mapping[int, Node] | None = None,
        untrusted: bool = False,
        examples: Any = (),
        input_guardrails: Any = (),
        output_guardrails: Any = (),
        injected: tuple[tuple[str, InjectKind], ...] = (),
        **fields: Any,
    ) -> Tool:
        _check_options(owner, fields)
        fields["input_guardrails"] = _check_guardrails(owner, "input", input_guardrails)
        fields["output_guardrails"] = _check_guardrails(owner, "output", output_guardrails)
        name, parameters = fields["name"], fields["parameters"]
        if fields.get("strict"):  # fail loud now, not at export
            signature = "params" in fields  # from_function; from_schema has no signature
            fields["strict_parameters"] = make_strict(parameters, tool=name, signature=signature)
        fields["plan"] = _build_plan(
            name,
            parameters,
            fields.get("params", ()),
            fields["function"],
            owner,
            bool(fields.get("flatten")),
            nodes,
            untrusted,
            injected,
        )
        fields["examples"] = _check_examples(owner, examples, fields["plan"].validator)
        fields["allowed_callers"] = _check_callers(owner, fields.get("allowed_callers", ()))
        fields["output_schema"] = _check_output_schema(
            owner, name, fields.get("output_schema"), fields["function"]
        )
        if fields.get("version") is not None:
            fields["version"] = _checked_version(owner, fields["version"])
        return cls(
            tags=frozenset(_check_tags(owner, tags)),
            scopes=frozenset(_check_scopes(owner, scopes)),
            **fields,
        )

    @property
    def described_with_examples(self) -> str:
        """The description with the examples appended, for a provider without a field for
        them (the description alone when there are none)."""
        if not self.examples:
            return self.description
        shown = "; ".join(json.dumps(e, ensure_ascii=False) for e in self.examples)
        return f"{self.description}\n\nExample arguments: {shown}".lstrip()


def _default_name(fn: Callable[..., Any]) -> str:
    fn = wrapped_function(fn)  # a partial is named after its function
    name = str(getattr(fn, "__name__", "") or type(fn).__name__)
    if name == "<lambda>":
        raise ToolDefinitionError(
            "a lambda has no name to give the tool",
            function=qualified_name(fn),
            fix="pass name='...' to register_tool, or use a def",
        )
    return name


OPTIONS = frozenset(
    {
        "strict",
        "read_only",
        "destructive",
        "requires_confirmation",
        "timeout",
        "return_direct",
        "max_result_chars",
        "max_result_bytes",
        "tags",
        "result_filter",
        "coerce",
        "flatten",
        "title",
        "idempotent",
        "defer_loading",
        "examples",
        "scopes",
        "retries",
        "task",
        "on_worker_lost",
        "input_guardrails",
        "output_guardrails",
        "eager",
        "allowed_callers",
        "output_schema",
        "lock",
        "version",
    }
)
"""Options `register_tool` / `register_schema` accept besides `name` and `description`."""


def _check_option_names(owner: str, options: Mapping[str, Any]) -> None:
    unknown = options.keys() - OPTIONS
    if unknown:
        raise ToolDefinitionError(
            f"unknown option {', '.join(map(repr, sorted(unknown)))}",
            function=owner,
            fix=f"use only name, description, {', '.join(sorted(OPTIONS))}",
        )


def _check_context_parameter(name: object, schema: JsonSchema, owner: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ToolDefinitionError(
            f"context_parameter={name!r} is not a parameter name",
            function=owner,
            fix="pass the name of the keyword argument that gets the ToolContext, e.g. 'ctx'",
        )
    if name in schema.get("properties", {}):
        raise ToolDefinitionError(
            f"context_parameter={name!r} is also a property of the parameters schema",
            function=owner,
            fix="choose a name the schema does not use",
        )


def _check_description(description: object, owner: str) -> None:
    if not isinstance(description, str):
        raise ToolDefinitionError(
            f"description must be a string, not {type(description).__name__}",
            function=owner,
            fix="pass description='what the tool does and when to use it'",
        )


def _check_name(name: str, owner: str) -> str:
    if not isinstance(name, str) or not accepted_somewhere(name):
        rules = "; ".join(f"{fmt}: {text}" for fmt, (_, text) in NAME_RULES.items())
        raise ToolDefinitionError(
            f"the tool name {name!r} is accepted by no provider ({rules})",
            function=owner,
            fix="pass name='letters_digits_underscores' to register_tool",
        )
    return name


_RECORD_KINDS = ("dataclass", "typeddict", "pydantic", "namedtuple")


def _flattened(
    builder: SchemaBuilder,
    visible: list[ParamRecord],
    params: tuple[ParamRecord, ...],
    owner: str,
) -> JsonSchema:
    """`flatten=True`: the one record parameter's fields are the tool's parameters."""
    record = visible[0] if len(visible) == 1 else None
    if (
        record is None
        or any(p.var_keyword for p in params)
        or kind_of(typing.get_origin(record.annotation) or record.annotation) not in _RECORD_KINDS
    ):
        raise ToolDefinitionError(
            "flatten=True needs exactly one parameter the model fills, typed as a dataclass, "
            "TypedDict, NamedTuple or pydantic model",
            function=owner,
            fix="take one record parameter (plus injected ones), or drop flatten=True",
        )
    builder.parameter = record.name
    ref = builder.build(record.annotation)
    builder.parameter = None
    name = str(ref.get("$ref", "")).rsplit("/", 1)[-1]
    top = builder.defs.get(name)
    if not isinstance(top, dict) or top.get("type") != "object":
        raise ToolDefinitionError(
            "flatten=True: the record has no object schema to advertise",
            function=owner,
            parameter=record.name,
            fix="drop flatten=True",
        )
    schema: JsonSchema = copy_json(top)
    del builder.defs[name]
    if f'"#/$defs/{name}"' in json.dumps([schema, builder.defs]):
        builder.defs[name] = top  # a record that refers to itself keeps its entry
    schema.pop("description", None)  # the tool's description says what the call does
    return schema


def _extra_keys_schema(builder: SchemaBuilder, params: Iterable[ParamRecord]) -> bool | JsonSchema:
    for p in params:
        if p.var_keyword:
            builder.parameter = p.name
            value = builder.field(p.annotation, p.param)
            builder.parameter = None
            return value if value else True
    return False


def _check_untrusted(parameters: Mapping[str, Any], owner: str, name: str) -> None:
    try:
        check_size(parameters)
    except UntrustedSchemaError as exc:
        raise ToolDefinitionError(
            f"the parameters schema of tool {name!r} is refused: {exc}",
            function=owner,
            fix="a smaller schema; see toolreg.validation.untrusted for the limits",
        ) from None


def _normalized(parameters: Mapping[str, Any], owner: str, name: str) -> Normalized:
    try:
        return normalize_schema(parameters)
    except DraftError as exc:
        raise ToolDefinitionError(
            f"the parameters schema of tool {name!r} uses {exc.keyword!r} at {exc.where}, "
            f"which toolreg cannot rewrite as JSON Schema 2020-12: {exc.reason}",
            function=owner,
            fix="write that part of the schema in JSON Schema 2020-12",
        ) from None


def _check_metaschema(schema: Mapping[str, Any], owner: str, what: str) -> None:
    """`schema` is valid Draft 2020-12 JSON Schema (else a `ToolDefinitionError` naming
    `what` and where in it). The fast check first; jsonschema for the rest, and the words."""
    if conforms(schema):
        return
    import jsonschema  # lazily: `import toolreg` stays light

    try:
        jsonschema.Draft202012Validator.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ToolDefinitionError(
            f"{what} is not valid JSON Schema at {where}: {exc.message}",
            function=owner,
            fix="correct the schema (Draft 2020-12)",
        ) from None


def _checked_schema(parameters: Mapping[str, Any], owner: str, name: str) -> JsonSchema:
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        raise ToolDefinitionError(
            'the parameters schema must be a JSON object schema with "type": "object"',
            function=owner,
            fix='wrap the arguments: {"type": "object", "properties": {...}}',
        )
    _check_metaschema(parameters, owner, "the parameters schema")
    schema: JsonSchema = copy_json(parameters)  # the caller's dicts stay theirs
    try:  # the compiled validator tolerates a cycle (a value deep enough fails); dispatch not
        check_refs(schema)
    except RefError as exc:
        raise ToolDefinitionError(
            f"the parameters schema of tool {name!r} cannot be validated: {exc}",
            function=owner,
            fix=exc.fix,
        ) from None
    return schema


_POSITIVE: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("timeout", (int, float), "a positive number of seconds"),
    ("max_result_chars", int, "a positive whole number"),
    ("max_result_bytes", int, "a positive whole number"),
)
_FLAGS = (
    "strict",
    "read_only",
    "destructive",
    "requires_confirmation",
    "return_direct",
    "flatten",
    "idempotent",
    "defer_loading",
)


def _check_options(owner: str, fields: dict[str, Any]) -> None:
    for key, kinds, what in _POSITIVE:
        value = fields.get(key)
        bad_number = isinstance(value, bool) or not isinstance(value, kinds)
        if value is not None and (bad_number or not math.isfinite(value) or value <= 0):
            raise ToolDefinitionError(
                f"{key}={value!r} must be {what}", function=owner, fix=f"pass {key}=30"
            )
    for key in _FLAGS:
        if not isinstance(fields.get(key, False), bool):
            raise ToolDefinitionError(
                f"{key} must be True or False", function=owner, fix=f"pass {key}=True"
            )
    retries = fields.get("retries")
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or retries < 0
    ):
        raise ToolDefinitionError(
            f"retries={retries!r} must be a whole number >= 0, or None (the conversation's "
            "tool_retries)",
            function=owner,
            fix="pass retries=2",
        )
    title = fields.get("title")
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ToolDefinitionError(
            "title must be a non-empty string", function=owner, fix="pass title='Get weather'"
        )
    coerce = fields.get("coerce")
    if coerce is not None and not isinstance(coerce, bool):
        raise ToolDefinitionError(
            "coerce must be True, False or None (the registry's setting)",
            function=owner,
            fix="pass coerce=False",
        )
    if fields.get("task") not in (None, "optional", "required"):
        raise ToolDefinitionError(
            f"task={fields['task']!r} must be 'optional', 'required' or None",
            function=owner,
            fix="pass task='optional' (a task when the MCP client supports them, else inline)",
        )
    _check_worker_lost(owner, fields)
    _check_eager(owner, fields)
    lock = fields.get("lock")
    if lock is not None and not callable(lock) and (not isinstance(lock, str) or not lock):
        raise ToolDefinitionError(
            f"lock={lock!r} must be a resource's name, or a function of the arguments that "
            "gives its key",
            function=owner,
            fix="pass lock='ledger', or lock=lambda args: args['account_id']",
        )
    for key in ("result_filter", "function"):
        if fields.get(key) is not None and not callable(fields[key]):
            raise ToolDefinitionError(
                f"{key} must be callable", function=owner, fix=f"pass a function as {key}="
            )


def _check_worker_lost(owner: str, fields: dict[str, Any]) -> None:
    lost = fields.get("on_worker_lost")
    if lost is None:
        return
    if lost not in ("rerun", "fail"):
        raise ToolDefinitionError(
            f"on_worker_lost={lost!r} must be 'rerun', 'fail' or None",
            function=owner,
            fix="pass on_worker_lost='fail' (a task whose worker dies ends failed) or 'rerun'",
        )
    if fields.get("task") is None:
        raise ToolDefinitionError(
            "on_worker_lost= applies to a tool run as an MCP task, and this one is not",
            function=owner,
            fix="add task='optional' (or 'required'), or drop on_worker_lost=",
        )


def _check_eager(owner: str, fields: dict[str, Any]) -> None:
    eager = fields.get("eager")
    if eager is not None and not isinstance(eager, bool):
        raise ToolDefinitionError(
            "eager must be True, False or None (read_only or idempotent tools start early)",
            function=owner,
            fix="pass eager=True",
        )
    if eager and (fields.get("destructive") or fields.get("requires_confirmation")):
        raise ToolDefinitionError(
            "eager=True: a tool that needs confirmation never starts before it is confirmed",
            function=owner,
            fix="drop eager=True, or destructive=/requires_confirmation=",
        )


def _checked_version(owner: str, given: Any) -> str:
    version = check_version(given)
    if version is None:
        raise ToolDefinitionError(
            f"version={given!r} is not a version: {VERSION_RULE}",
            function=owner,
            fix="pass version='2' (a later version is a higher number, or a later date)",
        )
    return version


CALLERS = ("direct", "programmatic")
_FIX_CALLERS = (
    "pass allowed_callers=['direct', 'programmatic'] (or ['programmatic']: only a program "
    "the model runs calls it)"
)


def _check_callers(owner: str, given: Any) -> tuple[Any, ...]:
    """`allowed_callers=`: some of `CALLERS`, at least one, each once."""
    if given == ():  # not given: nothing to check (every registration passes here)
        return ()
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise ToolDefinitionError(
            f"allowed_callers={given!r} must be a list", function=owner, fix=_FIX_CALLERS
        )
    found = list(given)
    if not found:
        raise ToolDefinitionError(
            "allowed_callers is empty: nobody could call the tool", function=owner, fix=_FIX_CALLERS
        )
    unknown = [c for c in found if c not in CALLERS]
    if unknown:
        raise ToolDefinitionError(
            f"allowed_callers: {unknown[0]!r} is neither 'direct' nor 'programmatic'",
            function=owner,
            fix=_FIX_CALLERS,
        )
    if len(set(found)) != len(found):
        raise ToolDefinitionError(
            "allowed_callers names a caller twice", function=owner, fix=_FIX_CALLERS
        )
    return tuple(found)


_FIX_DERIVED = (
    "annotate the return type with a TypedDict, dataclass, NamedTuple or pydantic model, "
    "or pass output_schema={'type': 'object', ...}"
)


def _check_output_schema(owner: str, name: str, given: Any, function: Any) -> JsonSchema | None:
    """`output_schema=`: a JSON Schema object, or True (derived from the return annotation);
    made strict (every property required, no other keys) or a `ToolDefinitionError`."""
    if given is None or given is False:
        return None
    if given is True:
        derived = return_object_schema(function, f"the result of {name}")
        if derived is None:
            raise ToolDefinitionError(
                "output_schema=True: the return annotation does not describe a JSON object",
                function=owner,
                fix=_FIX_DERIVED,
            )
        if derived.get("additionalProperties", True) is not False:
            raise ToolDefinitionError(
                "output_schema=True: the return annotation is an open object (a dict)",
                function=owner,
                fix=_FIX_DERIVED,
            )
        schema = derived
    elif isinstance(given, Mapping):
        schema = _checked_output(owner, given)
    else:
        raise ToolDefinitionError(
            f"output_schema must be a JSON Schema dict or True, not {type(given).__name__}",
            function=owner,
            fix=_FIX_DERIVED,
        )
    if schema.get("type") != "object" or schema.get("additionalProperties", True) is not False:
        raise ToolDefinitionError(
            "output_schema must describe a closed object (type: object, additionalProperties: "
            "false)",
            function=owner,
            fix="add 'additionalProperties': False (a strict output schema is an object)",
        )
    try:
        return make_strict(schema, tool=name, signature=False)
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(
            f"output_schema {exc.problem}", function=owner, fix=exc.fix
        ) from None


def _checked_output(owner: str, given: Mapping[str, Any]) -> JsonSchema:
    _check_metaschema(given, owner, "output_schema")
    try:
        schema: JsonSchema = copy_json(dict(given))
    except (TypeError, ValueError):
        raise ToolDefinitionError(
            "output_schema is not JSON", function=owner, fix="pass a dict of JSON values"
        ) from None
    return schema


MAX_EXAMPLES = 10
MAX_EXAMPLE_CHARS = 2000  # of one example, as JSON


def _check_examples(owner: str, examples: Any, validator: Validator) -> tuple[dict[str, Any], ...]:
    """`examples=`: a list of argument objects, each valid for the tool's schema."""
    fix = "pass examples=[{'city': 'Paris'}], each a dict of arguments the schema accepts"
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Iterable):
        raise ToolDefinitionError(
            "examples must be a list of argument dicts", function=owner, fix=fix
        )
    given = list(examples)
    if len(given) > MAX_EXAMPLES:
        raise ToolDefinitionError(
            f"{len(given)} examples; at most {MAX_EXAMPLES}", function=owner, fix=fix
        )
    out = []
    for number, example in enumerate(given, 1):
        try:
            text = json.dumps(example, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            text = ""
        if not isinstance(example, dict) or not text:
            raise ToolDefinitionError(
                f"example {number} is not a JSON object of arguments", function=owner, fix=fix
            )
        if len(text) > MAX_EXAMPLE_CHARS:
            raise ToolDefinitionError(
                f"example {number} is {len(text)} characters of JSON; at most {MAX_EXAMPLE_CHARS}",
                function=owner,
                fix="keep examples short",
            )
        problems = validator.validate(example)
        if problems:
            why = "; ".join(f"{p.location()}: {p.message}" for p in problems[:3])
            raise ToolDefinitionError(
                f"example {number} does not fit the parameters: {why}", function=owner, fix=fix
            )
        out.append(json.loads(text))  # a copy the caller cannot change
    return tuple(out)


def _check_guardrails(owner: str, stage: str, given: Any) -> tuple[Callable[[Any], Any], ...]:
    """`input_guardrails=` / `output_guardrails=`: one callable or a list of them."""
    found = (given,) if callable(given) else given
    if isinstance(found, (str, bytes, Mapping)) or not isinstance(found, Iterable):
        found = (given,)
    out = tuple(found)
    if not all(callable(g) for g in out):
        raise ToolDefinitionError(
            f"{stage}_guardrails must be functions (or a list of them)",
            function=owner,
            fix=f"pass {stage}_guardrails=[check], where check(event) returns None, False or "
            "a message",
        )
    return out


def _check_tags(owner: str, tags: Iterable[str]) -> Iterable[str]:
    if isinstance(tags, str):
        raise ToolDefinitionError(
            "tags must be a collection of strings, not one string",
            function=owner,
            fix=f"pass tags=[{tags!r}]",
        )
    try:
        collected = list(tags)
    except TypeError:
        collected = [tags]  # type: ignore[list-item]
    bad = [t for t in collected if not isinstance(t, str) or not t]
    if bad:
        raise ToolDefinitionError(
            f"tags must be non-empty strings, got {', '.join(map(repr, bad))}",
            function=owner,
            fix="pass tags=['search', 'read']",
        )
    return collected


def _check_scopes(owner: str, scopes: Iterable[str]) -> Iterable[str]:
    """OAuth scope tokens (RFC 6749 §3.3: printable ASCII, no space, quote or backslash)."""
    if isinstance(scopes, str):
        raise ToolDefinitionError(
            "scopes must be a collection of strings, not one string",
            function=owner,
            fix=f"pass scopes=[{scopes!r}]",
        )
    try:
        collected = list(scopes)
    except TypeError:
        collected = [scopes]  # type: ignore[list-item]
    bad = [s for s in collected if not isinstance(s, str) or not _is_scope_token(s)]
    if bad:
        raise ToolDefinitionError(
            f"scopes must be OAuth scope names (printable ASCII, no spaces or quotes), "
            f"got {', '.join(map(repr, bad))}",
            function=owner,
            fix="pass scopes=['orders:read']",
        )
    return collected


def _is_scope_token(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(c) <= 0x7E and c not in '"\\' for c in value)


# -- the call plan ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallPlan:
    """How dispatch turns a model's arguments into this tool's call (see `dispatch.binding`).

    Built once, at registration, from the schema and the parameter records.
    """

    validator: Validator  # the tool's own schema, compiled
    converters: tuple[tuple[str, Converter], ...]  # JSON value -> annotated type, by parameter
    null_means_default: frozenset[str]  # parameters whose null from the model means "default"
    absent_is_none: tuple[str, ...]  # ChatGLM3 "not required" parameters without a default
    context: tuple[tuple[str, InjectKind], ...]  # injected parameters: "context" | "raw"
    positional: tuple[tuple[str, Any], ...]  # positional-only parameters and their defaults
    reserved: frozenset[str]  # injected names the model may never send (even with **kwargs)
    fills: tuple[tuple[str, Callable[[], Any]], ...]  # defaults the function does not declare
    binds: bool  # context, absent, fills or positional: the call needs more than the arguments
    needs_context: tuple[str, ...]  # injected parameters that cannot do without `context=`
    nulls: NullDropper = field(repr=False, compare=False)
    closed_keys: frozenset[str] | None = None  # the only keys allowed (explicit schemas)
    record: tuple[str, Converter] | None = None  # flatten=True: parameter, builds it from all
    reads_context: bool = False  # a parameter gets a `ToolContext` (its key, its signal)


def _build_plan(
    name: str,
    parameters: JsonSchema,
    params: tuple[ParamRecord, ...],
    function: Callable[..., Any],
    owner: str,
    flatten: bool = False,
    nodes: Mapping[int, Node] | None = None,
    untrusted: bool = False,
    injected: tuple[tuple[str, InjectKind], ...] = (),
) -> CallPlan:
    try:
        # The tool's own copy of the schema (read-only from now on) is compiled in place, so
        # that the checks below reuse the nodes the validator compiled; `nodes` are the
        # checks of its parameters' fragments, compiled once per annotation.
        validator = Validator(parameters, copy=False, nodes=nodes, untrusted=untrusted)
    except ValueError as exc:
        raise ToolDefinitionError(
            f"the parameters schema of tool {name!r} cannot be validated: {exc}",
            function=owner,
            fix=getattr(exc, "fix", None) or "correct the schema",
        ) from None
    properties = parameters.get("properties", {})
    converters: list[tuple[str, Converter]] = []
    null_default: set[str] = set()
    absent: list[str] = []
    context: list[tuple[str, InjectKind]] = list(injected)  # from_schema's context_parameter
    positional: list[tuple[str, Any]] = []
    record: tuple[str, Converter] | None = None
    for p in params:
        if p.inject is not None:
            context.append((p.name, p.inject))
            continue
        if p.var_keyword:
            continue
        if flatten:  # the one record parameter: built from the whole arguments object
            record = (p.name, _record_converter(p, name))
            continue
        if p.positional_only:
            positional.append((p.name, None if p.default is MISSING else p.default))
        conv = converter_for(p.annotation, name, p.param)
        if conv is not None:
            converters.append((p.name, conv))
        if p.default is MISSING and not p.required and p.fill is None:
            absent.append(p.name)
        optional = p.default is not MISSING or not p.required
        if optional and not _takes_null(validator, properties.get(p.name, {})):
            null_default.add(p.name)  # strict mode offers null for it: "use the default"
    if not params or flatten:  # the schema's optional properties take null as "absent"
        required = set(parameters.get("required", ()))
        null_default = {
            key
            for key, schema in properties.items()
            if key not in required and not _takes_null(validator, schema)
        }
    open_keys = parameters.get("additionalProperties", True) is not False
    return CallPlan(
        validator=validator,
        converters=tuple(converters),
        null_means_default=frozenset(null_default),
        absent_is_none=tuple(absent),
        context=tuple(context),
        positional=tuple(positional),
        reserved=frozenset(n for n, _ in context) if open_keys else frozenset(),
        fills=tuple((p.name, p.fill) for p in params if p.fill is not None),
        binds=bool(context or absent or positional or any(p.fill for p in params) or record),
        record=record,
        needs_context=tuple(p.name for p in params if p.inject is not None and _needs_context(p)),
        # an untrusted schema's subschemas are checked by its own (bounded) validator
        nulls=NullDropper(parameters, validator.accepts if untrusted else None),
        closed_keys=_closed_keys(params, open_keys, function, properties),
        reads_context=any(kind == "context" for _, kind in context),
    )


def _record_converter(p: ParamRecord, tool: str) -> Converter:
    converter = converter_for(p.annotation, tool)
    if converter is None:  # a TypedDict of plain values: the dict itself
        return dict
    return converter


def _needs_context(p: ParamRecord) -> bool:
    """Whether an injected parameter cannot do without a context: no default, and a type
    (a `ToolContext`'s deps type) that does not admit None."""
    if p.default is not MISSING:
        return False
    tp = p.annotation
    if p.inject == "context":
        args = typing.get_args(tp)
        if not args:  # a bare `ToolContext`: it asks for a context
            return True
        tp = args[0]
    if tp in ANY_TYPES or tp is None or tp is type(None):
        return False
    return type(None) not in typing.get_args(tp)


def _takes_null(validator: Validator, schema: Any) -> bool:
    """Whether `schema` accepts null. Every keyword of a schema must hold, so a `type` that
    is one name other than "null" refuses it whatever else the schema says; anything else
    is asked of the validator."""
    if type(schema) is dict:
        kind = schema.get("type")
        if type(kind) is str and kind != "null":
            return False
    return validator.accepts(schema, None)


def _closed_keys(
    params: tuple[ParamRecord, ...],
    open_keys: bool,
    function: Callable[..., Any],
    properties: dict[str, Any],
) -> frozenset[str] | None:
    """For an explicit schema that allows extra keys in front of a function that takes no
    `**kwargs`: the keys the function takes (others are rejected, naming them, rather than
    failing inside the call with a TypeError). None when there is nothing to add."""
    if params or not open_keys:
        return None
    try:
        signature = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature):
        return None
    return frozenset(properties)
