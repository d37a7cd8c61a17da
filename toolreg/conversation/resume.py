"""A conversation to a state and back: `export_state`'s and `from_state`'s work.

`exported(...)` is `Conversation.export_state()`'s state (the codec writes it, see
`state`), `rebuilt(...)` the conversation `Conversation.from_state()` builds from one.
A state is untrusted data: its options are checked (`saved_options`) and may only narrow
the application's where they are limits (`resumed_options`), and its request options may
set nothing the loop writes itself (a paused round is checked by `approvals`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import ConversationStateError, UsageError
from ..tool import Tool
from ..toolsets import Toolset
from ..toolsets.search import ToolSearch
from .options import (
    COLLABORATORS,
    ConversationOptions,
    check_saved,
    narrowing,
    saved_checks,
    sdk_parameters,
)
from .policies import narrowed_calls
from .providers import provider_for
from .signing import signing_keys
from .state import Loaded, bad_state, dump_state, load_state

if TYPE_CHECKING:
    from .approvals import Paused

__all__ = [
    "CONSTRUCTOR_OPTIONS",
    "SAVED_OPTIONS",
    "exported",
    "rebuilt",
    "resumed_options",
    "saved_options",
]

Json = dict[str, Any]


class _Built(Protocol):
    options: ConversationOptions


C = TypeVar("C", bound=_Built)


def exported(
    *,
    model: str,
    options: ConversationOptions,
    tool_filter: list[str] | None,
    request_options: Mapping[str, Any],
    messages: list[Json],
    previous: tuple[str, int] | None,
    paused: Paused | None,
    discovered: list[str],
    conversation_id: str,
    key: Any,
) -> Json:
    """A conversation's state (see `Conversation.export_state`): signed with the first of
    `key`'s keys; a paused turn keeps the dict, which its resume marks "resumed"."""
    keys = signing_keys(key)
    unsaved = [k for k, v in request_options.items() if not _is_json(v)]
    if unsaved:
        raise UsageError(
            f"export_state(): the request option(s) {', '.join(unsaved)} are not JSON; "
            "leave them out and give them to from_state() instead"
        )
    state = dump_state(
        options={
            "model": model,
            **options.saved(),
            "tools": tool_filter,
            "request_options": request_options,
        },
        messages=messages,
        previous=previous,
        turn=None if paused is None else paused.turn,
        output=None if paused is None else paused.shape,
        schemas={} if paused is None else paused.schemas,
        keys=keys,
        discovered=discovered,
        conversation_id=conversation_id,
    )
    if paused is not None:
        paused.states.append(state)
    return state


def rebuilt(
    build: Callable[..., C],
    client: Any,
    state: Json,
    key: Any,
    given: Mapping[str, Any],
    toolset: Toolset,
) -> tuple[C, Loaded]:
    """The conversation `build(model, **options)` makes from a state (see
    `Conversation.from_state`: the application's options `given` override the state's,
    except what only narrows), and the state read back, for the conversation to take."""
    if "state_store" in given:
        raise UsageError(
            "from_state() rebuilds a conversation from a state you hold; one with "
            "state_store= loads its own (construct it with state_store= and "
            "conversation_id=)"
        )
    loaded = load_state(state, signing_keys(key))
    model, saved, saved_request = saved_options(loaded.options)
    constructor, request = resumed_options(saved, saved_request, given, toolset)
    model = constructor.pop("model", model)
    try:
        chat = build(model, **constructor, **request)
    except ConversationStateError:
        raise
    except UsageError:
        try:  # whose options are wrong: the state's, or the application's?
            build(model, **saved, **saved_request)
        except UsageError as err:
            raise ConversationStateError(
                f"not a usable conversation state: its options are refused: {err}"
            ) from None
        raise
    unknown = _unknown_request_options(saved_request, chat.options, client)
    if unknown:
        raise ConversationStateError(
            f"not a usable conversation state: its request options {', '.join(unknown)} "
            "are not parameters of the client's create method"
        )
    return chat, loaded


