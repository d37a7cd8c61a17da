"""The loop against llama.cpp's `llama-server`: a real model server that is not ours.

llama-server answers Anthropic's Messages API (`/v1/messages`, plain and streamed) and
OpenAI's chat completions (`/v1/chat/completions`) from a local model, turning the model's
text into tool calls through the chat template and a grammar. No model weights can be
downloaded here, so the tests write a tiny one (`tests/_llama_model.py`): it answers "Sunny",
and when `tool_choice` requires a call, the server's grammar makes it call the only tool,
with the only arguments its schema allows (`city` is an enum of one). Sampled at
temperature 0, every run is the same. What is real here is everything around the model:
llama-server's HTTP, its Anthropic and OpenAI translations, its SSE streams, its tool-call
parsing and ids, and the official SDKs reading them.

Where llama-server is: `TOOLREG_LLAMA_SERVER` (what `.ci/llama-server DIR` builds: the
server and `tool-template.jinja` beside it, Qwen 2.5's chat template, which has tool calls).
Without it the module is skipped with the reason; set, a server that does not start is a
failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anthropic
import openai
import pytest
from _llama_model import WORD, write_model

from toolreg import (
    ApprovalRequired,
    AsyncConversation,
    Conversation,
    TextDelta,
    ToolCallReady,
    ToolFinished,
    ToolRegistry,
    ToolStarted,
    TurnFinished,
)
from toolreg.testing.inspection import history_problems, messages_problems

pytestmark = pytest.mark.slow

SERVER_ENV = "TOOLREG_LLAMA_SERVER"
MODEL = "toolreg-tiny"
# temperature 0: the same answer every time; max_tokens bounds a turn if anything drifts.
# In extra_body: the anthropic SDK's messages.create() no longer takes `temperature`.
OPTIONS: dict[str, Any] = {"extra_body": {"temperature": 0}, "max_tokens": 256}


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama-server serving the tiny model, for the module."""
    server = os.environ.get(SERVER_ENV)
    if not server:
        pytest.skip(f"{SERVER_ENV} is not set: `.ci/llama-server DIR` builds llama-server")
    binary = Path(server)
    template = binary.parent / "tool-template.jinja"
    if not os.access(binary, os.X_OK) or not template.is_file():
        pytest.fail(f"{SERVER_ENV}={server}: no executable with tool-template.jinja beside it")
    here = tmp_path_factory.mktemp("llama")
    model = write_model(here / "tiny.gguf")
    log = here / "server.log"
    port = _free_port()
    command = [
        str(binary),
        *("-m", str(model), "--host", "127.0.0.1", "--port", str(port)),
        *("--jinja", "--chat-template-file", str(template), "--alias", MODEL),
        *("-c", "8192", "-np", "2", "-t", "1", "--no-ui"),
    ]
    with log.open("w") as out:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, child, log)
        yield url
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_healthy(url: str, child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if child.poll() is not None:
            pytest.fail(f"llama-server exited ({child.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:  # not listening yet, or 503 while the model loads
            pass
        time.sleep(0.1)
    pytest.fail(f"llama-server did not become healthy in 60 s:\n{log.read_text()[-3000:]}")


class Weather:
    """A registry with one tool, and the calls it ran."""

    def __init__(self, *, confirm: bool = False) -> None:
        self.ran: list[str] = []
        self.registry = ToolRegistry()

        @self.registry.register_tool(requires_confirmation=confirm)
        def get_weather(city: Literal["Paris"]) -> str:
            """The current weather of a city."""
            self.ran.append(city)
            return f"sunny in {city}"


class Sent:
    """Every request body an SDK client sends (an httpx request hook)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> None:
        self.bodies.append(json.loads(request.content))


def _anthropic(url: str, sent: Sent) -> anthropic.Anthropic:
    hooks = {"request": [sent]}  # the SDK's own HTTP client (httpx, or httpx2 in newer SDKs)
    client = anthropic.DefaultHttpxClient(event_hooks=hooks)
    return anthropic.Anthropic(base_url=url, api_key="none", http_client=client)


def test_a_native_anthropic_turn_calls_the_tool_and_answers(llama: str) -> None:
    weather, sent = Weather(), Sent()
    client = _anthropic(llama, sent)
    chat = Conversation(client, MODEL, registry=weather.registry, tool_choice="required", **OPTIONS)
    reply = chat.send("What is the weather in Paris?")
    assert (reply.text, reply.stop_reason, reply.rounds) == (WORD, "answer", 2)
    assert weather.ran == ["Paris"]
    (result,) = reply.tool_results
    assert (result.tool_name, result.ok, result.content) == ("get_weather", True, "sunny in Paris")
    # the tool_use block llama-server wrote, answered by one user message of tool_result
    _, said, results, answer = chat.messages
    assert said["role"] == "assistant"
    text, use = said["content"]
    assert (text["type"], text["text"]) == ("text", WORD)
    assert (use["type"], use["name"]) == ("tool_use", "get_weather")
    assert use["input"] == {"city": "Paris"}
    assert results["role"] == "user"
    assert [(b["type"], b["tool_use_id"], b["content"]) for b in results["content"]] == [
        ("tool_result", use["id"], "sunny in Paris")
    ]
    assert answer == {"role": "assistant", "content": [{"type": "text", "text": WORD}]}
    assert messages_problems(chat.messages) == []
    first, second = sent.bodies
    assert first["tool_choice"] == {"type": "any"}  # "required" in Anthropic's words
    assert second["tool_choice"] == {"type": "auto"}  # forced on the first call only
    assert [t["name"] for t in second["tools"]] == ["get_weather"]
    assert messages_problems(second["messages"]) == []
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.completion_tokens > 0


def test_a_streamed_anthropic_turn_yields_its_events_in_order(llama: str) -> None:
    weather = Weather()
    client = anthropic.Anthropic(base_url=llama, api_key="none")
    chat = Conversation(
        client,
        MODEL,
        registry=weather.registry,
        tool_choice="required",
        stream=True,
        **OPTIONS,
    )
    events = list(chat.stream("What is the weather in Paris?"))
    kinds = [type(e) for e in events]
    assert kinds == [
        TextDelta,
        ToolCallReady,
        ToolStarted,
        ToolFinished,
        TextDelta,
        TurnFinished,
    ]
    texts = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert texts == WORD * 2  # each model call's text, as streamed
    ready = events[1]
    assert isinstance(ready, ToolCallReady)
    assert (ready.call.name, ready.call.arguments) == ("get_weather", {"city": "Paris"})
    finished = events[3]
    assert isinstance(finished, ToolFinished)
    assert finished.result.content == "sunny in Paris"
    last = events[-1]
    assert isinstance(last, TurnFinished)
    assert last.reply.text == WORD
    assert weather.ran == ["Paris"]


def test_an_async_anthropic_approval_pauses_and_resumes_once(llama: str) -> None:
    weather = Weather(confirm=True)

    async def main() -> tuple[Any, Any, dict[str, Any]]:
        async with anthropic.AsyncAnthropic(base_url=llama, api_key="none") as client:
            chat = AsyncConversation(
                client,
                MODEL,
                registry=weather.registry,
                tool_choice="required",
                confirm="defer",
                stream=True,
                **OPTIONS,
            )
            events = [e async for e in chat.stream("What is the weather in Paris?")]
            saved = json.loads(json.dumps(chat.export_state()))
            again = AsyncConversation.from_state(saved, client, registry=weather.registry)
            (asked,) = [e for e in events if isinstance(e, ApprovalRequired)]
            reply = await again.resume({p.call_id: True for p in asked.pending})
            return events, reply, again.export_state()

    events, reply, state = asyncio.run(main())
    paused = events[-1]
    assert isinstance(paused, TurnFinished)
    assert paused.reply.stop_reason == "approval_required"
    assert [p.arguments for p in paused.reply.pending] == [{"city": "Paris"}]
    assert (reply.text, reply.stop_reason) == (WORD, "answer")
    assert weather.ran == ["Paris"]  # asked once, run once
    assert messages_problems(state["messages"]) == []


def test_the_openai_chat_loop_runs_on_llama_server_too(llama: str) -> None:
    weather = Weather()
    client = openai.OpenAI(base_url=f"{llama}/v1", api_key="none")
    for stream in (False, True):
        chat = Conversation(
            client,
            MODEL,
            registry=weather.registry,
            tool_choice="required",
            stream=stream,
            **OPTIONS,
        )
        reply = chat.send("What is the weather in Paris?")
        assert (reply.text, reply.stop_reason) == (WORD, "answer")
        (result,) = reply.tool_results
        assert result.content == "sunny in Paris"
        call = chat.messages[1]["tool_calls"][0]
        assert chat.messages[2] == {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": "sunny in Paris",
        }
        assert history_problems(chat.messages) == []
    assert weather.ran == ["Paris", "Paris"]
