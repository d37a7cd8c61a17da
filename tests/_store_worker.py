"""One app server process resuming a stored pending approval
(tests/stores/test_stores_processes.py).

    python tests/_store_worker.py <sqlite|PATH | redis|URL|PREFIX> BASE_URL RAN_FILE [crash]

It says "ready", waits for a line on stdin (so that every worker starts the resume at the
same moment), resumes conversation "c1" approving call_1, and prints "won: <reply>" or
"lost: <exception class>: <message>". The refund appends a line to RAN_FILE each time it
runs; with "crash" the process dies inside the refund (os._exit), as a killed server would.
"""

from __future__ import annotations

import os
import sys

import openai

from toolreg import Conversation, ToolregError, ToolRegistry
from toolreg.stores import RedisStore, SQLiteStore

KEY = b"p" * 32


def main() -> None:
    where, base_url, ran_file = sys.argv[1:4]
    crash = sys.argv[4:] == ["crash"]
    kind, *address = where.split("|")
    if kind == "sqlite":
        store: SQLiteStore | RedisStore = SQLiteStore(address[0])
    else:
        store = RedisStore(address[0], prefix=address[1])
    registry = ToolRegistry()

    @registry.register_tool(destructive=True)
    def refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        with open(ran_file, "a", encoding="utf-8") as ran:
            ran.write(f"{os.getpid()} {order_id} {amount}\n")
        if crash:
            os._exit(3)
        return f"refunded {amount} on {order_id}"

    client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0)
    chat = Conversation(
        client,
        "scripted-model",
        registry=registry,
        confirm="defer",
        state_store=store,
        conversation_id="c1",
        key=KEY,
    )
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        print(f"won: {chat.resume({'call_1': True}).text}", flush=True)
    except ToolregError as err:
        print(f"lost: {type(err).__name__}: {err}", flush=True)


if __name__ == "__main__":
    main()
