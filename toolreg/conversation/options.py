"""The options of a conversation, declared once: `ConversationOptions`.

Every keyword option of `Conversation(client, model, ...)` / `AsyncConversation` is a field
here, with its type, default, description and what a saved state does with it (`saved`:
`export_state` writes it; `narrows`: `from_state` keeps the smaller of the saved limit and
the application's). The record checks itself when it is made; the constructor, the saved
state (`export_state` / `from_state`) and the docs' options table all read it. The
collaborators are not options: the client, the model, `registry` (the tools), `context`,
and where the state lives (`state_store`, `conversation_id`, `key`).

```python
options = ConversationOptions(max_rounds=4, stream=True)
chat = Conversation(client, "qwen2.5", **options.given())
```
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..definition.versions import VERSION_RULE, check_version
from ..dispatch import ConfirmCallback
from ..errors import UsageError
from ..toolsets.search import ToolSearch
from .events import Hooks, StreamEvent
from .guardrails import Guardrail
from .policies import OnCallLimit

__all__ = [
    "COLLABORATORS",
    "DEFERRED_SEARCH",
    "ConversationOptions",
    "DeferredSearch",
    "check_request_options",
    "check_saved",
    "narrowing",
    "saved_checks",
    "sdk_parameters",
]


DeferredSearch = Literal["function", "client", "hosted"]
DEFERRED_SEARCH: tuple[DeferredSearch, ...] = ("function", "client", "hosted")
"""How the model searches deferred tools (`deferred_search=`): toolreg's `search_tools`
function (any endpoint), the API's own search (the Responses API, Anthropic's Messages API)
answered by toolreg's index ("client") or by the server ("hosted")."""


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _count_or_none(value: Any) -> bool:
    return value is None or _count(value)


def _positive_or_none(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 1)


def _names_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _limits(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()
    )


def _defer_or_none(value: Any) -> bool:
    return value in ("defer", None) and not isinstance(value, bool)


