"""`toolreg list / call / serve openapi:URL_OR_FILE`: an HTTP API's tools from its OpenAPI
document, served over MCP in one line and called through the official MCP client."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _mcp_support import HttpChild, serve_command
from mcp import Client

from toolreg.cli import main
from toolreg.mcp.serving import HttpServer

sys.path.insert(0, str(Path(__file__).parents[1]))
import _openapi_app as shop

DATA = Path(__file__).parents[1] / "data" / "openapi"


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    with HttpServer(shop.app) as running:
        yield running.url


def test_list_an_apis_tools(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", f"openapi:{api_url}/openapi.json", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in listed][:3] == ["get_item", "delete_item", "create_item"]


def test_list_a_document_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", f"openapi:{DATA / 'petstore-3.1.json'}"]) == 0
    assert "findPetsByStatus" in capsys.readouterr().out


def test_call_a_tool_of_an_api(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = f"openapi:{api_url}/openapi.json"
    assert main(["call", target, "get_item", '{"item_id": 8, "q": "ink"}']) == 0
    assert json.loads(capsys.readouterr().out)["q"] == "ink"


def test_a_target_that_is_no_document_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "swagger.json"
    bad.write_text('{"swagger": "2.0", "paths": {}}')
    with pytest.raises(SystemExit) as raised:
        main(["list", f"openapi:{bad}"])
    assert raised.value.code == 2
    assert "Swagger 2.0" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_an_api_over_mcp_in_one_line(api_url: str) -> None:
    command = serve_command(f"openapi:{api_url}/openapi.json", "--transport", "http", "--port", "0")
    with HttpChild(*command) as child:

        async def run() -> tuple[list[str], str, bool]:
            async with Client(child.url) as client:
                listed = [tool.name for tool in (await client.list_tools()).tools]
                answer = await client.call_tool("create_item", {"name": "ink", "price": 2})
                missing = await client.call_tool("fail", {"code": 404})
                block = answer.content[0]
                return listed, getattr(block, "text", ""), bool(missing.is_error)

        listed, created, failed = asyncio.run(run())
    assert listed[:4] == ["get_item", "delete_item", "create_item", "rename_item"]
    assert json.loads(created) == {"id": 7, "name": "ink", "price": 2.0, "tags": []}
    assert failed
