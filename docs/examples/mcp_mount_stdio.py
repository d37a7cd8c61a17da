"""Mount a third-party MCP server started as a subprocess (stdio)."""

import sys

from toolreg import ToolRegistry
from toolreg.mcp import mount

local = ToolRegistry()
time_server = [sys.executable, "-m", "mcp_server_time"]  # any server's command line
with mount(local, time_server, trust_annotations=["get_current_time"]) as time_tools:
    print(time_tools.names)  # ['get_current_time', 'convert_time']
    now = local.dispatch_tool("get_current_time", {"timezone": "Asia/Tokyo"})
    assert now.ok
