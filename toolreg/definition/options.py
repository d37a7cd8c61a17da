"""The options of a tool, declared once: `ToolOptions`.

Every keyword `register_tool` / `register_schema` take besides `name` and `description` is
a field here, with its type (as a `Tool` holds it), default and description. The record
checks itself when it is made (`ToolOptions(timeout=0)` raises `ToolDefinitionError`) and
holds each value in one form: tags and scopes a frozenset, guardrails, examples and
callers tuples, a version in its canonical spelling, an output schema strict.
`OPTIONS` (the names), the `Tool`'s option attributes, `register_tool`'s typed overload and
the reference's table of tool options are read from it, or held to it by a test.

```python
options = ToolOptions(read_only=True, timeout=5, tags=["search"])
options.tags            # frozenset({'search'})
registry.register_tool(**options.given())(search)
```

Two checks need the tool as well as the record: `output_schema=True` is derived from the
function's return annotation (`ToolOptions.of`), and each example must fit the tool's
parameters (`check_examples`); `Tool.from_function` / `Tool.from_schema` run both.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ToolDefinitionError
from ..jsonvalues import copy_json
from ..validation.metaschema import conforms
from .returns import return_object_schema
from .schema import JsonSchema
from .strict import make_strict
from .versions import VERSION_RULE, check_version

if TYPE_CHECKING:
    from ..validation import Validator

__all__ = [
    "CALLERS",
    "MAX_EXAMPLES",
    "MAX_EXAMPLE_CHARS",
    "OPTIONS",
    "ResultFilter",
    "ToolOptions",
    "check_metaschema",
]

ResultFilter = Callable[[Any], Any]
"""A function of a tool's return value, run before it is rendered."""

CALLERS = ("direct", "programmatic")
"""Who may call a tool on the Responses API (`allowed_callers=`)."""
MAX_EXAMPLES = 10
MAX_EXAMPLE_CHARS = 2000  # of one example, as JSON


