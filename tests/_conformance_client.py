"""The client the MCP conformance suite drives (tests/mcp/test_mcp_conformance_client.py): a
toolreg `Mount` of the suite's server, doing what the scenario asks.

The suite runs `python tests/_conformance_client.py <server URL>` with the scenario's name
in `MCP_CONFORMANCE_SCENARIO` and, for some, JSON in `MCP_CONFORMANCE_CONTEXT` (a client
registered beforehand, a private key, an identity provider's token). Every scenario mounts
the server (connect, initialize, list the tools); some call a tool. The authorization
scenarios mount it with `oauth=`: the user's part of the authorization-code flow is done
headless, as a browser would (the suite's authorization server answers the authorization
URL with a redirect to `redirect_uri` at once).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import urljoin

import httpx2

from toolreg.mcp import Mount
from toolreg.mcp.oauth import AssertionRequest, AuthorizationRequest, OAuth

REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
TOOLS = {"tools_call": "add_numbers", "sse-retry": "test_reconnection"}


async def browse(request: AuthorizationRequest) -> str | None:
    """The user's browser: open the authorization URL, come back where it redirects."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(request.url, follow_redirects=False)
    location = response.headers.get("location")
    return None if location is None else urljoin(request.url, location)


def approve(tool: Any, arguments: dict[str, Any]) -> bool:
    """The user approves the call (a remote tool that says nothing of itself may destroy)."""
    return True


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return {} if not raw else dict(json.loads(raw))


async def issuer_of(url: str) -> str:
    """The authorization server of the MCP server `url`, from its protected-resource
    metadata (an enterprise client is configured with it; the suite does not say it)."""
    async with httpx2.AsyncClient() as http:
        path = httpx2.URL(url).path.rstrip("/")
        found = await http.get(urljoin(url, f"/.well-known/oauth-protected-resource{path}"))
        return str(found.json()["authorization_servers"][0])


async def exchange_at_idp(ctx: dict[str, Any], request: AssertionRequest) -> str:
    """The application's part of SEP-990: the user's ID token exchanged (RFC 8693) at the
    identity provider for an identity assertion grant to the MCP server."""
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            ctx["idp_token_endpoint"],
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "audience": request.audience,
                "resource": request.resource,
                "subject_token": ctx["idp_id_token"],
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "client_id": ctx["idp_client_id"],
            },
        )
    answer.raise_for_status()
    return str(answer.json()["access_token"])


async def oauth_for(scenario: str, url: str) -> OAuth | None:
    ctx = context()
    if not scenario.startswith("auth/"):
        return None
    if scenario == "auth/client-credentials-basic":
        return OAuth.client_credentials(ctx["client_id"], ctx["client_secret"])
    if scenario == "auth/client-credentials-jwt":
        return OAuth.client_credentials(
            ctx["client_id"],
            private_key=ctx["private_key_pem"],
            signing_algorithm=ctx.get("signing_algorithm") or "ES256",
        )
    if scenario == "auth/cross-app-access-complete-flow":
        return OAuth.identity_assertion(
            ctx["client_id"],
            ctx["client_secret"],
            issuer=await issuer_of(url),
            assertion=lambda request: exchange_at_idp(ctx, request),
            token_endpoint_auth_method="client_secret_basic",
        )
    return OAuth(
        browse,
        redirect_uri=REDIRECT_URI,
        client_metadata_url=CLIENT_METADATA_URL,
        client_id=ctx.get("client_id"),
        client_secret=ctx.get("client_secret"),
    )


async def main(scenario: str, url: str) -> None:
    oauth = await oauth_for(scenario, url)
    async with Mount(url, oauth=oauth, timeout=20) as remote:
        tool = TOOLS.get(scenario)
        if tool is None and scenario.startswith("auth/") and "test-tool" in remote.names:
            tool = "test-tool"
        if tool is not None:
            arguments = {"a": 5, "b": 3} if tool == "add_numbers" else {}
            result = await remote.dispatcher.adispatch_tool(tool, arguments, confirm=approve)
            if not result.ok:
                raise SystemExit(f"{tool} failed: {result.content}")
            print(f"{tool}: {result.content}")
        print(f"mounted {', '.join(remote.names) or 'no tools'}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(main(os.environ["MCP_CONFORMANCE_SCENARIO"], sys.argv[-1]))