def _object_or_none(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _versions_or_none(value: Any) -> bool:
    return value is None or (
        isinstance(value, dict)
        and all(isinstance(k, str) and check_version(v) == v for k, v in value.items())
    )


def _option(
    default: Any = None,
    *,
    doc: str,
    saved: Callable[[Any], bool] | None = None,
    narrows: bool = False,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A field of `ConversationOptions`: `saved` is the type check a saved value passes
    (None: the option is not saved); `narrows`: a saved limit only narrows on resume."""
    metadata = {"doc": doc, "saved": saved, "narrows": narrows}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, kw_only=True)
class ConversationOptions:
    """Every option of a conversation (see the module docstring); checked when made."""

    tools: str | Sequence[str] | None = _option(
        doc="the tools offered: tool names or tags (one str is one entry); None: all",
        saved=_names_or_none,
    )
    system: str | None = _option(doc="the system message the history starts with")
    max_rounds: int = _option(
        8,
        doc="rounds of tool calls in a turn; then the model must answer (stop_reason max_rounds)",
        saved=_count,
        narrows=True,
    )
    parallel: bool = _option(
        True, doc="run a round's calls side by side (False: one after another)", saved=_flag
    )
    strict: bool = _option(
        False, doc="offer the tools in strict mode (defaults become nullable)", saved=_flag
    )
    confirm: ConfirmCallback | Literal["defer"] | None = _option(
        doc='a callback (tool, arguments) -> bool for tools that need confirmation, or "defer" '
        "to stop the turn for a person's approval (resume() carries it on)",
        saved=_defer_or_none,
    )
    dialect: str | None = _option(
        doc='the wire API: "tools", "functions", "chatglm3", "responses" or "anthropic"; '
        "None: the client's own",
        saved=_text,
    )
    state: Literal["client", "server"] = _option(
        "client",
        doc='"server": the endpoint keeps the history (Responses previous_response_id)',
        saved=_text,
    )
    name: str = _option("toolreg", doc="the conversation's name in traces", saved=_text)
    hooks: Hooks | None = _option(
        doc="Hooks(before_model_call=..., after_model_call=..., before_tool_call=..., "
        "after_tool_call=...); before_tool_call may veto a call"
    )
    tool_choice: str = _option(
        "auto", doc='"auto", "none", "required" or the name of an offered tool', saved=_text
    )
    final_call: Literal["tool_choice_none", "drop_tools"] = _option(
        "tool_choice_none",
        doc="how the last allowed model call forbids tools: tool_choice none, or no tools sent",
        saved=_text,
    )
    assistant_content: Literal["empty", "null", "omit"] = _option(
        "empty",
        doc='how an assistant message with calls and no text is echoed: content "", null, '
        "or left out (for servers that need one of them)",
        saved=_text,
    )
    stream: bool = _option(
        False,
        doc="stream the model's answers (on_text and stream() get the text as it comes; "
        "safe calls start early)",
        saved=_flag,
    )
    on_text: Callable[[str], Any] | None = _option(
        doc="called with each piece of answer text as it streams"
    )
    on_event: Callable[[StreamEvent], Any] | None = _option(
        doc="called with every event of a turn, in order (the events stream() yields): "
        "send() and resume() feed it too; AsyncConversation awaits an async one"
    )
    output_retries: int = _option(
        2,
        doc="times invalid structured output (output_type=) is sent back to be fixed",
        saved=_count,
        narrows=True,
    )
    max_history_messages: int | None = _option(
        doc="at most this many messages sent per model call (trim_history keeps calls with "
        "their results and the turn's question)",
        saved=_count_or_none,
    )
    max_history_chars: int | None = _option(
        doc="at most this many characters of history sent per model call", saved=_count_or_none
    )
    advertise_required: bool = _option(
        True,
        doc="tell the model which parameters are required (False: it leaves out what it does "
        "not know and is told what is missing)",
        saved=_flag,
    )
    force_tools: bool = _option(
        False, doc='tool_choice "required" on every round but the last', saved=_flag
    )
    max_repeats: int | None = _option(
        3,
        doc="the same call is refused in this many rounds in a row (None: no limit, e.g. "
        "for polling tools)",
        saved=_count_or_none,
        narrows=True,
    )
    output_strict: bool = _option(
        True,
        doc="send output_type's schema strict whenever it can be (False: as it is)",
        saved=_flag,
    )
    tool_search: int | ToolSearch | None = _option(
        doc="pick the tools offered per model call by searching the catalog with the turn's "
        "question: the number of tools, or a ToolSearch",
        saved=_object_or_none,
    )
    deferred_search: DeferredSearch = _option(
        "function",
        doc='how the model finds deferred tools (defer_loading=True): "function" (a '
        'search_tools tool), "client" or "hosted" (the Responses API\'s tool_search)',
        saved=_text,
    )
    tool_retries: int | None = _option(
        2,
        doc="retries a tool may ask for in a turn (ToolRetry, invalid arguments), unless it "
        "has its own retries=; then the turn stops (stop_reason retry_limit)",
        saved=_count_or_none,
        narrows=True,
    )
    max_calls: Mapping[str, int] | None = _option(
        doc='calls per tool in a turn, e.g. {"search": 5}', saved=_limits
    )
    max_tool_calls: int | None = _option(
        doc="tool calls in a turn, all tools together", saved=_count_or_none, narrows=True
    )
    on_call_limit: OnCallLimit = _option(
        "tell",
        doc='a call past a limit: "tell" the model (the turn goes on) or "stop" the turn',
        saved=lambda value: value in ("tell", "stop"),
    )
    input_guardrails: Guardrail | Sequence[Guardrail] | None = _option(
        doc="checks of every call's validated arguments before it runs (allow, reject with "
        "a message, or raise to stop the turn)"
    )
    output_guardrails: Guardrail | Sequence[Guardrail] | None = _option(
        doc="checks of every result before the model reads it"
    )
    eager_tools: bool | None = _option(
        doc="with stream=True, start a call as soon as its arguments are complete: None: "
        "read-only, idempotent and eager=True tools; True: the same, and required; False: never"
    )
    max_concurrency: int | None = _option(
        doc="calls of one model answer that run at once, those started early included "
        "(None: the registry's max_concurrency)",
        saved=_positive_or_none,
    )
    versions: Mapping[str, str] | None = _option(
        doc='the version of a tool this conversation uses, by name, e.g. {"search": "1"} '
        "(pinned(registry, versions): the other tools at their latest); saved with its "
        "state, so a resumed conversation goes on with the versions it began with",
        saved=_versions_or_none,
    )

    def __post_init__(self) -> None:
        _check_choices(self)
        _check_counts(self)
        _check_flags(self)
        _check_eager(self)
        _check_versions(self)
        if isinstance(self.confirm, str) and self.confirm != "defer":
            raise UsageError(f'confirm must be a callable, "defer" or None, not {self.confirm!r}')
        if self.hooks is not None and not isinstance(self.hooks, Hooks):
            raise UsageError(f"hooks must be a toolreg.Hooks, not {type(self.hooks).__name__}")
        trims = self.max_history_messages is not None or self.max_history_chars is not None
        if self.state == "server" and trims:
            raise UsageError(
                'max_history_messages / max_history_chars trim what is sent; with state="server" '
                "the server keeps the whole history"
            )

    @classmethod
    def _of(cls, values: dict[str, Any]) -> ConversationOptions:
        """`ConversationOptions(**values)` for `values` that name every field (what a
        conversation's constructor passes on): the same record, checked the same way, made
        without a frozen dataclass's `object.__setattr__` per field (a third of the time
        a conversation takes to make)."""
        options = object.__new__(cls)
        options.__dict__.update(values)
        options.__post_init__()
        return options

    def given(self) -> dict[str, Any]:
        """The options as keyword arguments of `Conversation(client, model, ...)`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def saved(self) -> dict[str, Any]:
        """The options `export_state` writes, as JSON values."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.metadata["saved"] is None:
                continue
            value = getattr(self, f.name)
            if f.name == "tools" and isinstance(value, str):
                value = [value]
            elif f.name == "tools" and value is not None:
                value = list(value)
            elif f.name == "confirm":
                value = "defer" if value == "defer" else None
            elif f.name == "tool_search":
                value = None if value is None else ToolSearch.of(value).to_json()  # type: ignore[union-attr]
            elif f.name == "max_calls":
                value = {} if value is None else dict(value)
            elif f.name == "versions" and value is not None:
                value = {name: check_version(v) for name, v in value.items()}
            out[f.name] = value
        return out


COLLABORATORS = ("client", "model", "registry", "context", "state_store", "conversation_id", "key")
"""The constructor's arguments that are not options: what the conversation works with."""


def saved_checks() -> dict[str, Callable[[Any], bool]]:
    """The options a state saves, each with the type check its value passes."""
    return {
        f.name: f.metadata["saved"]
        for f in dataclasses.fields(ConversationOptions)
        if f.metadata["saved"] is not None
    }


def narrowing() -> dict[str, bool]:
    """The saved limits `from_state` only narrows, each with whether None (no limit) is
    allowed."""
    return {
        f.name: f.metadata["saved"] is _count_or_none
        for f in dataclasses.fields(ConversationOptions)
        if f.metadata["narrows"]
    }


def check_saved(name: str, value: Any) -> bool:
    """Whether `value` is of the type a saved `name` has (a limit, for narrowing)."""
    check: Callable[[Any], bool] | None = None
    for f in dataclasses.fields(ConversationOptions):
        if f.name == name:
            check = f.metadata["saved"]
    return check is not None and check(value)


def _check_choices(o: ConversationOptions) -> None:
    choices: tuple[tuple[str, Any, tuple[str, ...]], ...] = (
        ("final_call", o.final_call, ("tool_choice_none", "drop_tools")),
        ("assistant_content", o.assistant_content, ("empty", "null", "omit")),
        ("state", o.state, ("client", "server")),
    )
    for key, value, allowed in choices:
        if value not in allowed or isinstance(value, bool):
            quoted = [f'"{a}"' for a in allowed]
            shown = f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            raise UsageError(f"{key} must be {shown}, not {value!r}")


def _check_counts(o: ConversationOptions) -> None:
    for key in ("max_rounds", "output_retries"):
        if not _count(getattr(o, key)):
            raise UsageError(f"{key} must be >= 0 (a whole number), not {getattr(o, key)!r}")
    for key in ("max_history_messages", "max_history_chars"):
        if not _count_or_none(getattr(o, key)):
            raise UsageError(f"{key} must be a whole number >= 0 or None, not {getattr(o, key)!r}")
    if not _positive_or_none(o.max_concurrency):
        raise UsageError(
            f"max_concurrency must be a whole number >= 1 or None (the registry's), not "
            f"{o.max_concurrency!r}"
        )
    repeats = o.max_repeats
    if repeats is not None and (not _count(repeats) or repeats < 2):
        raise UsageError(
            f"max_repeats={repeats!r}: a whole number >= 2 (the round in which the same "
            "call is refused), or None for no limit"
        )


def _check_flags(o: ConversationOptions) -> None:
    flags = ("parallel", "strict", "stream", "advertise_required", "force_tools", "output_strict")
    for key in flags:
        value = getattr(o, key)
        if not isinstance(value, bool):
            raise UsageError(f"{key} must be True or False, not {value!r}")
    if not o.advertise_required and o.strict:
        raise UsageError("advertise_required=False cannot be combined with strict=True")


def _check_eager(o: ConversationOptions) -> None:
    eager = o.eager_tools
    if eager is not None and not isinstance(eager, bool):
        raise UsageError(f"eager_tools must be True, False or None, not {eager!r}")
    if eager and not o.stream:
        raise UsageError(
            "eager_tools=True starts tools while the answer streams: it needs stream=True"
        )
    if eager and not o.parallel:
        raise UsageError(
            "eager_tools=True runs calls beside each other: it cannot be combined with "
            "parallel=False"
        )


def _check_versions(o: ConversationOptions) -> None:
    versions = o.versions
    if versions is None:
        return
    if not isinstance(versions, Mapping) or not all(
        isinstance(k, str) and check_version(v) is not None for k, v in versions.items()
    ):
        raise UsageError(
            f"versions={versions!r}: maps tool names to versions ({VERSION_RULE}), e.g. "
            "versions={'search': '1'}"
        )


# -- request options: every keyword the constructor does not know goes to the endpoint -------

_OWN_OPTIONS = (*COLLABORATORS[2:], *(f.name for f in dataclasses.fields(ConversationOptions)))
_SPELLED = {"toolset": "registry", "toolsets": "registry"}  # said another way, in the docs
_SIGNATURES: dict[Any, frozenset[str] | None] = {}  # a create method -> its keywords


def sdk_parameters(provider: Any, client: Any) -> frozenset[str] | None:
    """The keywords the client's create method for this dialect takes, when its signature
    says so; None when it does not (no such method, or one that takes **kwargs)."""
    try:
        method = provider.create(client)
    except AttributeError:
        return None
    key = getattr(method, "__func__", method)
    try:
        return _SIGNATURES[key]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        pass
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        found = None
    else:
        kinds = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
        loose = any(p.kind in kinds for p in parameters.values())
        found = None if loose else frozenset(parameters)
    with contextlib.suppress(TypeError):
        if len(_SIGNATURES) > 64:  # a client class per test, say: the map stays small
            _SIGNATURES.clear()
        _SIGNATURES[key] = found
    return found


def check_request_options(given: Mapping[str, Any], sdk: frozenset[str] | None) -> None:
    """Refuse a keyword that is neither a conversation option nor a request option, with
    the nearest valid name. A keyword the SDK's create method takes (`sdk`) is a request
    option; when that method's keywords are known, any other is refused; when they are not
    (a client of another make, a method that takes **kwargs), only a near miss of one of the
    conversation's own options is (`difflib`, ratio 0.75 or more: `max_round`,
    `tool_retry`), and the rest go to the endpoint as they are."""
    import difflib  # only when there are request options

    for key in given:
        if key in _SPELLED:
            raise UsageError(
                f"Conversation({key}=...): the conversation's toolset is given as "
                f"{_SPELLED[key]}= (any Toolset: a ToolRegistry, a Mount, a combined, "
                "prefixed, filtered or searchable view)"
            )
        if sdk is not None and key in sdk:
            continue
        near = difflib.get_close_matches(key, _OWN_OPTIONS, n=1, cutoff=0.75)
        if not near and sdk is None:
            continue  # nothing says it is wrong: the endpoint decides
        if not near and sdk is not None:
            near = difflib.get_close_matches(key, sorted(sdk), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}=?" if near else ""
        where = ""
        if sdk is not None:
            where = " nor a parameter of the client's create method"
            if "extra_body" in sdk:
                hint += f" (a parameter only your endpoint knows: extra_body={{{key!r}: ...}})"
        raise UsageError(f"Conversation({key}=...) is not an option of Conversation{where}{hint}")
