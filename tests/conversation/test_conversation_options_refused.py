"""An option a conversation does not know is refused when it is given, with the nearest
valid name; request options (what the SDK's create method takes) go to the endpoint. The
toolset is `registry=`; `toolset=` is refused with that name. Real SDK clients; the ones
that send go to `ScriptedServer` on 127.0.0.1."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from toolreg import AsyncConversation, Conversation, ToolRegistry, UsageError
from toolreg.conversation.core import ConversationCore
from toolreg.testing import ScriptedServer, text

MODEL = "scripted-model"
OWN = [
    name
    for name in inspect.signature(ConversationCore.__init__).parameters
    if name not in ("self", "client", "model", "request_options")
]


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return tools


def clients(server: ScriptedServer) -> dict[str, tuple[Any, dict[str, Any]]]:
    return {
        "tools": (server.client(), {}),
        "responses": (server.client(), {"dialect": "responses"}),
        "anthropic": (server.anthropic_client(), {}),
    }


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_toolset_is_refused_with_the_one_spelling(dialect: str) -> None:
    with ScriptedServer([]) as server:
        client, options = clients(server)[dialect]
        with pytest.raises(UsageError, match=r"toolset=.*registry="):
            Conversation(client, MODEL, toolset=registry(), **options)
        assert server.requests == []


def test_an_async_conversation_refuses_it_too() -> None:
    async def main(server: ScriptedServer) -> None:
        async with server.async_client() as client:
            AsyncConversation(client, MODEL, toolset=registry())

    with ScriptedServer([]) as server, pytest.raises(UsageError, match="registry="):
        asyncio.run(main(server))


@pytest.mark.parametrize(
    ("given", "nearest"),
    [
        ("max_round", "max_rounds"),
        ("tool_retry", "tool_retries"),
        ("ouput_retries", "output_retries"),
        ("sytem", "system"),
        ("eager_tool", "eager_tools"),
    ],
)
@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_a_misspelt_option_is_refused_with_the_nearest_name(
    dialect: str, given: str, nearest: str
) -> None:
    with ScriptedServer([]) as server:
        client, options = clients(server)[dialect]
        with pytest.raises(UsageError, match=f"did you mean {nearest}=") as caught:
            Conversation(client, MODEL, registry=registry(), **{given: 1}, **options)
    assert f"Conversation({given}=...)" in str(caught.value)


@pytest.mark.parametrize(
    ("dialect", "given", "nearest"),
    [
        ("tools", "temprature", "temperature"),
        ("tools", "max_token", "max_tokens"),
        ("responses", "reasonin", "reasoning"),
        ("anthropic", "stop_sequence", "stop_sequences"),
    ],
)
def test_a_misspelt_request_option_is_refused_with_the_sdks_nearest(
    dialect: str, given: str, nearest: str
) -> None:
    with ScriptedServer([]) as server:
        client, options = clients(server)[dialect]
        with pytest.raises(UsageError, match=f"did you mean {nearest}=.*extra_body"):
            Conversation(client, MODEL, registry=registry(), **{given: 1}, **options)


@pytest.mark.parametrize(
    ("dialect", "request_options"),
    [
        ("tools", {"temperature": 0.2, "top_p": 0.9, "seed": 7, "extra_body": {"x": 1}}),
        ("responses", {"temperature": 0.2, "reasoning": {"effort": "low"}}),
        ("anthropic", {"stop_sequences": ["END"], "metadata": {"user_id": "u1"}}),
    ],
)
def test_the_sdks_own_options_go_to_the_endpoint(
    dialect: str, request_options: dict[str, Any]
) -> None:
    with ScriptedServer([text("ok")]) as server:
        client, options = clients(server)[dialect]
        chat = Conversation(client, MODEL, registry=registry(), **request_options, **options)
        assert chat.send("hi").text == "ok"
    sent = server.requests[0]
    for key, value in request_options.items():
        if key == "extra_body":
            assert all(sent[k] == v for k, v in value.items())
        else:
            assert sent[key] == value


class _Completions:
    """A client of another make: its create takes **kwargs (nothing to check against)."""

    def __init__(self, real: Any, seen: list[dict[str, Any]]) -> None:
        self.real, self.seen = real, seen

    def create(self, **kwargs: Any) -> Any:
        self.seen.append(dict(kwargs))
        custom = kwargs.pop("custom_knob", None)
        return self.real.chat.completions.create(**kwargs, extra_body={"custom_knob": custom})


class _Chat:
    def __init__(self, real: Any, seen: list[dict[str, Any]]) -> None:
        self.completions = _Completions(real, seen)


class _Client:
    def __init__(self, real: Any, seen: list[dict[str, Any]]) -> None:
        self.chat = _Chat(real, seen)


def test_a_client_that_takes_anything_gets_its_own_options_and_near_misses_are_refused() -> None:
    seen: list[dict[str, Any]] = []
    with ScriptedServer([text("ok")]) as server:
        client = _Client(server.client(), seen)
        with pytest.raises(UsageError, match="did you mean max_rounds="):
            Conversation(client, MODEL, registry=registry(), max_round=2)
        chat = Conversation(client, MODEL, registry=registry(), custom_knob=3)
        assert chat.send("hi").text == "ok"
    assert seen[0]["custom_knob"] == 3
    assert server.requests[0]["custom_knob"] == 3


@pytest.mark.parametrize("option", OWN)
def test_every_option_cut_short_by_a_letter_is_refused_or_is_an_sdk_option(option: str) -> None:
    with ScriptedServer([]) as server:
        client = server.client()
        sdk = set(inspect.signature(client.chat.completions.create).parameters)
        cut = option[:-1]
        if cut in sdk or cut in OWN:
            pytest.skip(f"{cut!r} is a valid keyword")
        with pytest.raises(UsageError, match="did you mean"):
            Conversation(client, MODEL, registry=registry(), **{cut: None})
