"""ChatGLM3's tool demo on toolreg: the code of its `tool_registry.py`, one import changed.

ChatGLM3's demo does `from tool_registry import register_tool, dispatch_tool, get_tools`;
here the same three names come from `toolreg.compat.chatglm3`, and everything else stays:
the `Annotated[T, "description", required]` parameters, `get_tools()` in ChatGLM3's shape,
`dispatch_tool(name, params)` returning the observation as text. The conversation runs in
the `chatglm3` dialect (the call comes as `function_call`, the answer goes back with role
`observation`):

    python samples/chatglm3_tools.py
    toolreg call samples/chatglm3_tools.py get_weather '{"city_name": "北京"}'
"""

from __future__ import annotations

import random
from typing import Annotated

from toolreg.cli.demo import Demo, run_demo
from toolreg.compat.chatglm3 import dispatch_tool, get_tools, register_tool, registry
from toolreg.testing import function_call, text

# City -> the observation a weather service would give (no network in the demo).
WEATHER = {
    "北京": {"temperature": "18", "description": "Sunny", "humidity": "30"},
    "beijing": {"temperature": "18", "description": "Sunny", "humidity": "30"},
    "上海": {"temperature": "21", "description": "Light rain", "humidity": "85"},
}


@register_tool
def random_number_generator(
    seed: Annotated[int, "The random seed used by the generator", True],
    range: Annotated[tuple[int, int], "The range of the generated numbers", True],
) -> int:
    """
    Generates a random number x, s.t. range[0] <= x < range[1].
    Use it when the user asks for a random number.
    """
    if not range[0] < range[1]:
        raise ValueError(f"empty range {range}")
    return random.Random(seed).randrange(*range)


@register_tool
def get_weather(
    city_name: Annotated[str, "The name of the city to be queried", True],
) -> str:
    """
    Get the current weather for `city_name`.
    Use it when the user asks about the weather somewhere.
    """
    found = WEATHER.get(city_name.strip().lower())
    if found is None:
        return f"No weather data for {city_name}."
    return str(found)


DEMO = Demo(
    registry=registry,
    prompts=["北京今天天气怎么样？"],
    script=[
        function_call("get_weather", city_name="北京"),
        text("北京今天晴，18°C，湿度 30%。"),
    ],
    options={"dialect": "chatglm3"},
)

if __name__ == "__main__":
    print(list(get_tools()))
    print(dispatch_tool("random_number_generator", {"seed": 7, "range": [1, 10]}))
    run_demo(DEMO)
