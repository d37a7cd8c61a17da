"""`Tool`: one registered tool, built from a function or from an explicit JSON Schema.

Everything a call needs is built here, at registration, so that every problem surfaces
then: the schema, its strict form (for strict tools), the compiled validator and the
`CallPlan` that says how dispatch turns a model's arguments into the function's call.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import operator
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .definition.conversion import converter_for
from .definition.docstrings import EMPTY_DOC, parse_docstring
from .definition.fields import kind_of
from .definition.names import NAME_RULES, accepted_somewhere
from .definition.options import OPTIONS, ResultFilter, ToolOptions, check_metaschema
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
from .errors import ToolDefinitionError
from .jsonvalues import copy_json
from .types import ANY_TYPES, Converter
from .validation import Validator
from .validation.drafts import DraftError, Normalized, normalize_schema
from .validation.keywords import Node
from .validation.nulls import NullDropper
from .validation.refs import RefError, check_refs
from .validation.untrusted import UntrustedSchemaError, check_size

__all__ = ["OPTIONS", "CallPlan", "Tool"]

_NO_OPTIONS = ToolOptions()
_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ToolOptions))
_option_values = operator.attrgetter(*_OPTION_NAMES)  # a record -> its values, in order


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A tool: what the model is told (name, description, parameters) and what runs.

    `parameters` is the JSON Schema of the arguments object; treat it as read-only.
    `options` is the `ToolOptions` it was registered with; each option is also an attribute
    of its own (`tool.timeout`), read from that record. Options are read by dispatch
    (`timeout`, `destructive`, `requires_confirmation`, `max_result_chars`,
    `max_result_bytes`, `result_filter`, `coerce`), by exports (`read_only`, `destructive` as
    MCP annotations; `strict`) and by an MCP server (`scopes`: the OAuth scopes a client's
    token must hold for the tool to be listed or called).
    """

    name: str
    description: str
    parameters: JsonSchema
    function: Callable[..., Any]
    plan: CallPlan = field(repr=False)
    options: ToolOptions = _NO_OPTIONS
    """The tool's options, checked: the record its option attributes below are read from."""
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
    # The options, each an attribute of its own (read on every dispatch: a slot, not a
    # property), set from `options` and from nothing else; see `ToolOptions` for each.
    strict: bool = field(init=False, repr=False)
    read_only: bool = field(init=False, repr=False)
    destructive: bool = field(init=False, repr=False)
    requires_confirmation: bool = field(init=False, repr=False)
    timeout: float | None = field(init=False, repr=False)
    return_direct: bool = field(init=False, repr=False)
    max_result_chars: int | None = field(init=False, repr=False)
    max_result_bytes: int | None = field(init=False, repr=False)
    tags: frozenset[str] = field(init=False, repr=False)
    result_filter: ResultFilter | None = field(init=False, repr=False)
    coerce: bool | None = field(init=False, repr=False)
    flatten: bool = field(init=False, repr=False)
    title: str | None = field(init=False, repr=False)
    idempotent: bool = field(init=False, repr=False)
    defer_loading: bool = field(init=False, repr=False)
    examples: tuple[dict[str, Any], ...] = field(init=False, repr=False)
    scopes: frozenset[str] = field(init=False, repr=False)
    retries: int | None = field(init=False, repr=False)
    task: Literal["optional", "required"] | None = field(init=False, repr=False)
    on_worker_lost: Literal["rerun", "fail"] | None = field(init=False, repr=False)
    input_guardrails: tuple[Callable[[Any], Any], ...] = field(init=False, repr=False)
    output_guardrails: tuple[Callable[[Any], Any], ...] = field(init=False, repr=False)
    eager: bool | None = field(init=False, repr=False)
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] = field(init=False, repr=False)
    output_schema: JsonSchema | None = field(init=False, repr=False)
    lock: str | Callable[[dict[str, Any]], Any] | None = field(init=False, repr=False)
    version: str | None = field(init=False, repr=False)
    needs_confirmation: bool = field(init=False, repr=False)
    """`destructive` or `requires_confirmation`: dispatch asks `confirm=` first."""

    def __post_init__(self) -> None:
        options = self.options
        for key, value in zip(_OPTION_NAMES, _option_values(options), strict=True):
            object.__setattr__(self, key, value)
        # read on every dispatch: worked out once
        object.__setattr__(
            self, "needs_confirmation", options.destructive or options.requires_confirmation
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
        ToolOptions.check_names(options, owner=qualified_name(fn))
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
            options,
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
        ToolOptions.check_names(options, owner=owner)
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
            options,
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
        )

    @classmethod
    def _checked(
        cls,
        given: Mapping[str, Any],
        *,
        owner: str,
        nodes: Mapping[int, Node] | None = None,
        untrusted: bool = False,
        injected: tuple[tuple[str, InjectKind], ...] = (),
        **fields: Any,
    ) -> Tool:
        name, parameters, function = fields["name"], fields["parameters"], fields["function"]
        options = ToolOptions.of(given, owner=owner, name=name, function=function)
        if not callable(function):
            raise ToolDefinitionError(
                "function must be callable", function=owner, fix="pass a function as function="
            )
        if options.strict:  # fail loud now, not at export
            signature = "params" in fields  # from_function; from_schema has no signature
            fields["strict_parameters"] = make_strict(parameters, tool=name, signature=signature)
        plan = _build_plan(
            name,
            parameters,
            fields.get("params", ()),
            function,
            owner,
            options.flatten,
            nodes,
            untrusted,
            injected,
        )
        if options.examples:
            options.check_examples(owner, plan.validator)
        return cls(plan=plan, options=options, **fields)

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


def _checked_schema(parameters: Mapping[str, Any], owner: str, name: str) -> JsonSchema:
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        raise ToolDefinitionError(
            'the parameters schema must be a JSON object schema with "type": "object"',
            function=owner,
            fix='wrap the arguments: {"type": "object", "properties": {...}}',
        )
    check_metaschema(parameters, owner, "the parameters schema")
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


# -- the call plan ----------------------------------------------------------------------------


# eq=False: a plan is never compared (a tool is its own identity); a generated comparison
# and hash would cost `import toolreg` a quarter of a millisecond
@dataclass(frozen=True, slots=True, eq=False)
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
    nulls: NullDropper = field(repr=False)
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
