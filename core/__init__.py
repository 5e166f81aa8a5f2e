"""The engine and what plays it, in rooms:

- ``game``: research trees, prompt templates and the pure engine;
- ``calls``: the model client (with its call cache) and its HTTP transport;
- ``players``: agents, judges, embedders, calibration, and the registry of their kinds;
- ``run``: an episode's specification, the runner, campaigns, replay, re-judging and the control,
  limits, exports;
- ``inspect``: the inspect_ai task, models and log export;
- ``extract``: research trees from papers.

A room imports only the rooms above it in this list (``run`` uses ``players``, ``calls`` and
``game``; ``game`` uses none of them), and ``events``; ``cache`` (where InquiTree keeps what it can
compute again) is shared by all. docs/ARCHITECTURE.md draws the map, and
tests/test_architecture.py keeps it true. A script uses what ``inquitree.api`` lists (each room's
own names, in one typed list); this package itself exports nothing.
"""
