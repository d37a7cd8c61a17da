"""Auth: a served registry as an OAuth 2.1 resource server, with per-tool scopes."""

from mcp.server.auth.provider import AccessToken

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, McpConnectionError, RateLimit, ResourceServer, asgi_app, mount

reports = ToolRegistry()


@reports.register_tool(read_only=True)
def sales_today() -> int:
    """Today's sales in EUR. Use it when the user asks how the day went."""
    return 1200


@reports.register_tool(read_only=True, scopes=["payroll"])
def payroll_total() -> int:
    """This month's payroll in EUR. Use it when the user asks about salaries."""
    return 54000


TOKENS = {"token-ada": ["reports"], "token-bob": ["reports", "payroll"]}


def verify(token: str) -> AccessToken | None:  # a JwtVerifier(...) in production
    scopes = TOKENS.get(token)
    return None if scopes is None else AccessToken(token=token, client_id=token, scopes=scopes)


auth = ResourceServer(
    verify,
    resource="http://127.0.0.1/mcp",
    authorization_servers=["https://auth.example.com"],
    required_scopes=["reports"],
)
app = asgi_app(reports, auth=auth, rate_limit=RateLimit("60/min"))
with HttpServer(app) as server:
    for token in TOKENS:
        headers = {"Authorization": f"Bearer {token}"}
        with mount(ToolRegistry(), server.url, headers=headers) as seen:
            print(token, seen.names)
            # token-ada ['sales_today']: a tool whose scopes a token lacks does not exist for it
            # token-bob ['sales_today', 'payroll_total']
    forged = {"Authorization": "Bearer forged"}
    try:
        with mount(ToolRegistry(), server.url, headers=forged):
            raise AssertionError("a forged token was let in")
    except McpConnectionError as err:
        print(err)  # cannot mount the MCP server http://127.0.0.1:.../mcp: ... (a 401)
