"""Weather lookup, written in the ChatGLM3 tool style: `Annotated[T, "description", required]`.

Answers from a bundled table (no network), so the demo runs anywhere:

    python samples/weather.py
    toolreg call samples/weather.py get_weather '{"city_name": "北京"}'
"""

from __future__ import annotations

from typing import Annotated, Literal

from toolreg import ToolError, ToolRegistry
from toolreg.cli.demo import Demo, run_demo
from toolreg.testing import call, text, tool_calls

registry = ToolRegistry()
register_tool = registry.register_tool

# City -> (condition, temperature in °C, humidity %). A real tool would ask a weather API.
WEATHER = {
    "beijing": ("sunny", 18.0, 30),
    "北京": ("sunny", 18.0, 30),
    "shanghai": ("light rain", 21.0, 85),
    "上海": ("light rain", 21.0, 85),
    "paris": ("cloudy", 12.0, 70),
    "london": ("drizzle", 10.0, 88),
    "new york": ("clear", 15.0, 45),
    "tokyo": ("sunny", 19.0, 50),
}


@register_tool
def get_weather(
    city_name: Annotated[str, "The name of the city to be queried, e.g. Beijing or 北京", True],
    unit: Annotated[Literal["celsius", "fahrenheit"], "Temperature unit", False] = "celsius",
) -> dict[str, object]:
    """Get the current weather of a city. Use it when the user asks about the weather,
    temperature, rain or humidity somewhere."""
    entry = WEATHER.get(city_name.strip().lower())
    if entry is None:
        known = ", ".join(sorted({c.title() for c in WEATHER if c.isascii()}))
        raise ToolError(f"No weather data for '{city_name}'. Known cities: {known}.")
    condition, celsius, humidity = entry
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32, 1)
    return {
        "city": city_name,
        "condition": condition,
        "temperature": temperature,
        "unit": unit,
        "humidity_percent": humidity,
    }


DEMO = Demo(
    registry=registry,
    prompts=["北京和巴黎今天天气怎么样？"],
    script=[
        tool_calls(
            call("get_weather", {"city_name": "北京"}), call("get_weather", {"city_name": "Paris"})
        ),
        text("北京今天晴，18°C，湿度 30%；巴黎多云，12°C，湿度 70%。"),
    ],
)

if __name__ == "__main__":
    run_demo(DEMO)
