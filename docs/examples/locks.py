"""Calls to one resource run one at a time; the others overlap."""

import threading
import time

from toolreg import ToolRegistry

registry = ToolRegistry()
running: dict[str, int] = {}
most: dict[str, int] = {}
guard = threading.Lock()


def use(account: str) -> None:
    with guard:
        running[account] = running.get(account, 0) + 1
        most[account] = max(most.get(account, 0), running[account])
    time.sleep(0.02)
    with guard:
        running[account] -= 1


@registry.register_tool(lock=lambda args: f"account:{args['account']}")
def debit(account: str, amount: int) -> str:
    """Take money from an account."""
    use(account)
    return f"debited {amount} from {account}"


@registry.register_tool(lock=lambda args: f"account:{args['account']}")
def credit(account: str, amount: int) -> str:
    """Give money to an account."""
    use(account)
    return f"credited {amount} to {account}"


calls = [
    ("debit", {"account": "A", "amount": 5}),
    ("credit", {"account": "A", "amount": 2}),
    ("debit", {"account": "B", "amount": 1}),
]
results = registry.dispatch_many(calls, max_concurrency=3)
print([r.content for r in results])
assert most["A"] == 1  # account A: one call at a time; B ran beside them