# eq=False: the comparison below is written by hand, as dataclass would write it; made by
# dataclass, it and its hash would cost `import toolreg` a quarter of a millisecond
@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ToolOptions:
    """Every option of a tool (see the module); checked, and held in one form, when made."""

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

    def __post_init__(self) -> None:
        for key, kinds, what in _POSITIVE:
            value = getattr(self, key)
            bad_number = isinstance(value, bool) or not isinstance(value, kinds)
            if value is not None and (bad_number or not math.isfinite(value) or value <= 0):
                raise ToolDefinitionError(f"{key}={value!r} must be {what}", fix=f"pass {key}=30")
        for key in _FLAGS:
            if type(getattr(self, key)) is not bool:
                raise ToolDefinitionError(f"{key} must be True or False", fix=f"pass {key}=True")
        _check_retries(self.retries)
        title = self.title
        if title is not None and (not isinstance(title, str) or not title.strip()):
            raise ToolDefinitionError(
                "title must be a non-empty string", fix="pass title='Get weather'"
            )
        if self.coerce is not None and not isinstance(self.coerce, bool):
            raise ToolDefinitionError(
                "coerce must be True, False or None (the registry's setting)",
                fix="pass coerce=False",
            )
        if self.task not in (None, "optional", "required"):
            raise ToolDefinitionError(
                f"task={self.task!r} must be 'optional', 'required' or None",
                fix="pass task='optional' (a task when the MCP client supports them, else inline)",
            )
        _check_worker_lost(self.on_worker_lost, self.task)
        _check_eager(self.eager, self.destructive or self.requires_confirmation)
        _check_lock(self.lock)
        if self.result_filter is not None and not callable(self.result_filter):
            raise ToolDefinitionError(
                "result_filter must be callable", fix="pass a function as result_filter="
            )
        # one form for each value: what was given may be any collection of the right things
        put = object.__setattr__
        put(self, "input_guardrails", _guardrails("input", self.input_guardrails))
        put(self, "output_guardrails", _guardrails("output", self.output_guardrails))
        if not _empty(self.examples):
            put(self, "examples", _examples(self.examples))
        if not _empty(self.allowed_callers):
            put(self, "allowed_callers", _callers(self.allowed_callers))
        if self.output_schema is not None:
            put(self, "output_schema", _output_schema(self.output_schema))
        if self.version is not None:
            put(self, "version", _version(self.version))
        if type(self.tags) is not frozenset or self.tags:
            put(self, "tags", frozenset(_tags(self.tags)))
        if type(self.scopes) is not frozenset or self.scopes:
            put(self, "scopes", frozenset(_scopes(self.scopes)))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(_values(self) == _values(other))

    def __hash__(self) -> int:
        return hash(_values(self))

    @staticmethod
    def check_names(given: Mapping[str, Any], *, owner: str) -> None:
        """Every key of `given` is a tool option, else a `ToolDefinitionError` naming `owner`
        and every option there is."""
        unknown = given.keys() - OPTIONS
        if unknown:
            raise ToolDefinitionError(
                f"unknown option {', '.join(map(repr, sorted(unknown)))}",
                function=owner,
                fix=f"use only name, description, {', '.join(sorted(OPTIONS))}",
            )

    @classmethod
    def of(
        cls,
        given: Mapping[str, Any],
        *,
        owner: str,
        name: str,
        function: Callable[..., Any],
    ) -> ToolOptions:
        """The options `given` to register the function `owner` as the tool `name`, checked
        (a `ToolDefinitionError` names `owner`); `output_schema=True` is derived from
        `function`'s return annotation."""
        try:
            if given.get("output_schema") is True:
                given = {**given, "output_schema": _derived_output_schema(name, function)}
            return cls(**given)
        except ToolDefinitionError as exc:
            if exc.function is not None:
                raise
            raise ToolDefinitionError(
                exc.problem, function=owner, parameter=exc.parameter, fix=exc.fix
            ) from None

    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults, as keywords (`register_tool(**...)`)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        }

    def check_examples(self, owner: str, validator: Validator) -> None:
        """Each example fits the tool's parameters (`validator`, the tool's compiled schema),
        else a `ToolDefinitionError` naming `owner`."""
        fix = "pass examples=[{'city': 'Paris'}], each a dict of arguments the schema accepts"
        for number, example in enumerate(self.examples, 1):
            problems = validator.validate(example)
            if problems:
                why = "; ".join(f"{p.location()}: {p.message}" for p in problems[:3])
                raise ToolDefinitionError(
                    f"example {number} does not fit the parameters: {why}", function=owner, fix=fix
                )


OPTIONS = frozenset(f.name for f in dataclasses.fields(ToolOptions))
_values = operator.attrgetter(*(f.name for f in dataclasses.fields(ToolOptions)))
"""Options `register_tool` / `register_schema` accept besides `name` and `description`:
the fields of `ToolOptions`."""

_POSITIVE: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("timeout", (int, float), "a positive number of seconds"),
    ("max_result_chars", int, "a positive whole number"),
    ("max_result_bytes", int, "a positive whole number"),
)
_FLAGS = tuple(f.name for f in dataclasses.fields(ToolOptions) if f.type == "bool")


def check_metaschema(schema: Mapping[str, Any], owner: str | None, what: str) -> None:
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


def _empty(value: object) -> bool:
    """The default `()`: nothing given, nothing to check."""
    return type(value) is tuple and not value


def _check_retries(retries: object) -> None:
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or retries < 0
    ):
        raise ToolDefinitionError(
            f"retries={retries!r} must be a whole number >= 0, or None (the conversation's "
            "tool_retries)",
            fix="pass retries=2",
        )


