"""Write the synthetic research trees (trees/synthetic-*.json).

The content is one invented study about sleep and spatial memory in mice. It
was written for InquiTree's tests and demos, reads like real neuroscience so
that an embedder behaves on it as on real trees, and reports no real finding:
every number and outcome in it is made up. The three trees share the texts and
differ only in their subtopic dependencies:

- synthetic-chain-7: a strict chain s1 -> s2 -> ... -> s7 (Appendix B's worst case),
- synthetic-independent-7: seven subtopics with no dependencies (the best case),
- synthetic-diamond-4: s1 -> {s2, s3} -> s4.

    python scripts/make_synthetic_trees.py
"""

from __future__ import annotations

import json
from pathlib import Path

TOPIC = (
    "How sleep after learning shapes the long-term retention of spatial memories in mice, "
    "and which neural circuits carry this effect."
)

# (subtopic text, subtopic hints, study text, study hints, result, fake result)
SUBTOPICS = [
    (
        "Whether sleep in the hours after training changes how well mice remember the location of a hidden escape platform.",
        [
            "Consider what animals do in the time between learning something and having to remember it.",
            "Consider whether sleep after learning affects how much of a spatial memory survives.",
            "Examine whether keeping mice awake after spatial training affects how well they recall the platform location.",
            "Examine whether sleep in the hours after training changes how well mice remember the location of the hidden escape platform.",
        ],
        "Train mice for four days in a water maze, then let half of them sleep undisturbed for six hours while the other "
        "half are kept awake by gentle handling; test recall of the platform location in a probe trial 24 hours later.",
        [
            "A comparison between two groups of animals treated differently after learning could be informative.",
            "Compare later memory between animals treated differently after they learn.",
            "Train mice in a water maze, keep some awake after training while others sleep, and test platform recall the next day.",
            "Train mice in a water maze, let half sleep for six hours while the others are kept awake by gentle handling, and test platform recall in a probe trial 24 hours later.",
        ],
        "Mice allowed to sleep spent 41% of the probe trial in the target quadrant, against 27% for sleep-deprived mice; "
        "swim speed did not differ between the groups.",
        "Sleep-deprived mice spent as much of the probe trial in the target quadrant as mice allowed to sleep (about 38% "
        "in both groups); swim speed did not differ between the groups.",
    ),
    (
        "Whether hippocampal place-cell sequences from the training session are replayed during the sleep that follows learning.",
        [
            "Consider what the brain might be doing with a recent experience while the animal is offline.",
            "Look at the activity of hippocampal neurons during sleep after the task.",
            "Test whether the firing order of place cells seen during training reappears in later sleep.",
            "Test whether hippocampal place-cell sequences from the training session are replayed during sleep after learning.",
        ],
        "Record CA1 place cells with silicon probes during maze training and the sleep that follows, and detect sequential "
        "reactivation of the training trajectories during sharp-wave ripples.",
        [
            "Some form of neural recording across behaviour and rest would help here.",
            "Record hippocampal neurons both while the mice run the maze and while they sleep afterwards.",
            "Use silicon probes in CA1 and look for place-cell sequences inside sharp-wave ripples during sleep.",
            "Record CA1 place cells with silicon probes during maze training and subsequent sleep, and detect replay of the training trajectories during sharp-wave ripples.",
        ],
        "Sequences matching the training trajectories were replayed during ripples in the first two hours of non-REM sleep, "
        "at three times the rate seen in sleep recorded before training.",
        "Sequences matching the training trajectories were replayed during ripples at the same rate in post-training sleep "
        "as in sleep recorded before training.",
    ),
    (
        "Which brainstem input drives the sharp-wave ripples that occur during sleep after learning.",
        [
            "Consider where signals that organise brain activity during rest could originate.",
            "Look for inputs from deep brain regions to the hippocampus that are active during sleep.",
            "Identify which brainstem nucleus projecting to CA1 fires just before sleep ripples after learning.",
            "Identify which brainstem input drives the sharp-wave ripples that occur during sleep after learning.",
        ],
        "Map the inputs to CA1 with retrograde tracing, then record the labelled locus coeruleus and nucleus incertus "
        "neurons around ripple events during post-training sleep.",
        [
            "Anatomical tracing combined with recordings could narrow down the candidates.",
            "Trace which brainstem neurons project to CA1 and record them during sleep.",
            "Use retrograde tracing from CA1 and record locus coeruleus and nucleus incertus neurons around ripples.",
            "Map CA1 inputs with retrograde tracing and record the labelled locus coeruleus and nucleus incertus neurons around ripple events during sleep after training.",
        ],
        "Nucleus incertus neurons fired in bursts 50 to 100 ms before ripple onset, whereas locus coeruleus neurons were "
        "silent around ripples.",
        "Locus coeruleus neurons fired in bursts 50 to 100 ms before ripple onset, whereas nucleus incertus neurons showed "
        "no change in firing around ripples.",
    ),
    (
        "Whether silencing the identified brainstem input during sleep after learning changes ripples and later memory.",
        [
            "Consider testing whether the candidate input is actually needed.",
            "Think about switching the candidate input off at a specific time after learning.",
            "Test whether optogenetic silencing of nucleus incertus neurons during post-training sleep changes ripples and recall.",
            "Test whether silencing the nucleus incertus input during sleep after learning changes ripples and next-day memory.",
        ],
        "Express an inhibitory opsin in nucleus incertus neurons and silence them with light during the six hours of sleep "
        "after training; measure ripple rate during sleep and platform recall the next day.",
        [
            "An intervention restricted to the period after learning would be informative.",
            "Silence the candidate neurons only while the mice sleep after training.",
            "Silence nucleus incertus neurons optogenetically while the mice sleep after training, and look at ripples and recall.",
            "Express an inhibitory opsin in nucleus incertus neurons, silence them with light during the six hours of sleep after training, and measure ripple rate during sleep and next-day platform recall.",
        ],
        "Silencing reduced the ripple rate by 60% and lowered time in the target quadrant to the level of sleep-deprived "
        "mice; the amounts of non-REM and REM sleep were unchanged.",
        "Silencing left the ripple rate unchanged, and next-day recall was as good as in control mice; the amounts of "
        "non-REM and REM sleep were unchanged.",
    ),
    (
        "Whether stimulating the brainstem input during sleep can strengthen a weakly learned spatial memory.",
        [
            "Consider the opposite manipulation to switching an input off.",
            "Think about boosting the candidate input after a training that is too short to leave a strong memory.",
            "Test whether optogenetic stimulation of nucleus incertus neurons during sleep improves recall after brief training.",
            "Test whether stimulating the nucleus incertus input during sleep strengthens a weakly learned spatial memory.",
        ],
        "Train mice for a single day only, then stimulate nucleus incertus neurons optogenetically at 1 Hz during the sleep "
        "after training and test platform recall the next day.",
        [
            "A weaker training protocol combined with a manipulation during rest could test this.",
            "Give only one day of training and activate the candidate neurons during the following sleep.",
            "Use 1 Hz optogenetic stimulation of nucleus incertus neurons during sleep after a single training day.",
            "Train mice for one day only, stimulate nucleus incertus neurons optogenetically at 1 Hz during post-training sleep, and test platform recall the next day.",
        ],
        "Stimulated mice spent 39% of the probe trial in the target quadrant against 26% for unstimulated mice trained for "
        "one day, and the ripple rate during stimulation rose by 45%.",
        "Stimulation during sleep did not change recall after one day of training: stimulated and unstimulated mice both "
        "spent about 26% of the probe trial in the target quadrant.",
    ),
    (
        "Which transmitter released by the brainstem input acts on hippocampal neurons during sleep.",
        [
            "Consider the chemical signals the input might use.",
            "Think about which receptors in the hippocampus respond to the input.",
            "Determine whether the brainstem input acts on hippocampal neurons during sleep through relaxin-3 or through GABA.",
            "Identify which transmitter released by the nucleus incertus input acts on hippocampal neurons during sleep.",
        ],
        "Infuse a relaxin-3 receptor antagonist or a GABA-A receptor antagonist into CA1 during post-training sleep while "
        "stimulating the nucleus incertus input, and measure the ripple rate.",
        [
            "A pharmacological approach applied locally could separate the candidates.",
            "Block candidate receptors in CA1 while the input is stimulated during sleep.",
            "Infuse receptor antagonists for relaxin-3 and for GABA-A into CA1 during stimulation in sleep and count ripples.",
            "Infuse a relaxin-3 receptor antagonist or a GABA-A antagonist into CA1 during post-training sleep while stimulating the nucleus incertus input, and measure ripple rate.",
        ],
        "The relaxin-3 receptor antagonist abolished the stimulation-induced increase in ripples, whereas the GABA-A "
        "receptor antagonist left it intact.",
        "The GABA-A receptor antagonist abolished the stimulation-induced increase in ripples, whereas the relaxin-3 "
        "receptor antagonist left it intact.",
    ),
    (
        "Whether the sleep-dependent effect of the brainstem input extends to a non-spatial memory task.",
        [
            "Consider how general the effect is beyond the task studied so far.",
            "Think about a memory task that does not depend on spatial navigation.",
            "Test whether silencing the input during sleep also affects object recognition memory.",
            "Test whether the sleep-dependent effect of the nucleus incertus input extends to a non-spatial memory task.",
        ],
        "Train mice in a novel-object recognition task, silence the nucleus incertus input during the sleep after training "
        "as before, and test object discrimination 24 hours later.",
        [
            "A different behavioural paradigm with the same manipulation could answer this.",
            "Repeat the silencing during sleep after training in a task about objects rather than places.",
            "Use novel-object recognition with post-training silencing of nucleus incertus neurons during sleep.",
            "Train mice in novel-object recognition, silence the nucleus incertus input during post-training sleep, and test object discrimination 24 hours later.",
        ],
        "Silencing during sleep did not change object discrimination (discrimination index 0.32, against 0.30 in controls).",
        "Silencing during sleep abolished object discrimination (discrimination index 0.02, against 0.30 in controls).",
    ),
]

