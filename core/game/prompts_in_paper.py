"""Where each template of the InquiTree paper stands in the paper's text.

Used by ``scripts/copy_prompts_from_paper.py`` (which wrote ``core/game/prompt_sets/inquitree``)
and by the test that checks the shipped files still equal the paper, byte for
byte, after undoing two artifacts of the paper's Markdown conversion:
trailing double spaces (Markdown line breaks) and a ``#### `` the converter put
before the literal ``## Requirements`` line.
"""

from __future__ import annotations

import re
from pathlib import Path

# file -> (line that opens the section, line that ends it); the template is what lies between,
# without code fences and without blank lines at either end.
SECTIONS: dict[str, tuple[str, str]] = {
    "system.txt": ("### Prompt Used in InquiTree", "## B. Complexity Analysis"),
    "C.1.1.j2": ("**Initial State**", "#### C.1.2. FROM TOPIC TO SUBTOPIC: FAILED"),
    "C.1.2.j2": ("**From topic to subtopic: failed**", "### C.1.3. BACK FROM RESULT: PROPOSE NEW SUBTOPIC"),
    "C.1.3.j2": ("#### New-subtopic", "## C.2. State: Subtopic"),
    "C.2.1.j2": ("#### From subtopic to study: succeed", "### C.2.2. FROM SUBTOPIC TO STUDY: FAILED"),
    "C.2.2.j2": ("#### From subtopic to study: failed", "## C.3. State: Study"),
    "C.3.1.j2": ("#### From study to result", "### C.3.2. BACK FROM RESULTS: REDO THE STUDY"),
    "C.3.2.j2": ("#### Redo the study", "## C.4. State: Result"),
    "C.4.1.j2": ("#### Decision for next step", "### C.4.2. FAILED PARSING DECISION: REMAKE DECISION"),
    "C.4.2.j2": ("#### Remake decision for next step", "### C.5. State: Conclusion"),
    "C.5.j2": ("#### Conclusion", "### C.6. Turn limit reached"),
    "C.6.j2": ("#### Turn limit reached", "## D. Pipeline for Research Tree Extraction and Validation"),
}


def default_paper_path() -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "papers" / "inquitree-paper.md"


def extract(paper_text: str, name: str) -> str:
    start, end = SECTIONS[name]
    lines = paper_text.splitlines()
    i = lines.index(start)
    j = lines.index(end, i + 1)
    body = [ln.rstrip() for ln in lines[i + 1 : j] if ln.strip() != "```"]
    body = [re.sub(r"^#### (## )", r"\1", ln) for ln in body]
    while body and not body[0]:
        body.pop(0)
    while body and not body[-1]:
        body.pop()
    return "\n".join(body) + "\n"
