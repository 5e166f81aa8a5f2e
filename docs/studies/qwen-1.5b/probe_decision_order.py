"""A probe behind one finding of the Qwen 1.5B study: after its first result the model chose
``draw_conclusion`` every time. Is that a choice, or the last option of the list?

For each episode at randomness 0, run 0, the agent is rebuilt from the recorded log up to its
first Result observation (the same system prompt, memory window, history and reply length it had), and that
observation is sent again with the three decisions listed in reverse order (both the bulleted
explanations and the ``(a | b | c)`` line), and with ``--ask-again`` also as recorded (llama.cpp
at temperature 0 need not answer the same prompt alike). Nothing is recorded in the study's
store; the answers are written as JSON lines to ``--out``.

    python docs/studies/qwen-1.5b/probe_decision_order.py --db sqlite:///qwen.sqlite \
        --base-url http://127.0.0.1:8011/v1 --out docs/studies/qwen-1.5b/tables/decision_order.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from inquitree.core.calls.settings import CallSettings
from inquitree.core.game.prompts import TemplateSet
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent
from inquitree.events.names import EPISODE_PREFIX
from inquitree.events.store import EventStore
from inquitree.events.types import AgentReplied, EpisodeStarted, ObservationEmitted

OPTIONS = "(redo_study | explore_new_subtopic | draw_conclusion)"
REVERSED = "(draw_conclusion | explore_new_subtopic | redo_study)"


def reversed_decisions(text: str) -> str:
    """The Result observation with its three decisions in reverse order, bullets and options line."""
    if OPTIONS not in text:
        raise SystemExit(f"the Result observation does not list {OPTIONS}: the templates differ from the study's")
    bullets = re.findall(r"^\* .*$", text, flags=re.M)
    if len(bullets) != 3:
        raise SystemExit(f"expected three bulleted decisions in the Result observation, found {len(bullets)}")
    first = text.index(bullets[0])
    last = text.index(bullets[-1]) + len(bullets[-1])
    text = text[:first] + "\n".join(reversed(bullets)) + text[last:]
    return text.replace(OPTIONS, REVERSED)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--prefix", default="qwen-1.5b.")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ask-again", action="store_true", help="also send the observation as recorded")
    args = ap.parse_args()
    with EventStore(args.db, create=False) as store:
        streams = [s.stream_id for s in store.streams(EPISODE_PREFIX + args.prefix) if s.stream_id.endswith(".a0.r0")]
        logs = {s.removeprefix(EPISODE_PREFIX): [r.event for r in store.read_stream(s)] for s in streams}
    with open(args.out, "w", encoding="utf-8") as out:
        for episode, events in sorted(logs.items()):
            started = events[0]
            assert isinstance(started, EpisodeStarted)
            at = next(
                i for i, e in enumerate(events) if isinstance(e, ObservationEmitted) and e.state == "result"
            )  # the first Result observation
            recorded = next(e for e in events[at:] if isinstance(e, AgentReplied))
            observation = events[at].text
            config = ModelConfig(
                base_url=args.base_url,
                settings=CallSettings(
                    max_tokens=started.agent.get("max_tokens"), timeout=600, max_retries=1, stream=False
                ),
                window=started.agent.get("window"),
            )
            system = TemplateSet(started.params.get("template_set")).system_prompt
            answers = {"recorded": recorded.raw}
            variants = {"reversed": reversed_decisions(observation)}
            if args.ask_again:
                variants["as recorded, asked again"] = observation
            for variant, text in variants.items():
                agent = OpenAIChatAgent(started.agent.get("model", "qwen-1.5b"), system, config)
                agent.resume(events[:at])
                t0 = time.monotonic()
                answers[variant] = agent.reply(text, "result", 0).text
                print(f"{episode} {variant}: {answers[variant]!r} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
            out.write(json.dumps({"episode": episode, **answers}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
