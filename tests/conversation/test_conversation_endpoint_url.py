"""A `ConversationError` names the endpoint's URL (`.endpoint`, and first in its message),
with credentials and query values redacted; the CLI then prints the URL once."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from toolreg import AsyncConversation, Conversation, ConversationError, ToolRegistry
from toolreg.testing import ScriptedServer, error

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_http_error_names_the_endpoint() -> None:
    with ScriptedServer([error(500, "the model crashed")]) as server:
        chat = Conversation(server.client(max_retries=0), "m", registry=ToolRegistry())
        with pytest.raises(ConversationError) as caught:
            chat.send("hi")
        url = server.base_url.rstrip("/")
    assert caught.value.endpoint == url
    assert caught.value.status_code == 500
    assert str(caught.value) == f"{url}: the endpoint answered HTTP 500: the model crashed"


def test_the_async_driver_names_it_too() -> None:
    async def main(server: ScriptedServer) -> ConversationError:
        async with server.async_client(max_retries=0) as client:
            chat = AsyncConversation(client, "m", registry=ToolRegistry())
            with pytest.raises(ConversationError) as caught:
                await chat.send("hi")
            return caught.value

    with ScriptedServer([error(503, "busy")]) as server:
        failure = asyncio.run(main(server))
        assert failure.endpoint == server.base_url.rstrip("/")


def test_credentials_and_query_values_are_redacted() -> None:
    port = closed_port()
    client = openai.OpenAI(
        base_url=f"http://ann:s3cret@127.0.0.1:{port}/v1/?key=sk-live-123&v=2",
        api_key="sk-header-456",
        max_retries=0,
    )
    chat = Conversation(client, "m", registry=ToolRegistry())
    with pytest.raises(ConversationError) as caught:
        chat.send("hi")
    shown = str(caught.value)
    assert caught.value.endpoint == f"http://127.0.0.1:{port}/v1?key=***&v=***"
    assert shown.startswith(caught.value.endpoint + ": ")
    for secret in ("ann", "s3cret", "sk-live-123", "sk-header-456"):
        assert secret not in shown


def test_a_client_without_a_base_url_leaves_endpoint_unset() -> None:
    class Broken:
        @property
        def chat(self) -> object:
            raise ConversationError("no chat here")

    with pytest.raises(ConversationError) as caught:
        Conversation(Broken(), "m", registry=ToolRegistry()).send("hi")
    assert caught.value.endpoint is None
    assert str(caught.value) == "no chat here"


@pytest.mark.slow
def test_the_cli_prints_the_url_once() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    command = ["chat", "samples/weather.py", "--model", "m", "--base-url", url]
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", *command],
        cwd=ROOT,
        input="hi\n",
        capture_output=True,
        text=True,
        env={**env, "OPENAI_MAX_RETRIES": "0"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"toolreg: {url}: ")
    assert line.count("127.0.0.1") == 1
