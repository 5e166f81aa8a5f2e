"""The shipped template set is the paper's text, exactly as printed (Appendix A and C)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inquitree.core.game.prompts import FILES, TemplateError, TemplateSet
from inquitree.core.game.prompts_in_paper import SECTIONS, default_paper_path, extract

SHIPPED = Path(__file__).resolve().parent.parent / "core" / "game" / "prompt_sets" / "inquitree"


def paper_text() -> str:
    path = Path(os.environ.get("INQUITREE_PAPER", default_paper_path()))
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"the InquiTree paper is not at {path} (../shared beside the clone)")
        pytest.skip(f"the InquiTree paper is not at {path}")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_shipped_template_file_equals_the_paper(name):
    assert (SHIPPED / name).read_text(encoding="utf-8") == extract(paper_text(), name)


def test_every_template_of_the_engine_is_in_the_paper_table():
    assert set(FILES.values()) == set(SECTIONS)


def test_rendering_for_a_fixed_input_is_byte_exact():
    t = TemplateSet()
    assert t.render("C.2.1", content="<S>") == (
        "Your suggestion has offered a useful line of thought.\n"
        "Taking it into account, after careful consideration, we formulated a research direction that aligns most "
        "closely with your idea while remaining actionable at this stage:\n<S>\n"
        "Please propose one study or experiment that could effectively investigate this direction."
    )
    assert t.render("C.1.2", hints="<H>", final_hint=False) == (
        "Sorry, but due to several limitations, we cannot explore the topic you proposed at this\nstage.\n"
        "This is likely because either the subtopic you proposed is not satisfactory, or some\n"
        "preliminary results required for its discussion are still missing.\n"
        "Do not ask for the reasons behind this decision.\n"
        "Instead, propose **one new subtopic only** for exploration. Here is a **tentative\n"
        "hint** you may consider:\n<H>"
    )
    assert t.render("C.2.2", hints="<H>", finalhint=True) == (
        "Sorry, but due to several limitations, we will **not proceed with the study or experiment you proposed**.\n"
        "Regarding the current **subtopic**, we have decided to carry out the following **alternative study plan**:\n"
        "<H>\nPlease **repeat** it so we can proceed to the next step."
    )
    assert t.render("C.3.2", content="<S>").endswith('You just need to output "OK" for this turn.')
    assert t.system_prompt.endswith("Only the ACTION line will be used. Keep it concise and specific.")
    assert "draw your conclusino." in t.system_prompt  # the paper's own typo, kept as printed


def test_another_template_directory_is_recorded_by_path_and_hash(tmp_path):
    for f in FILES.values():
        (tmp_path / f).write_text((SHIPPED / f).read_text())
    (tmp_path / "C.1.1.j2").write_text("Topic: {{content}}")
    custom = TemplateSet(str(tmp_path))
    assert custom.name == str(tmp_path.resolve()) and custom.hash != TemplateSet().hash
    assert custom.render("C.1.1", content="X") == "Topic: X"
    (tmp_path / "C.6.j2").unlink()
    with pytest.raises(TemplateError, match="missing C.6.j2"):
        TemplateSet(str(tmp_path))
