"""What drives episodes: an episode's specification (``spec``: the one place that builds a cell's
parameters for play, campaigns and the inspect task), the runner (one episode, recorded step by
step), campaigns (a suite's grid), replay and re-simulation, re-judging and the control
experiment, limits and prices, and the episode export format (``golden``)."""
