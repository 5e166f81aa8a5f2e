"""Write core/game/prompt_sets/inquitree/* (the paper's prompt templates) from the InquiTree paper's Appendix A and C.

python scripts/copy_prompts_from_paper.py [PATH/TO/inquitree-paper.md]
"""

import sys
from pathlib import Path

from inquitree.core.game.prompts_in_paper import SECTIONS, default_paper_path, extract

paper = Path(sys.argv[1]) if len(sys.argv) > 1 else default_paper_path()
text = paper.read_text(encoding="utf-8")
out = Path(__file__).resolve().parent.parent / "core" / "game" / "prompt_sets" / "inquitree"
for name in SECTIONS:
    (out / name).write_text(extract(text, name), encoding="utf-8")
    print(f"wrote {out / name}")
