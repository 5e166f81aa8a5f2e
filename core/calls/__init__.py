"""Model calls: an OpenAI-compatible chat client with its settings, deadlines, retries and
redaction (``models``), the HTTP transport under it (``chat_http``) and the call cache
(``cache``). Agents, judges, the control and extraction all call models through here."""
