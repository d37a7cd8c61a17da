"""One module per wire API: `openai_chat`, `openai_responses`."""
