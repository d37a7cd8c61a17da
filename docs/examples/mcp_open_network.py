"""Open network: an OAuth resource server with scopes, rate limits, a result cache and bounds."""

import json
import os
import tempfile
import time

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, JwtVerifier, RateLimit, ResourceServer, ResultCache, asgi_app

RESOURCE = "https://mcp.example.com/mcp"  # this server's URL, as clients reach it
ISSUER = "https://auth.example.com"  # the authorization server that issues its tokens

catalog = ToolRegistry(max_result_chars=20_000)  # no result longer than this reaches a client


@catalog.register_tool(read_only=True, timeout=5)
def search(q: str) -> list[str]:
    """Search the product catalog. Use it to find products by name."""
    return [f"{q} (blue)", f"{q} (red)"]


@catalog.register_tool(scopes=["orders:write"], timeout=10)
def place_order(product: str, quantity: int = 1) -> str:
    """Place an order. Use it only when the user asks to buy something."""
    return f"ordered {quantity} x {product}"


# The authorization server's signing key; in production its JWKS is a URL
# (JwtVerifier("https://auth.example.com/.well-known/jwks.json", ...)).
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
jwks_file = os.path.join(tempfile.mkdtemp(), "jwks.json")
with open(jwks_file, "w") as f:
    json.dump({"keys": [{**public, "kid": "k1", "alg": "RS256", "use": "sig"}]}, f)


def token(subject: str, scope: str) -> str:  # what the authorization server hands out
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": subject, "scope": scope}
    claims["exp"] = int(time.time()) + 300
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


app = asgi_app(
    catalog,
    allowed_hosts=["mcp.example.com"],  # the Host header the proxy passes on
    auth=ResourceServer(
        JwtVerifier(jwks_file, issuer=ISSUER, audience=RESOURCE),
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        required_scopes=["catalog"],
    ),
    # per process, or shared by every worker and machine: redis="redis://127.0.0.1:6379/0"
    rate_limit=RateLimit("60/min", tools={"search": "2/min"}),
    cache=ResultCache(ttl=30, max_entries=10_000),  # per caller: never one user's to another
    max_threads=16,  # sync tool calls at once; the others wait
)

HEADERS = {
    "Host": "mcp.example.com",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def post(url: str, who: str | None, method: str, **params: object) -> httpx2.Response:
    headers = dict(HEADERS)
    if who is not None:
        headers["Authorization"] = f"Bearer {who}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx2.post(url, json=body, headers=headers)


def call(url: str, who: str | None, name: str, arguments: dict[str, object]) -> httpx2.Response:
    return post(url, who, "tools/call", name=name, arguments=arguments)


def names(url: str, who: str) -> list[str]:
    return [tool["name"] for tool in post(url, who, "tools/list").json()["result"]["tools"]]


with HttpServer(app) as server:
    base = server.url.removesuffix("/mcp")
    metadata = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp", headers=HEADERS)
    assert metadata.json()["authorization_servers"] == [ISSUER]  # public: no token needed

    refused = call(server.url, None, "search", {"q": "lamp"})
    assert refused.status_code == 401  # WWW-Authenticate says where the metadata is
    print(refused.headers["www-authenticate"])  # Bearer resource_metadata="https://..."

    ada = token("ada", "catalog")
    statuses = [call(server.url, ada, "search", {"q": "lamp"}) for _ in range(3)]
    assert [s.status_code for s in statuses] == [200, 200, 429]  # search: 2/min per caller
    print(statuses[2].headers["retry-after"], statuses[2].json()["error"]["message"])
    # 30 Rate limit exceeded: at most 2 calls of 'search' per min; retry after 30 s.

    # place_order needs a scope ada's token lacks: for her, the tool does not exist
    bob = token("bob", "catalog orders:write")
    assert names(server.url, ada) == ["search"]
    assert names(server.url, bob) == ["search", "place_order"]
    ordered = call(server.url, bob, "place_order", {"product": "lamp"}).json()["result"]
    assert ordered["content"][0]["text"] == "ordered 1 x lamp"
