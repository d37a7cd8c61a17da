"""Porting a ChatGLM3 demo: change the import, keep the code."""

import random
from typing import Annotated

from toolreg.compat import chatglm3


@chatglm3.register_tool
def roll_dice(
    seed: Annotated[int, "The random seed used by the generator", True],
    sides: Annotated[int, "How many sides the die has", False] = 6,
) -> int:
    """Roll a die. Use it when the user wants a random roll."""
    return random.Random(seed).randint(1, sides)


assert chatglm3.get_tools()["roll_dice"]["params"][1] == {
    "name": "sides",
    "description": "How many sides the die has",
    "type": "int",
    "required": False,
}
print(chatglm3.dispatch_tool("roll_dice", {"seed": 7}))  # 3
