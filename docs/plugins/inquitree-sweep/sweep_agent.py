"""A lab's agent kind, found by InquiTree through the ``inquitree.agents`` entry point.

``sweep`` visits the subtopics in the tree's order and proposes each one's first study; at a result
it moves on until it has entered every subtopic, then concludes by restating the results it saw.
It knows the tree (as the oracle does), so it is a baseline for the engine, not a research agent.
"""

from __future__ import annotations

from typing import Any

from inquitree.core.game import RESULT, STUDY, SUBTOPIC, TOPIC, Reply


class SweepAgent:
    replayable = True  # its replies follow from the tree and the transcript alone

    def __init__(self, tree: Any):
        self.tree = tree
        self.description = {"kind": "sweep", "version": 1}
        self.turns: list[tuple[str, str]] = []

    def resume(self, events: list) -> None:
        """Rebuild what it saw from an episode's recorded events (to continue a run that died)."""
        from inquitree.events import AgentReplied, ObservationEmitted

        self.turns, last = [], ""
        for event in events:
            if isinstance(event, ObservationEmitted):
                last = event.text
            elif isinstance(event, AgentReplied):
                self.turns.append((event.state, last))

    def reply(self, observation: str, state: str, turn: int) -> Reply:
        self.turns.append((state, observation))
        entered = sum(s == SUBTOPIC for s, _ in self.turns)
        subtopics = self.tree.subtopics
        if state == TOPIC:
            action = subtopics[min(entered, len(subtopics) - 1)].text
        elif state == SUBTOPIC:
            action = subtopics[min(entered, len(subtopics)) - 1].studies[0].text
        elif state == RESULT:
            action = "explore_new_subtopic" if entered < len(subtopics) else "draw_conclusion"
        elif state == STUDY:
            action = "OK"
        else:  # the conclusion: each result it was shown, once
            seen = dict.fromkeys(_result(o) for s, o in self.turns if s == RESULT)
            action = "\n".join(f"({i}) {text}" for i, text in enumerate(seen, 1))
        return Reply(f"THOUGHT: the next subtopic in order.\nACTION: {action}", model="sweep")


def _result(observation: str) -> str:
    """The result's text: the lines between the observation's first and "Based on these results"."""
    lines = observation.splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.startswith("Based on these results")), len(lines))
    return " ".join(line.strip() for line in lines[:end] if line.strip())


def make(spec: Any, tree: Any, **context: Any) -> SweepAgent:
    """The factory InquiTree calls with the parsed spec and what an agent may need (the tree, the
    seed, the system prompt, a model configuration and a rate limiter)."""
    return SweepAgent(tree)
