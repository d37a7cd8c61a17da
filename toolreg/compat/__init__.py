"""Drop-in surfaces of other projects, so their code runs on toolreg after changing an import.

- `chatglm3`: ChatGLM3's `tool_registry` (`register_tool`, `dispatch_tool`, `get_tools`).
"""
