"""Model calls: an OpenAI-compatible chat client with its settings, deadlines, retries, redaction
and call cache (``models``), and the HTTP transport under it (``chat_http``). Agents, judges, the
control and extraction all call models through here."""
