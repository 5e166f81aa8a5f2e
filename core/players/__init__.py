"""What plays or scores the game: agents, judges, embedders and tau calibration, and the one
registry of their kinds (``kinds``: ``openai:MODEL``, ``random``, ``script:FILE``, ...)."""