def _check_worker_lost(lost: object, task: object) -> None:
    if lost is None:
        return
    if lost not in ("rerun", "fail"):
        raise ToolDefinitionError(
            f"on_worker_lost={lost!r} must be 'rerun', 'fail' or None",
            fix="pass on_worker_lost='fail' (a task whose worker dies ends failed) or 'rerun'",
        )
    if task is None:
        raise ToolDefinitionError(
            "on_worker_lost= applies to a tool run as an MCP task, and this one is not",
            fix="add task='optional' (or 'required'), or drop on_worker_lost=",
        )


def _check_eager(eager: object, confirmed: bool) -> None:
    if eager is not None and not isinstance(eager, bool):
        raise ToolDefinitionError(
            "eager must be True, False or None (read_only or idempotent tools start early)",
            fix="pass eager=True",
        )
    if eager and confirmed:
        raise ToolDefinitionError(
            "eager=True: a tool that needs confirmation never starts before it is confirmed",
            fix="drop eager=True, or destructive=/requires_confirmation=",
        )


def _check_lock(lock: object) -> None:
    if lock is not None and not callable(lock) and (not isinstance(lock, str) or not lock):
        raise ToolDefinitionError(
            f"lock={lock!r} must be a resource's name, or a function of the arguments that "
            "gives its key",
            fix="pass lock='ledger', or lock=lambda args: args['account_id']",
        )


def _version(given: Any) -> str:
    version = check_version(given)
    if version is None:
        raise ToolDefinitionError(
            f"version={given!r} is not a version: {VERSION_RULE}",
            fix="pass version='2' (a later version is a higher number, or a later date)",
        )
    return version


_FIX_CALLERS = (
    "pass allowed_callers=['direct', 'programmatic'] (or ['programmatic']: only a program "
    "the model runs calls it)"
)


def _callers(given: Any) -> tuple[Any, ...]:
    """`allowed_callers=`: some of `CALLERS`, at least one, each once."""
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise ToolDefinitionError(f"allowed_callers={given!r} must be a list", fix=_FIX_CALLERS)
    found = list(given)
    if not found:
        raise ToolDefinitionError(
            "allowed_callers is empty: nobody could call the tool", fix=_FIX_CALLERS
        )
    unknown = [c for c in found if c not in CALLERS]
    if unknown:
        raise ToolDefinitionError(
            f"allowed_callers: {unknown[0]!r} is neither 'direct' nor 'programmatic'",
            fix=_FIX_CALLERS,
        )
    if len(set(found)) != len(found):
        raise ToolDefinitionError("allowed_callers names a caller twice", fix=_FIX_CALLERS)
    return tuple(found)


_FIX_DERIVED = (
    "annotate the return type with a TypedDict, dataclass, NamedTuple or pydantic model, "
    "or pass output_schema={'type': 'object', ...}"
)


def _derived_output_schema(name: str, function: Callable[..., Any]) -> JsonSchema:
    """`output_schema=True`: the schema of `function`'s return annotation, a closed object."""
    derived = return_object_schema(function, f"the result of {name}")
    if derived is None:
        raise ToolDefinitionError(
            "output_schema=True: the return annotation does not describe a JSON object",
            fix=_FIX_DERIVED,
        )
    if derived.get("additionalProperties", True) is not False:
        raise ToolDefinitionError(
            "output_schema=True: the return annotation is an open object (a dict)",
            fix=_FIX_DERIVED,
        )
    return derived


def _output_schema(given: Any) -> JsonSchema | None:
    """`output_schema=`: a JSON Schema object, made strict (every property required, no
    other keys), or a `ToolDefinitionError`. False is None."""
    if given is False:
        return None
    if given is True:
        raise ToolDefinitionError(
            "output_schema=True is derived from a function's return annotation",
            fix="register the function with output_schema=True, or pass the schema itself",
        )
    if not isinstance(given, Mapping):
        raise ToolDefinitionError(
            f"output_schema must be a JSON Schema dict or True, not {type(given).__name__}",
            fix=_FIX_DERIVED,
        )
    check_metaschema(given, None, "output_schema")
    try:
        schema: JsonSchema = copy_json(dict(given))
    except (TypeError, ValueError):
        raise ToolDefinitionError(
            "output_schema is not JSON", fix="pass a dict of JSON values"
        ) from None
    if schema.get("type") != "object" or schema.get("additionalProperties", True) is not False:
        raise ToolDefinitionError(
            "output_schema must describe a closed object (type: object, additionalProperties: "
            "false)",
            fix="add 'additionalProperties': False (a strict output schema is an object)",
        )
    try:
        return make_strict(schema, tool="", signature=False)
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(f"output_schema {exc.problem}", fix=exc.fix) from None