def _unknown_request_options(
    saved: Mapping[str, Any], options: ConversationOptions, client: Any
) -> list[str]:
    """Saved request options the client's create method does not take (it would raise a
    TypeError in the middle of a resume); none are known when there is no such method."""
    if not saved:
        return []
    provider = provider_for(options.dialect or "", client, options.assistant_content)
    parameters = sdk_parameters(provider, client)
    return [] if parameters is None else sorted(k for k in saved if k not in parameters)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# -- options ------------------------------------------------------------------------------

SAVED_OPTIONS: dict[str, Callable[[Any], bool]] = saved_checks()
"""The options a state saves, each with the type check its value passes (the values are
checked again by the constructor): read from `ConversationOptions`."""
CONSTRUCTOR_OPTIONS = frozenset(
    {*(f.name for f in dataclasses.fields(ConversationOptions)), *COLLABORATORS}
)
# request keys the loop writes itself: a saved request option may not set them
_LOOP_KEYS = frozenset(
    {"messages", "input", "functions", "function_call", "previous_response_id", "stream"}
)
_LIMITS = narrowing()  # saved limits narrow, each with whether None (no limit) is allowed


def saved_options(options: Json) -> tuple[str, Json, Json]:
    """The model, the constructor options and the request options of a state, each checked;
    `ConversationStateError` for anything else. A saved request option never names a
    constructor option, nor a request key the loop writes itself."""
    given = dict(options)
    model = given.pop("model", None)
    request = given.pop("request_options", None)
    if (
        not isinstance(model, str)
        or not isinstance(request, dict)
        or set(given) != set(SAVED_OPTIONS)
    ):
        raise bad_state("its options are not the options export_state() writes")
    wrong = [k for k, check in SAVED_OPTIONS.items() if not check(given[k])]
    if wrong:
        raise bad_state(f"its option(s) {', '.join(wrong)} have values of the wrong type")
    clash = sorted(set(request) & (CONSTRUCTOR_OPTIONS | _LOOP_KEYS))
    if clash:
        raise bad_state(
            f"its request options set {', '.join(clash)}, which no request option may set"
        )
    try:
        given["tool_search"] = ToolSearch.from_json(given["tool_search"])
    except UsageError as err:
        raise bad_state(str(err)) from None
    return model, given, request


def resumed_options(
    saved: Json, request: Json, given: Mapping[str, Any], registry: Toolset
) -> tuple[Json, Json]:
    """The constructor and request options `from_state` builds with: the application's
    (`given`) override the state's, except that a saved tool filter and saved limits can
    only narrow the application's (a filter offers the tools both filters offer; a limit
    is the smaller of the two)."""
    options = {**saved}
    requested = {**request}
    for name, value in given.items():
        (options if name in CONSTRUCTOR_OPTIONS else requested)[name] = value
    for limit in _LIMITS:
        mine, theirs = given.get(limit), saved[limit]
        if limit in given and check_saved(limit, mine):
            bounded = [v for v in (mine, theirs) if v is not None]
            options[limit] = min(bounded) if bounded else None
    if isinstance(given.get("max_calls"), Mapping):
        options["max_calls"] = narrowed_calls(given["max_calls"], saved["max_calls"])
    if given.get("tools") is not None and saved["tools"] is not None:
        options["tools"] = _narrowed_filter(given["tools"], saved["tools"], registry)
    return options, requested


def _narrowed_filter(app: Any, saved: list[str], registry: Toolset) -> Any:
    wanted = [app] if isinstance(app, str) else app
    if not isinstance(wanted, (list, tuple)):
        return app  # the constructor says what is wrong with it
    held = registry.tools()
    known = {*(tool.name for tool in held), *(tag for tool in held for tag in tool.tags)}
    if not all(isinstance(w, str) and w in known for w in wanted):
        return app

    def offers(tool: Tool, entries: Any) -> bool:
        return tool.name in entries or bool(tool.tags & entries)

    app_set, saved_set = set(wanted), set(saved)
    return [t.name for t in held if offers(t, app_set) and offers(t, saved_set)]