CONCLUSIONS = [
    ("c1", "Sleep after training improves next-day recall of a spatial memory in mice.", ["r1"]),
    (
        "c2",
        "Training experiences are replayed in hippocampal sharp-wave ripples during the non-REM sleep that follows.",
        ["r2"],
    ),
    (
        "c3",
        "Nucleus incertus activity precedes sleep ripples and is necessary for ripples and for sleep-dependent spatial memory.",
        ["r3", "r4"],
    ),
    (
        "c4",
        "Stimulating the nucleus incertus during sleep is enough to increase ripples and strengthen a weakly learned spatial memory.",
        ["r5"],
    ),
    (
        "c5",
        "The nucleus incertus input acts on CA1 through relaxin-3 signalling rather than through GABA-A receptors.",
        ["r6"],
    ),
    (
        "c6",
        "The pathway's contribution is specific to spatial memory and does not extend to object recognition.",
        ["r4", "r7"],
    ),
]

NOTE = (
    "Synthetic: an invented study written for InquiTree's tests and demos. It describes no real experiment; "
    "every number and outcome is made up. Generated by scripts/make_synthetic_trees.py."
)


def subtopic(i: int, depends_on: list[int]) -> dict:
    text, hints, study, study_hints, result, fake = SUBTOPICS[i - 1]
    return {
        "id": f"s{i}",
        "text": text,
        "depends_on": [f"s{d}" for d in depends_on],
        "hints": hints,
        "studies": [
            {
                "id": f"s{i}.study",
                "text": study,
                "hints": study_hints,
                "result": {"id": f"r{i}", "text": result, "fakes": [fake]},
            }
        ],
    }