def _examples(examples: Any) -> tuple[dict[str, Any], ...]:
    """`examples=`: a list of argument objects, JSON, bounded; each a copy of the caller's
    (whether each fits the tool's parameters is `ToolOptions.check_examples`)."""
    fix = "pass examples=[{'city': 'Paris'}], each a dict of arguments the schema accepts"
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Iterable):
        raise ToolDefinitionError("examples must be a list of argument dicts", fix=fix)
    given = list(examples)
    if len(given) > MAX_EXAMPLES:
        raise ToolDefinitionError(f"{len(given)} examples; at most {MAX_EXAMPLES}", fix=fix)
    out = []
    for number, example in enumerate(given, 1):
        try:
            text = json.dumps(example, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            text = ""
        if not isinstance(example, dict) or not text:
            raise ToolDefinitionError(
                f"example {number} is not a JSON object of arguments", fix=fix
            )
        if len(text) > MAX_EXAMPLE_CHARS:
            raise ToolDefinitionError(
                f"example {number} is {len(text)} characters of JSON; at most {MAX_EXAMPLE_CHARS}",
                fix="keep examples short",
            )
        out.append(json.loads(text))  # a copy the caller cannot change
    return tuple(out)


def _guardrails(stage: str, given: Any) -> tuple[Callable[[Any], Any], ...]:
    """`input_guardrails=` / `output_guardrails=`: one callable or a list of them."""
    if _empty(given):
        return ()
    found = (given,) if callable(given) else given
    if isinstance(found, (str, bytes, Mapping)) or not isinstance(found, Iterable):
        found = (given,)
    out = tuple(found)
    if not all(callable(g) for g in out):
        raise ToolDefinitionError(
            f"{stage}_guardrails must be functions (or a list of them)",
            fix=f"pass {stage}_guardrails=[check], where check(event) returns None, False or "
            "a message",
        )
    return out


def _tags(tags: Any) -> list[Any]:
    if isinstance(tags, str):
        raise ToolDefinitionError(
            "tags must be a collection of strings, not one string", fix=f"pass tags=[{tags!r}]"
        )
    try:
        collected = list(tags)
    except TypeError:
        collected = [tags]
    bad = [t for t in collected if not isinstance(t, str) or not t]
    if bad:
        raise ToolDefinitionError(
            f"tags must be non-empty strings, got {', '.join(map(repr, bad))}",
            fix="pass tags=['search', 'read']",
        )
    return collected


def _scopes(scopes: Any) -> list[Any]:
    """OAuth scope tokens (RFC 6749 §3.3: printable ASCII, no space, quote or backslash)."""
    if isinstance(scopes, str):
        raise ToolDefinitionError(
            "scopes must be a collection of strings, not one string",
            fix=f"pass scopes=[{scopes!r}]",
        )
    try:
        collected = list(scopes)
    except TypeError:
        collected = [scopes]
    bad = [s for s in collected if not isinstance(s, str) or not _is_scope_token(s)]
    if bad:
        raise ToolDefinitionError(
            f"scopes must be OAuth scope names (printable ASCII, no spaces or quotes), "
            f"got {', '.join(map(repr, bad))}",
            fix="pass scopes=['orders:read']",
        )
    return collected


def _is_scope_token(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(c) <= 0x7E and c not in '"\\' for c in value)
