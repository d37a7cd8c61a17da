"""`toolreg.sources.OpenAPI` against a real FastAPI application (its own generated document,
served on 127.0.0.1 by uvicorn) and real public documents shipped under tests/data/openapi."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolreg import ToolRegistry
from toolreg.formats import FORMATS
from toolreg.mcp.serving import HttpServer
from toolreg.sources import ApiResponse, OpenAPI, OpenAPIError
from toolreg.toolsets import combined

sys.path.insert(0, str(Path(__file__).parents[1]))
from _openapi_app import app

DATA = Path(__file__).parents[1] / "data" / "openapi"


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    with HttpServer(app) as running:
        yield running


@pytest.fixture(scope="module")
def document(server: HttpServer) -> dict[str, Any]:
    import httpx2

    return dict(httpx2.get(server.url + "/openapi.json").json())


@pytest.fixture
def api(server: HttpServer) -> Iterator[OpenAPI]:
    with OpenAPI.from_url(server.url + "/openapi.json") as toolset:
        yield toolset


def call(api: OpenAPI, tool: str, /, **arguments: Any) -> Any:
    return api.dispatcher.dispatch_tool(tool, arguments)


# -- the document -> tools ------------------------------------------------------------------


def test_each_operation_is_a_tool_named_by_its_operation_id(api: OpenAPI) -> None:
    assert api.names[:4] == ["get_item", "delete_item", "create_item", "rename_item"]
    assert api.refused == {}
    assert api.operations["get_item"].method == "get"
    assert api.operations["get_item"].path == "/items/{item_id}"
    tool = api.get("get_item")
    assert tool is not None
    assert tool.description.startswith("Read an item")
    assert tool.title == "Read an item"
    assert tool.read_only
    assert not tool.destructive
    delete = api.get("delete_item")
    assert delete is not None
    assert delete.destructive
    assert delete.idempotent


def test_every_parameter_location_is_folded_into_one_schema(api: OpenAPI) -> None:
    tool = api.get("get_item")
    assert tool is not None
    schema = tool.parameters
    assert list(schema["properties"]) == ["item_id", "q", "tags", "x-request-id", "session_hint"]
    assert schema["required"] == ["item_id"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["item_id"]["description"] == "The item's number"
    specs = {spec.prop: spec.where for spec in api.operations["get_item"].plan.params}
    assert specs == {
        "item_id": "path",
        "q": "query",
        "tags": "query",
        "x-request-id": "header",
        "session_hint": "cookie",
    }


def test_a_json_object_body_is_folded_in_beside_the_query(api: OpenAPI) -> None:
    tool = api.get("create_item")
    assert tool is not None
    schema = tool.parameters
    assert set(schema["properties"]) == {"dry_run", "name", "price", "tags"}
    assert schema["required"] == ["name", "price"]
    assert "$defs" not in schema  # the body's own definition was folded in: nothing refers to it
    assert schema["properties"]["price"]["exclusiveMinimum"] == 0


def test_a_closed_response_object_is_the_output_schema(api: OpenAPI) -> None:
    created = api.get("create_item")
    assert created is not None
    assert created.output_schema is not None
    assert set(created.output_schema["properties"]) == {"id", "name", "price", "tags"}
    item = api.get("get_item")
    assert item is not None
    assert item.output_schema is None


def test_a_body_that_is_no_object_is_the_body_property(api: OpenAPI) -> None:
    tool = api.get("rename_item")
    assert tool is not None
    assert tool.parameters["properties"]["body"]["type"] == "string"
    assert tool.parameters["required"] == ["item_id", "body"]


def test_every_tool_exports_to_every_format(api: OpenAPI) -> None:
    registry = ToolRegistry()
    for tool in api.tools():
        registry.add(tool)
    for name in FORMATS:
        assert len(registry.get_tools(name)) == len(api.tools()), name


# -- calls -------------------------------------------------------------------------------------


def test_a_call_sends_path_query_header_and_cookie(api: OpenAPI) -> None:
    result = call(
        api,
        "get_item",
        item_id=3,
        q="a b&c=d",
        tags=["x", "y z"],
        **{"x-request-id": "r-1"},
        session_hint="h-1:{x}",
    )
    assert result.ok, result.content
    assert json.loads(result.content) == {
        "item_id": 3,
        "q": "a b&c=d",
        "tags": ["x", "y z"],
        "x_request_id": "r-1",
        "session_hint": "h-1:{x}",
    }
    assert isinstance(result.value, ApiResponse)
    assert result.value.status == 200
    assert result.value.media_type == "application/json"


def test_a_call_sends_a_json_body_and_reads_the_created_item(api: OpenAPI) -> None:
    result = call(api, "create_item", name="pen", price="1.5", tags=["office"], dry_run=True)
    assert result.ok, result.content
    assert json.loads(result.content) == {"id": 1, "name": "pen", "price": 1.5, "tags": ["office"]}
    assert result.value.status == 201
    string_body = call(api, "rename_item", item_id=2, body="new name")
    assert json.loads(string_body.content) == {"item_id": 2, "name": "new name"}


def test_arguments_are_checked_before_anything_is_sent(api: OpenAPI) -> None:
    result = call(api, "create_item", name="pen", price=-1)
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert "price" in result.content


def test_async_dispatch_goes_through_the_async_client(api: OpenAPI) -> None:
    tool = api.get("get_item")
    assert tool is not None
    assert tool.async_function is not None

    async def main() -> list[Any]:
        try:
            return await api.dispatcher.adispatch_many(
                [("get_item", {"item_id": n, "tags": ["a"]}) for n in range(5)]
            )
        finally:
            await api.aclose()

    results = asyncio.run(main())
    assert [json.loads(r.content)["item_id"] for r in results] == [0, 1, 2, 3, 4]
    assert api._transport is None  # no sync connection was made


def test_a_4xx_answers_the_model_with_its_status_and_an_excerpt(api: OpenAPI) -> None:
    result = call(api, "fail", code=404)
    assert not result.ok
    assert result.error_kind == "execution_error"
    assert result.content == (
        """Tool 'fail' failed: HTTP 404 Not Found: {"detail":"no such thing (code 404)"}"""
    )


def test_a_5xx_is_read_under_the_errors_policy(api: OpenAPI, server: HttpServer) -> None:
    hidden = call(api, "boom")
    assert not hidden.ok
    assert (
        hidden.content
        == "Tool 'boom' failed: HTTP 503 Service Unavailable: upstream broke at [redacted]"
    )
    masked = combined(ToolRegistry(errors="mask"), api)
    assert masked.dispatcher.dispatch_tool("boom", {}).content == "Tool 'boom' failed."
    full = combined(ToolRegistry(errors="full"), api)
    assert full.dispatcher.dispatch_tool("boom", {}).content.endswith("/srv/app/secrets.py")


def test_a_connection_kept_alive_after_a_500_is_not_a_failure(api: OpenAPI) -> None:
    assert "HTTP 500" in call(api, "fail", code=500).content  # the server closes it after
    assert call(api, "get_item", item_id=1).ok  # sent again on a new connection


def test_a_server_that_cannot_be_reached_is_a_redacted_failure(document: dict[str, Any]) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api = OpenAPI(document, base_url=f"http://127.0.0.1:{port}")
    result = api.dispatcher.dispatch_tool("get_item", {"item_id": 1})
    assert not result.ok
    assert result.content.startswith(
        "Tool 'get_item' failed: the API could not be reached (ConnectError"
    )


def test_a_redirect_is_followed_inside_the_base_url_only(api: OpenAPI) -> None:
    inside = call(api, "redirect_in")
    assert inside.ok
    assert json.loads(inside.content)["q"] == "moved"
    outside = call(api, "redirect_out")
    assert not outside.ok
    assert outside.content == (
        "Tool 'redirect_out' failed: the API redirected the call outside its base URL (to "
        "http://127.0.0.2); toolreg does not follow it."
    )


def test_a_long_answer_is_cut_at_the_size_limit(server: HttpServer) -> None:
    with OpenAPI.from_url(server.url + "/openapi.json", max_response_bytes=1000) as api:
        result = call(api, "big", size=50_000)
    assert result.ok
    assert result.value.truncated
    assert result.content == "x" * 1000 + "\n[cut: the response is longer than 1,000 bytes]"


def test_a_slow_api_times_out(server: HttpServer) -> None:
    with OpenAPI.from_url(server.url + "/openapi.json", timeout=0.3) as api:
        result = call(api, "slow", seconds=5)
    assert not result.ok
    assert result.content == "Tool 'slow' failed: the API did not answer within 0.3 s."


def test_delete_needs_a_confirmation(api: OpenAPI) -> None:
    refused = call(api, "delete_item", item_id=4)
    assert not refused.ok
    assert refused.error_kind == "denied"
    done = api.dispatcher.dispatch_tool("delete_item", {"item_id": 4}, confirm=lambda *_: True)
    assert done.ok
    assert done.content == "HTTP 204 No Content"


# -- options -----------------------------------------------------------------------------------


def test_include_and_names_choose_and_rename_operations(document: dict[str, Any]) -> None:
    api = OpenAPI(
        document,
        base_url="http://127.0.0.1:1",
        include=["get_item", "POST /items"],
        names={"POST /items": "add_item"},
    )
    assert api.names == ["get_item", "add_item"]
    with pytest.raises(ValueError, match=r"include=\.\.\.\) names 'nope'"):
        OpenAPI(document, base_url="http://127.0.0.1:1", include=["nope"])


def test_two_operations_with_one_name_are_an_error_naming_both(document: dict[str, Any]) -> None:
    clash = json.loads(json.dumps(document))
    clash["paths"]["/items"]["post"]["operationId"] = "get.item"
    with pytest.raises(OpenAPIError) as raised:
        OpenAPI(clash, base_url="http://127.0.0.1:1")
    message = str(raised.value)
    assert "GET /items/{item_id} (operationId 'get_item')" in message
    assert "POST /items (operationId 'get.item')" in message
    assert "names=" in message
    renamed = OpenAPI(clash, base_url="http://127.0.0.1:1", names={"get.item": "post_item"})
    assert "post_item" in renamed.names


def test_operations_without_an_id_are_named_by_method_and_path() -> None:
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:1/api"}],
        "paths": {
            "/pets/{petId}/toys": {
                "get": {
                    "parameters": [
                        {
                            "name": "petId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/" + "very-long-segment/" * 8: {"post": {"responses": {"200": {"description": "ok"}}}},
        },
    }
    api = OpenAPI(document)
    assert api.names[0] == "get_pets_petId_toys"
    assert len(api.names[1]) == 64
    assert api.names[1].startswith("post_very-long-segment")
    assert api.base_url == "http://127.0.0.1:1/api"


def test_a_relative_server_needs_a_base_url(document: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="pass base_url="):
        OpenAPI(document)  # no servers: "/", and nothing to resolve it against


def test_a_yaml_document_reads_the_same(document: dict[str, Any]) -> None:
    import yaml

    text = yaml.safe_dump(document, sort_keys=False)
    api = OpenAPI(text, base_url="http://127.0.0.1:1")
    assert api.names == OpenAPI(document, base_url="http://127.0.0.1:1").names


def test_yaml_without_pyyaml_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(OpenAPIError, match=r"pip install 'toolreg\[openapi\]'"):
        OpenAPI("openapi: 3.0.0\npaths: {}\n")


# -- real public documents -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["petstore-3.0.json", "petstore-3.1.json"])
def test_the_petstore_documents(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolreg.sources"):
        api = OpenAPI.from_file(DATA / name)
    assert len(api.names) == 19
    assert list(api.refused) == ["POST /pet/{petId}/uploadImage"]  # a file upload: not sent
    assert "uploadImage" in caplog.text
    assert api.base_url == "http://petstore.swagger.io/v2"
    add = api.get("addPet")
    assert add is not None
    # the body's properties, folded in; `id` is readOnly: a request never sends it
    assert list(add.parameters["properties"]) == ["category", "name", "photoUrls", "tags", "status"]
    assert add.parameters["required"] == ["name", "photoUrls"]
    assert set(add.parameters["$defs"]) == {"Category", "Tag"}
    find = api.get("findPetsByStatus")
    assert find is not None
    assert find.read_only
    assert find.parameters["properties"]["status"]["items"]["enum"] == [
        "available",
        "pending",
        "sold",
    ]
    security = api.operations["findPetsByStatus"].plan.security
    assert [[(s.name, s.kind, scopes) for s, scopes in alt] for alt in security] == [
        [("petstore_auth", "bearer", ("write:pets", "read:pets"))]  # OAuth 2: a bearer token
    ]
    security = api.operations["getPetById"].plan.security
    assert [[(s.name, s.where, s.param) for s, _ in alt] for alt in security] == [
        [("api_key", "header", "api_key")]
    ]
    registry = ToolRegistry()
    for tool in api.tools():
        registry.add(tool)
    for fmt in FORMATS:
        assert len(registry.get_tools(fmt)) == 19


@pytest.mark.slow
def test_a_large_real_api_stapi() -> None:
    api = OpenAPI.from_file(DATA / "stapi-3.0.json")
    assert len(api.names) == 120
    assert api.refused == {}
    assert api.base_url == "http://stapi.co/api/v1/rest"
    assert api.names[:3] == ["get_animal", "get_animal_search", "post_animal_search"]
    form = api.operations["post_animal_search"].plan.body
    assert form is not None
    assert form.kind == "form"
    registry = ToolRegistry()
    for tool in api.tools():
        registry.add(tool)
    for fmt in FORMATS:
        assert len(registry.get_tools(fmt)) == 120
