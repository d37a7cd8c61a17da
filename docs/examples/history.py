"""History: trim_history keeps the newest messages that fit, never splitting a call."""

from toolreg import trim_history

messages = [
    {"role": "system", "content": "You are a weather assistant."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18 °C"},
    {"role": "assistant", "content": "18 °C in Paris."},
    {"role": "user", "content": "And in Oslo?"},
]
kept = trim_history(messages, max_messages=4)
print([m["role"] for m in kept])  # ['system', 'assistant', 'user']
assert kept[0]["role"] == "system"
assert kept[-1]["content"] == "And in Oslo?"
assert not any(m["role"] == "tool" for m in kept)  # never an answer without its call
