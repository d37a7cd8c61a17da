"""A real FastAPI application for the OpenAPI tests: its own generated document is what
toolreg reads, and its endpoints answer what they were sent (every parameter location, a
JSON body, errors, redirects, per-user data behind bearer / API key / basic credentials)."""

from __future__ import annotations

import asyncio
import secrets
from typing import Annotated, Any

from fastapi import Body, Cookie, Depends, FastAPI, Header, HTTPException, Path, Query, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.security import (
    APIKeyCookie,
    APIKeyQuery,
    HTTPAuthorizationCredentials,
    HTTPBasic,
    HTTPBasicCredentials,
    HTTPBearer,
)
from pydantic import BaseModel, ConfigDict, Field

TOKENS: dict[str, str] = {}
"""Bearer tokens the app accepts now -> their user (tests add and revoke them)."""
KEYS: dict[str, str] = {}
"""API keys (query or cookie) -> their user."""
PASSWORDS: dict[str, str] = {"carol": "carol-password-1"}
NOTES = {"alice": ["alice's first note", "alice's secret plan"], "bob": ["bob's shopping list"]}
SEEN: list[dict[str, Any]] = []  # what the credential-checking endpoints were sent


def new_token(user: str) -> str:
    token = f"tok-{user}-{secrets.token_hex(16)}"
    TOKENS[token] = user
    return token


class Item(BaseModel):
    name: str = Field(description="What the item is called")
    price: float = Field(gt=0)
    tags: list[str] = []


class Created(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    name: str
    price: float
    tags: list[str]


app = FastAPI(title="Test shop", version="1.0")
bearer = HTTPBearer(auto_error=False)
query_key = APIKeyQuery(name="api_key", auto_error=False)
cookie_key = APIKeyCookie(name="shop_key", auto_error=False)
basic = HTTPBasic(auto_error=False)


@app.get("/items/{item_id}", operation_id="get_item", summary="Read an item")
def get_item(
    item_id: Annotated[int, Path(description="The item's number")],
    q: Annotated[str | None, Query(description="Words to look for")] = None,
    tags: Annotated[list[str] | None, Query()] = None,
    x_request_id: Annotated[str | None, Header()] = None,
    session_hint: Annotated[str | None, Cookie()] = None,
) -> dict[str, Any]:
    """Everything the call was sent, back."""
    return {
        "item_id": item_id,
        "q": q,
        "tags": tags,
        "x_request_id": x_request_id,
        "session_hint": session_hint,
    }


@app.post("/items", operation_id="create_item", status_code=201)
def create_item(item: Item, dry_run: bool = False) -> Created:
    """Create an item."""
    return Created(id=1 if dry_run else 7, **item.model_dump())


@app.put("/items/{item_id}/name", operation_id="rename_item")
def rename_item(item_id: int, name: Annotated[str, Body(embed=False)]) -> dict[str, Any]:
    """Rename an item (the body is the new name, a JSON string)."""
    return {"item_id": item_id, "name": name}


@app.delete("/items/{item_id}", operation_id="delete_item")
def delete_item(item_id: int) -> Response:
    return Response(status_code=204)


@app.get("/fail/{code}", operation_id="fail")
def fail(code: int) -> dict[str, Any]:
    """Answer with the status `code`."""
    if code >= 500:
        raise RuntimeError("the database password is hunter2")  # FastAPI: a bare 500
    raise HTTPException(code, detail=f"no such thing (code {code})")


@app.get("/boom", operation_id="boom")
def boom() -> PlainTextResponse:
    return PlainTextResponse("upstream broke at /srv/app/secrets.py", status_code=503)


@app.get("/big", operation_id="big")
def big(size: int = 10_000) -> PlainTextResponse:
    return PlainTextResponse("x" * size)


@app.get("/slow", operation_id="slow")
async def slow(seconds: float = 5.0) -> dict[str, Any]:
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@app.get("/redirect/in", operation_id="redirect_in")
def redirect_in() -> RedirectResponse:
    return RedirectResponse("/items/5?q=moved", status_code=307)


@app.get("/redirect/out", operation_id="redirect_out")
def redirect_out() -> RedirectResponse:
    return RedirectResponse("http://127.0.0.2:9/steal", status_code=302)


def _bearer_user(credentials: HTTPAuthorizationCredentials | None) -> str:
    if credentials is None or credentials.credentials not in TOKENS:
        raise HTTPException(401, detail="bad token", headers={"WWW-Authenticate": "Bearer"})
    return TOKENS[credentials.credentials]


@app.get("/me/notes", operation_id="my_notes", summary="The caller's notes")
def my_notes(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> dict[str, Any]:
    user = _bearer_user(credentials)
    SEEN.append({"user": user})
    return {"user": user, "notes": NOTES.get(user, [])}


@app.get("/me/echo", operation_id="echo_token")
def echo_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    status: int = 200,
) -> JSONResponse:
    """A careless API that quotes the caller's token back (in a result or an error)."""
    user = _bearer_user(credentials)
    token = credentials.credentials if credentials else ""
    return JSONResponse({"user": user, "your_token": token, "header": f"Bearer {token}"}, status)


@app.get("/keyed/query", operation_id="keyed_by_query")
def keyed_by_query(key: Annotated[str | None, Depends(query_key)]) -> dict[str, Any]:
    if key not in KEYS:
        raise HTTPException(401, detail="bad key")
    return {"user": KEYS[key]}


@app.get("/keyed/cookie", operation_id="keyed_by_cookie")
def keyed_by_cookie(key: Annotated[str | None, Depends(cookie_key)]) -> dict[str, Any]:
    if key not in KEYS:
        raise HTTPException(401, detail="bad key")
    return {"user": KEYS[key]}


@app.get("/keyed/basic", operation_id="keyed_by_basic")
def keyed_by_basic(
    credentials: Annotated[HTTPBasicCredentials | None, Depends(basic)],
) -> dict[str, Any]:
    if credentials is None or PASSWORDS.get(credentials.username) != credentials.password:
        raise HTTPException(401, detail="bad password")
    return {"user": credentials.username}


@app.post("/session", operation_id="start_session")
def start_session(
    response: Response,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> dict[str, Any]:
    """Sets a cookie: a shared client's cookie jar would carry it to the next caller."""
    user = _bearer_user(credentials)
    response.set_cookie("session", f"session-of-{user}")
    return {"user": user}


@app.get("/session", operation_id="read_session")
def read_session(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    session: Annotated[str | None, Cookie()] = None,
) -> dict[str, Any]:
    return {"user": _bearer_user(credentials), "session": session}
