"""The instrument: how well the matcher and the judge read real agents.

Every figure InquiTree prints passes through the matcher (which subtopic or study an agent's free
text names) and the judge (which ground-truth conclusions it stated). This room measures both
against the careful readings InquiTree ships (``core/data/matching``, ``core/data/judging``), for
any embedder or judge (``inquitree instrument measure``), and keeps the measurements of the shipped
instruments (``core/data/instrument/measured.json``) that every table states beside its figures
(DECISIONS #32; docs/instrument.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.instrument.judging import CATEGORIES as CATEGORIES
    from inquitree.core.instrument.judging import agreement as agreement
    from inquitree.core.instrument.judging import measure_judge as measure_judge
    from inquitree.core.instrument.labels import LABEL_VALUE as LABEL_VALUE
    from inquitree.core.instrument.labels import LabelError as LabelError
    from inquitree.core.instrument.labels import LabelScreen as LabelScreen
    from inquitree.core.instrument.labels import LabelSession as LabelSession
    from inquitree.core.instrument.labels import campaign_conclusions as campaign_conclusions
    from inquitree.core.instrument.labels import campaign_moves as campaign_moves
    from inquitree.core.instrument.labels import conclusions_reading as conclusions_reading
    from inquitree.core.instrument.labels import draw_sample as draw_sample
    from inquitree.core.instrument.labels import keep_answer as keep_answer
    from inquitree.core.instrument.labels import labeller_agreement as labeller_agreement
    from inquitree.core.instrument.labels import latest_answers as latest_answers
    from inquitree.core.instrument.labels import measure_labels as measure_labels
    from inquitree.core.instrument.labels import moves_reading as moves_reading
    from inquitree.core.instrument.labels import sample_answers as sample_answers
    from inquitree.core.instrument.labels import sample_id as sample_id
    from inquitree.core.instrument.matching import FEW as FEW
    from inquitree.core.instrument.matching import GOAL as GOAL
    from inquitree.core.instrument.matching import RATES as RATES
    from inquitree.core.instrument.matching import measure_matcher as measure_matcher
    from inquitree.core.instrument.measured import judge_reading as judge_reading
    from inquitree.core.instrument.measured import matcher_reading as matcher_reading
    from inquitree.core.instrument.measured import record as record

_EXPORTS = {
    "CATEGORIES": "judging",
    "agreement": "judging",
    "measure_judge": "judging",
    "GOAL": "matching",
    "RATES": "matching",
    "measure_matcher": "matching",
    "judge_reading": "measured",
    "matcher_reading": "measured",
    "record": "measured",
    "campaign_conclusions": "labels",
    "campaign_moves": "labels",
    "draw_sample": "labels",
    "keep_answer": "labels",
    "labeller_agreement": "labels",
    "latest_answers": "labels",
    "measure_labels": "labels",
    "sample_answers": "labels",
    "sample_id": "labels",
    "LABEL_VALUE": "labels",
    "LabelError": "labels",
    "LabelScreen": "labels",
    "LabelSession": "labels",
    "conclusions_reading": "labels",
    "moves_reading": "labels",
    "FEW": "matching",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
