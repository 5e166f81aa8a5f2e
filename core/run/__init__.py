"""What drives episodes: the runner (one episode, recorded step by step), campaigns (a suite's
grid), replay and re-simulation, re-judging and the control experiment, limits and prices, and the
episode export format (``golden``)."""
