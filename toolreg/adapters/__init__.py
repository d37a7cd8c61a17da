"""toolreg tools inside other frameworks' loops, and their tools inside toolreg.

One module per framework, each imported only when used (`import toolreg` loads none of
them, nor the framework):

- `toolreg.adapters.pydantic_ai`: a toolset as a pydantic-ai toolset (`ToolregToolset`);
- `toolreg.adapters.agents`: a toolset as OpenAI Agents SDK function tools
  (`function_tools`), and an Agents SDK `FunctionTool` as a toolreg `Tool`
  (`from_function_tool`);
- `toolreg.adapters.langchain`: a toolset as LangChain tools (`langchain_tools`), and a
  LangChain tool as a toolreg `Tool` (`from_langchain`).

In each, toolreg's dispatch runs every call: the whitelist, decoding, validation and safe
coercion, context injection, confirmation, time limits, redaction of errors and the cut of
results; the framework runs the loop. `base.Bridge` is what they share.
"""

from __future__ import annotations
