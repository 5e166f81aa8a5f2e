"""The instrument: how well the matcher and the judge read real agents.

Every figure InquiTree prints passes through the matcher (which subtopic or study an agent's free
text names) and the judge (which ground-truth conclusions it stated). This room measures both
against the careful readings InquiTree ships (``core/data/matching``, ``core/data/judging``), for
any embedder or judge (``inquitree instrument measure``), and keeps the measurements of the shipped
instruments (``core/data/instrument/measured.json``) that every table states beside its figures
(DECISIONS #32; docs/instrument.md).
"""

from inquitree.core.instrument.judging import CATEGORIES, agreement, measure_judge
from inquitree.core.instrument.matching import GOAL, RATES, measure_matcher
from inquitree.core.instrument.measured import judge_reading, matcher_reading

__all__ = [
    "CATEGORIES",
    "GOAL",
    "RATES",
    "agreement",
    "judge_reading",
    "matcher_reading",
    "measure_judge",
    "measure_matcher",
]