def tree(tree_id: str, title: str, deps: dict[int, list[int]]) -> dict:
    kept = set(deps)
    conclusions = [
        {"id": cid, "text": text, "requires_results": req}
        for cid, text, req in CONCLUSIONS
        if {int(r[1:]) for r in req} <= kept
    ]
    return {
        "schema": "inquitree/research-tree@1",
        "id": tree_id,
        "paper": {
            "title": title,
            "journal": None,
            "doi": None,
            "published": None,
            "open_access": True,
            "it18_id": None,
            "paper_subtopics": None,
        },
        "provenance": {"kind": "synthetic", "note": NOTE, "sources": []},
        "topic": {"text": TOPIC},
        "subtopics": [subtopic(i, d) for i, d in deps.items()],
        "conclusions": conclusions,
    }


def main() -> None:
    out = Path(__file__).resolve().parent.parent / "trees"
    trees = [
        tree(
            "synthetic-chain-7",
            "Synthetic: sleep and spatial memory, a strict chain of seven subtopics",
            {i: ([i - 1] if i > 1 else []) for i in range(1, 8)},
        ),
        tree(
            "synthetic-independent-7",
            "Synthetic: sleep and spatial memory, seven independent subtopics",
            {i: [] for i in range(1, 8)},
        ),
        tree(
            "synthetic-diamond-4",
            "Synthetic: sleep and spatial memory, a diamond of four subtopics",
            {1: [], 2: [1], 3: [1], 4: [2, 3]},
        ),
    ]
    for t in trees:
        path = out / f"{t['id']}.json"
        path.write_text(json.dumps(t, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
