"""``inquitree report``: an HTML report over the warehouse.

The leaderboard (Table 2), every figure of the paper as a PNG (Fig. 3a-c,
Fig. 4, steps against the bounds), the tables behind them, and one page per
episode: its dialogue, hints, fake draws and verdicts (an episode viewer).
Every number comes from ``queries/*.sql``; the figures are drawn from the same
DataFrames.
"""

from __future__ import annotations

import html
import io
import re
import time
from pathlib import Path
from typing import Any, Callable

import jinja2
import polars as pl

from inquitree.boundary.files import OpenFolder, inner_folder, output_folder, write_file
from inquitree.boundary.text import shown, warn
from inquitree.events import is_episode_id
from inquitree.warehouse.notes import readable, table_notes
from inquitree.warehouse.warehouse import PAIR_COLUMNS, Warehouse

TEMPLATES = Path(__file__).resolve().parent / "report_pages"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no data yet: {what}", ha="center", va="center", transform=ax.transAxes, color="#777")
    ax.set_xticks([])
    ax.set_yticks([])


def _yerr(part: pl.DataFrame, y: str, low: str, high: str) -> list[list[float]]:
    """Error bar lengths below and above each point; 0 where a point has no interval."""
    ys, lo, hi = part[y].to_list(), part[low].to_list(), part[high].to_list()
    return [
        [max(0.0, v - (a if a is not None else v)) for v, a in zip(ys, lo, strict=False)],
        [max(0.0, (b if b is not None else v) - v) for v, b in zip(ys, hi, strict=False)],
    ]


DODGE = 0.05  # horizontal offset between lines at the same level, so that their bars stay apart


def _lines(
    df: pl.DataFrame, x: str, y: str, by: str, ax, what: str, ci: str | None = None, offset: int = 0, **style
) -> list[str]:
    """One line per value of ``by``, with the interval columns ``{ci}_ci_low``/``_ci_high`` as
    error bars, each line shifted sideways a little (``offset`` lines already drawn on these
    axes); returns the keys drawn."""
    data = df.drop_nulls(y) if df.height else df
    if not data.height:
        _empty(ax, what)
        return []
    keys = sorted(data[by].unique().to_list(), key=str)
    for k, key in enumerate(keys):
        part = data.filter(pl.col(by) == key).sort(x)
        yerr = _yerr(part, y, f"{ci}_ci_low", f"{ci}_ci_high") if ci else None
        xs = [v + DODGE * (k + offset) for v in part[x].to_list()]
        ax.errorbar(xs, part[y].to_list(), yerr=yerr, marker="o", capsize=3, label=str(key), **style)
    return keys


def _level_axis(ax, df: pl.DataFrame) -> None:
    """Randomness levels are whole numbers: one tick per level present, a half-level margin."""
    if df.height and "randomness" in df.columns:
        levels = sorted(set(df["randomness"].drop_nulls().to_list()))
        if levels:
            ax.set_xticks(levels)
            ax.set_xlim(levels[0] - 0.5, levels[-1] + 0.5)


def _legend(ax) -> None:
    """Outside the axes on the right, so that it covers no data; savefig keeps it in the image."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)


# How every bar of the report is made (#25): said once, in each caption that draws intervals.
BARS = (
    "Bars: 95% intervals with the paper as the unit (docs/statistics.md): for a metric in a range a score "
    "interval that follows its closeness to a bound, widened for skew; Cox's log-scale interval for steps; no bar "
    "below 3 papers. Under the table: each method, and a warning wherever a number cannot be trusted."
)

CAPTIONS = {
    "fig3a": (
        "The paper's Figure 3a. For each agent and judge, the conclusion score (q_norm: the evidence-weighted "
        "score Q divided by the number of ground-truth items) at each randomness level a, where each result is "
        "replaced by a fake with probability 10a%. A point is the mean over papers of each paper's mean over its "
        "runs. " + BARS
    ),
    "fig3b": (
        "The paper's Figure 3b. How much more or less often each agent asks to redo a study at level a than at "
        "level 0, in percent: 100 (f_a - f_0) / f_0, where f is the share of result observations followed by a "
        "redo_study decision, averaged per paper and then over papers, both levels on the same papers. " + BARS
    ),
    "fig3c": (
        "The paper's Figure 3c. Solid: the share of fake results an agent answered with redo_study (hit rate). "
        "Dotted: the share of true results it redid anyway (false alarms). Dashed: how often the same model calls "
        "a fake INVALID when result texts are shown to it alone (the decontextualized control). Rates are pooled "
        "over an agent's episodes at each level. " + BARS
    ),
    "fig4": (
        "The paper's Figure 4. Each agent's conclusion score at level 0 on papers published on or before its "
        "model's training cutoff and on papers published after it (cutoffs from the model registry, Table 3; "
        "publication dates from the trees, Table 4). " + BARS
    ),
    "steps_bounds": (
        "Appendix B. Steps of each finished episode per tree and agent: the mean with its 95% interval (resampling "
        "episodes) and the range, beside the interval [3n, n(2H+3)] that Appendix B derives for an agent that "
        "visits every subtopic once (n subtopics, H hints). The bounds describe an inquiry the agent concludes "
        "itself: episodes the engine cut off (turn, re-ask or run limit) are counted apart and left out. Below 3n an "
        "episode concluded before visiting every subtopic; above n(2H+3) it made moves the bounds leave out (redo "
        "decisions, invalid decisions asked again, repeat visits); the table's last columns say which."
    ),
}


def _draw_fig3a(wh: Warehouse, plt: Any) -> tuple[pl.DataFrame, Any, list[str]]:
    """The conclusion score by randomness level, one line per agent and judge."""
    df = wh.query("fig3a_score_by_randomness")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    labelled = df.with_columns(label=pl.col("agent") + " / " + pl.col("judge_id").str.slice(0, 24)) if df.height else df
    drawn = _lines(labelled, "randomness", "conclusion_score", "label", ax, "no scored episodes", ci="conclusion_score")
    ax.set(xlabel="randomness level a (fake with p = 10a%)", ylabel="conclusion score (q_norm)")
    _level_axis(ax, df)
    _legend(ax)
    notes = []
    if drawn and df["randomness"].n_unique() == 1:
        notes.append(f"Only level {df['randomness'][0]} has scored episodes: the figure has one point per line.")
    return df, fig, notes


def _draw_fig3b(wh: Warehouse, plt: Any) -> tuple[pl.DataFrame, Any, list[str]]:
    """The relative change of redo_study frequency against level 0, one line per agent."""
    df = wh.query("fig3b_redo_frequency")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    drawn = _lines(
        df.filter(pl.col("randomness") > 0) if df.height else df,
        "randomness",
        "relative_change_pct",
        "agent",
        ax,
        "needs episodes at level 0 and above 0, with redo_study at level 0",
        ci="relative_change_pct",
    )
    ax.axhline(0, color="#999", linewidth=0.8)
    ax.set(xlabel="randomness level a", ylabel="redo_study frequency, % change vs a = 0")
    _level_axis(ax, df.filter(pl.col("randomness") > 0) if df.height else df)
    _legend(ax)
    notes = []
    if df.height:
        for agent in sorted(set(df["agent"].to_list()) - set(drawn)):
            part = df.filter(pl.col("agent") == agent)
            f0 = part.filter(pl.col("randomness") == 0)["redo_frequency"].to_list()
            if not f0:
                why = "it has no episodes at level 0 to compare with"
            elif not f0[0]:
                why = (
                    "its level-0 redo rate is 0, so a relative change is undefined "
                    "(its absolute rates are in the table)"
                )
            else:
                why = "it has no episodes above level 0"
            notes.append(f"{agent} is not drawn: {why}.")
    return df, fig, notes


def _draw_fig3c(wh: Warehouse, plt: Any) -> tuple[pl.DataFrame, Any, list[str]]:
    """The fake-result hit rate and false-alarm rate by level, with the decontextualized baseline."""
    df = wh.query("fig3c_fake_hit_rate")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    hit = df.filter(pl.col("randomness") > 0) if df.height else df
    drawn = _lines(hit, "randomness", "hit_rate", "agent", ax, "no fake results observed", ci="hit_rate")
    notes = []
    if hit.height:
        for row in hit.unique("agent", maintain_order=True).sort("agent").iter_rows(named=True):
            if row["control_fake_detection"] is not None:
                ax.axhline(
                    row["control_fake_detection"], linestyle="--", linewidth=1, label=f"{row['agent']} decontextualized"
                )
            else:
                notes.append(
                    f"{row['agent']}: no decontextualized control recorded (`inquitree control`), no dashed line."
                )
        far = hit.drop_nulls("false_alarm_rate")
        for k, key in enumerate(sorted(far["agent"].unique().to_list())):
            part = far.filter(pl.col("agent") == key).sort("randomness")
            ax.errorbar(
                [v + DODGE * (k + len(drawn)) for v in part["randomness"].to_list()],
                part["false_alarm_rate"].to_list(),
                yerr=_yerr(part, "false_alarm_rate", "false_alarm_rate_ci_low", "false_alarm_rate_ci_high"),
                linestyle=":",
                marker="x",
                capsize=3,
                label=f"{key} false alarms",
            )
        missing = hit.filter(pl.col("hit_rate").is_null())
        for row in missing.iter_rows(named=True):
            notes.append(f"{row['agent']} at level {row['randomness']}: no fake result was shown, so no hit rate.")
    ax.set(xlabel="randomness level a", ylabel="rate", ylim=(-0.02, 1.02))
    _level_axis(ax, hit)
    _legend(ax)
    return df, fig, notes


def fig4_notes(df: pl.DataFrame) -> list[str]:
    """What Figure 4 could not split, per agent: a model of unknown cutoff, papers of undetermined date.
    The papers are counted from the row's trees: its ``papers`` (what the score rests on) is NULL
    when no verdict of the judge was usable, and the note read "None paper(s)"."""

    def papers(row: dict) -> int:
        return (
            row["papers"] if row["papers"] is not None else len([t for t in str(row["trees"] or "").split(", ") if t])
        )

    notes = []
    for row in df.filter(pl.col("split") == "cutoff unknown").iter_rows(named=True):
        notes.append(
            f"{row['agent']}: its model's training cutoff is unknown (not in the model registry, or listed "
            f"without one): {papers(row)} paper(s) not split; add it with --registry FILE."
        )
    for row in df.filter(pl.col("split") == "date undetermined").iter_rows(named=True):
        notes.append(
            f"{row['agent']}: {papers(row)} paper(s) whose publication date is unknown or too coarse to place "
            f"against the cutoff {row['cutoff']}: {row['trees']}."
        )
    return notes


def _draw_fig4(wh: Warehouse, plt: Any) -> tuple[pl.DataFrame, Any, list[str]]:
    """The conclusion score on papers published before and after each model's training cutoff."""
    df = wh.query("fig4_cutoff")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    notes = []
    split_df = df.filter(pl.col("split").is_in(["pre-cutoff", "post-cutoff"])) if df.height else df
    if split_df.height:
        agents = sorted(split_df["agent"].unique().to_list())
        for i, split in enumerate(["pre-cutoff", "post-cutoff"]):
            xs: list[float] = []
            vals: list[float] = []
            errs: list[list[float]] = [[], []]
            for k, a in enumerate(agents):
                part = split_df.filter((pl.col("agent") == a) & (pl.col("split") == split))
                if not part.height:
                    continue
                row = part.row(0, named=True)  # one judge per bar: the first, as the table lists them
                xs.append(k + 0.4 * i)
                vals.append(row["conclusion_score"] or 0.0)
                (lo,), (hi,) = _yerr(
                    part.head(1), "conclusion_score", "conclusion_score_ci_low", "conclusion_score_ci_high"
                )
                errs[0].append(lo)
                errs[1].append(hi)
            if xs:
                ax.bar(xs, vals, width=0.4, yerr=errs, capsize=3, label=split)
        ax.set_xticks([k + 0.2 for k in range(len(agents))], agents, rotation=20, ha="right", fontsize=8)
        if split_df["judge_id"].n_unique() > 1:
            notes.append("More than one judge: the bars show each agent's first judge in the table; the table has all.")
    else:
        _empty(ax, "needs dated trees and agents in the model registry")
    if df.height:
        notes += fig4_notes(df)
        for a in sorted(set(split_df["agent"].to_list()) if split_df.height else []):
            have = set(split_df.filter(pl.col("agent") == a)["split"].to_list())
            for missing_split in {"pre-cutoff", "post-cutoff"} - have:
                notes.append(f"{a}: no {missing_split} papers among its episodes, so that bar is absent.")
    ax.set(ylabel="conclusion score (q_norm)")
    _legend(ax)
    return df, fig, notes


def _draw_steps_bounds(wh: Warehouse, plt: Any) -> tuple[pl.DataFrame, Any, list[str]]:
    """Each tree and agent's steps against the bounds [3n, n(2H+3)] (Appendix B)."""
    table = wh.query("steps_bounds")
    df = table.filter(pl.col("concluded") > 0)  # the bounds apply to concluded episodes; the rest are notes
    rows = df.height
    fig, ax = plt.subplots(figsize=(6.4, max(2.4, 0.32 * rows + 1.2)))
    notes = []
    if rows:
        ys = list(range(rows))[::-1]  # first row at the top
        labels = [f"{r['tree_id']} · {r['agent']}" for r in df.iter_rows(named=True)]
        ax.hlines(ys, df["min_steps"].to_list(), df["max_steps"].to_list(), linewidth=3, color="#9ab", label="range")
        ax.errorbar(
            df["mean_steps"].to_list(),
            ys,
            xerr=_yerr(df, "mean_steps", "mean_steps_ci_low", "mean_steps_ci_high"),
            fmt="o",
            color="#1f4e79",
            capsize=3,
            label="mean (95% interval)",
        )
        ax.scatter(df["lower_bound"].to_list(), ys, marker="|", s=200, color="green", label="3n")
        ax.scatter(df["upper_bound"].to_list(), ys, marker="|", s=200, color="red", label="n(2H+3)")
        ax.set_yticks(ys, labels, fontsize=7)
    else:
        _empty(ax, "no concluded episodes")
    for row in table.iter_rows(named=True):
        who = f"{row['tree_id']} · {row['agent']}"
        if row["below_lower_bound"]:
            notes.append(
                f"{who}: {row['below_lower_bound']} of {row['concluded']} concluded episode(s) below 3n "
                f"({row['below_lower_bound_why']})."
            )
        if row["above_upper_bound"]:
            notes.append(
                f"{who}: {row['above_upper_bound']} of {row['concluded']} concluded episode(s) above n(2H+3) "
                f"({row['above_upper_bound_why'] or 'no move outside the bounds recorded'})."
            )
        if row["cut_off"]:
            notes.append(f"{who}: {row['cut_off']} episode(s) cut off ({row['cut_off_by']}), not drawn.")
    ax.set(xlabel="steps")
    _legend(ax)
    return table, fig, notes


# The report's figures in the paper's order: (name, title, the function that draws it).
FIGURES: list[tuple[str, str, Callable[[Warehouse, Any], tuple[pl.DataFrame, Any, list[str]]]]] = [
    ("fig3a", "Figure 3a: conclusion score by randomness level", _draw_fig3a),
    ("fig3b", "Figure 3b: relative change in redo_study frequency", _draw_fig3b),
    ("fig3c", "Figure 3c: fake-result hit rate, false-alarm rate, decontextualized baseline", _draw_fig3c),
    ("fig4", "Figure 4: papers published before vs after each model's training cutoff", _draw_fig4),
    ("steps_bounds", "Steps against the bounds [3n, n(2H+3)] (Appendix B)", _draw_steps_bounds),
]


def figures(wh: Warehouse, out: Path) -> dict[str, dict]:
    """Draw each figure of FIGURES into ``out``; return {name: {"file", "title", "caption", "notes", "table"}}.
    Each drawing function returns the table printed under its figure, the figure and its notes."""
    plt = _plt()
    made: dict[str, dict] = {}
    for name, title, draw in FIGURES:
        df, fig, notes = draw(wh, plt)
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
        write_file(out / f"{name}.png", png.getvalue())
        plt.close(fig)
        made[name] = {
            "file": f"{name}.png",
            "title": title,
            "caption": CAPTIONS[name],
            "notes": notes,
            "table": table_html(df),
        }
    return made


def table_html(df: pl.DataFrame, limit: int = 200) -> str:
    """A table in a box of its own that scrolls sideways when it is wider than the page."""
    if not df.height:
        return "<p class='empty'>no rows</p>"
    if any(c.endswith("_ci_low") for c in df.columns):  # an analysis: estimates with their intervals
        shown, above, below = readable(df, width=None)
        lines = above + below
    else:
        shown, lines = df, table_notes(df, width=None)
    return _table(shown, lines, limit)


def tables_per_judge(df: pl.DataFrame, limit: int = 200) -> str:
    """:func:`table_html` once per judge, each under the judge's id, as the terminal prints them:
    two judges in one table left the judge in a column cut off at 1280 pixels."""
    if "judge_id" not in df.columns or df["judge_id"].n_unique() < 2:
        return table_html(df, limit)
    parts = []
    for judge in df["judge_id"].unique(maintain_order=True).to_list():
        part = df.filter(pl.col("judge_id") == judge).drop("judge_id")
        parts.append(f"<h3>judge {html.escape(str(judge))}</h3>" + table_html(part, limit))
    return "".join(parts)


def _table(df: pl.DataFrame, lines: list[str], limit: int) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = []
    for row in df.head(limit).iter_rows():
        cells = []
        for v in row:
            if isinstance(v, float):
                v = f"{v:.3f}"
            cells.append(f"<td>{html.escape('' if v is None else str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = f"<p class='empty'>{df.height - limit} more rows</p>" if df.height > limit else ""
    notes = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (
        f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}"
        + (f"<ul class='notes'>{notes}</ul>" if notes else "")
    )


_INLINE = [
    (re.compile(r"`([^`\n]+)`"), r"<code>\1</code>"),
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"<em>\1</em>"),
]


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _bold(text: str, mark: str, word_bounded: bool) -> str:
    """``mark``TEXT``mark`` as ``<strong>TEXT</strong>``: TEXT starts and ends with a non-space and
    holds no blank line (bold may run over a line break within a paragraph); with
    ``word_bounded`` (``__``) the marks may not touch a word. What the regex
    ``MARK(?=\\S)((?:(?!\\n\\n).)+?)(?<=\\S)MARK`` does, in linear time: the regex tried every opener
    against the rest of its paragraph, quadratic in unclosed openers (a 200 KB reply took minutes).
    Here each opener finds its closer by bisection among the closers, and an opener with none
    means no later opener of that paragraph has one either."""
    import bisect

    n, m = len(text), len(mark)
    found, k = [], text.find(mark)
    while k >= 0:  # every occurrence, overlapping ones too ("***")
        found.append(k)
        k = text.find(mark, k + 1)
    if len(found) < 2:
        return text
    closers = [
        j for j in found if not text[j - 1].isspace() and not (word_bounded and j + m < n and _word(text[j + m]))
    ]
    breaks, k = [], text.find("\n\n")
    while k >= 0:
        breaks.append(k)
        k = text.find("\n\n", k + 1)
    out, done, skip_to = [], 0, -1
    for i in found:
        if i < done or i < skip_to or i + m >= n or text[i + m].isspace():
            continue
        if word_bounded and i > 0 and _word(text[i - 1]):
            continue
        b = bisect.bisect_left(breaks, i + m)
        limit = breaks[b] if b < len(breaks) else n  # the closer must come before the paragraph's end
        c = bisect.bisect_left(closers, i + m + 1)
        if c < len(closers) and closers[c] <= limit:
            j = closers[c]
            out += [text[done:i], "<strong>", text[i + m : j], "</strong>"]
            done = j + m
        else:
            skip_to = limit  # no opener before the paragraph's end has a closer
    out.append(text[done:])
    return "".join(out)


def markdown_html(text: str) -> str:
    """A model's reply, which is often Markdown, as HTML: the text is escaped first, so nothing
    it contains can become markup or script, and then a small safe subset is rendered:
    headings, bullet and numbered lists, bold, italics and inline code. Anything else stays as
    written."""
    out: list[str] = []
    open_list: str | None = None
    escaped = _bold(_bold(html.escape(text or ""), "**", False), "__", True)  # over line breaks: the whole text
    for line in escaped.split("\n"):
        stripped = line.strip()
        bullet = re.match(r"^[-*+]\s+(.*)$", stripped)
        numbered = re.match(r"^(\d+)[.)]\s+(.*)$", stripped)
        kind = "ul" if bullet else "ol" if numbered else None
        if open_list and kind != open_list:
            out.append(f"</{open_list}>")
            open_list = None
        if kind and not open_list:
            out.append(f"<{kind}>")
            open_list = kind
        heading = re.match(r"^(#{1,6})\s+(.*)$", stripped)
        if bullet:
            out.append(f"<li>{_inline(bullet.group(1))}</li>")
        elif numbered:
            out.append(f"<li value='{int(numbered.group(1))}'>{_inline(numbered.group(2))}</li>")
        elif heading:
            out.append(f"<div class='md-h'>{_inline(heading.group(2))}</div>")
        else:
            out.append(_inline(line) + "<br>")
    if open_list:
        out.append(f"</{open_list}>")
    return "".join(out).removesuffix("<br>")


def _inline(text: str) -> str:
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return text


def episode_items(wh: Warehouse, episode_id: str, render_seconds: float | None = None) -> list[dict]:
    """The episode's dialogue and the engine's notes, in order, from the typed tables (the report's
    episode pages and the viewer's show the same items); ``step`` is set on the dialogue's turns,
    ``tag`` names what a note is about (match, locked, hint, draw, transition, decision, verdict,
    end), for the viewer's next-of-a-kind keys. ``render_seconds``: the time the texts' Markdown may
    take in all (the viewer's page has a deadline); the texts after it are shown as plain text,
    escaped, and say so."""
    rows = wh.con.execute(
        """
        SELECT global_position, 'env' AS kind,
               format('[{}] environment ({})', step, array_to_string(templates, ' + ')), text, step, NULL
            FROM ev_observation_emitted WHERE episode_id = $1
        UNION ALL SELECT global_position, 'agent', format('[{}] agent ({})', step, state), raw, step, NULL
            FROM ev_agent_replied WHERE episode_id = $1
        UNION ALL SELECT global_position, 'reasoning',
            format('[{}] its reasoning, apart from its answer ({} characters)', step, length(reasoning)),
            reasoning, NULL, 'reasoning'
            FROM ev_agent_replied WHERE episode_id = $1 AND reasoning IS NOT NULL
        UNION ALL SELECT global_position, 'note', NULL,
            CASE WHEN probability IS NULL
                 THEN format('best match {} cos {:.3f} vs tau {}: {}', best, best_cosine, tau,
                             CASE WHEN accepted THEN 'accepted' ELSE 'below tau' END)
                 ELSE format('best match {} text and hints {:.3f}, fitted p {:.3f} vs {}: {}', best, best_cosine,
                             probability, rule_threshold,
                             CASE WHEN accepted THEN 'accepted' ELSE 'below the threshold' END)
            END, NULL, 'match'
            FROM ev_match_scored WHERE episode_id = $1 AND best IS NOT NULL
        UNION ALL SELECT global_position, 'note', NULL,
            format('{} is locked: needs {}', subtopic_id, array_to_string(missing, ', ')), NULL, 'locked'
            FROM ev_dependency_blocked WHERE episode_id = $1
        UNION ALL SELECT global_position, 'note', NULL, format('hint level {}{} towards {}', level,
            CASE WHEN final THEN ' (final)' ELSE '' END, target), NULL, 'hint'
            FROM ev_hint_issued WHERE episode_id = $1
        UNION ALL SELECT global_position, CASE WHEN fake THEN 'fake' ELSE 'note' END, NULL,
            format('result {}: draw {:.3f} vs p {:.1f}: {}', result_id, draw, probability,
                   CASE WHEN fake THEN 'FAKE #' || fake_index ELSE 'true' END), NULL, 'draw'
            FROM ev_result_drawn WHERE episode_id = $1
        UNION ALL SELECT global_position, 'note', NULL,
            format('{} -> {}{}{}', from_state, to_state, CASE WHEN node IS NULL THEN '' ELSE ' ' || node END,
                   CASE WHEN forced THEN ' (forced: ' || coalesce(reason, '?') || ')' ELSE '' END), NULL, 'transition'
            FROM ev_transitioned WHERE episode_id = $1
        UNION ALL SELECT global_position, 'note', NULL,
            format('decision: {}{}', decision, CASE WHEN valid THEN '' ELSE ' (not a valid decision)' END), NULL,
            'decision'
            FROM ev_decision_parsed WHERE episode_id = $1
        UNION ALL SELECT global_position, 'fake', NULL, format('turn limit {} reached', max_turns), NULL, 'end'
            FROM ev_turn_limit_reached WHERE episode_id = $1
        UNION ALL SELECT global_position, 'verdict', NULL,
            format('{}: {} = {} ({})', judge_id, item_id, score, rationale), NULL, 'verdict'
            FROM ev_judge_verdict WHERE episode_id = $1
        UNION ALL SELECT global_position, 'fake', NULL, format('episode failed [{}]: {}', kind, error), NULL, 'end'
            FROM ev_episode_failed WHERE episode_id = $1
        UNION ALL SELECT global_position, 'fake', NULL,
            format('limit {} reached ({} of {}): the episode ends here', limit_name, used, threshold), NULL, 'end'
            FROM ev_limit_reached WHERE episode_id = $1
        ORDER BY global_position, kind = 'agent'""",
        [episode_id],
    ).fetchall()
    deadline = None if render_seconds is None else time.monotonic() + render_seconds
    return [
        {
            "kind": kind,
            "head": head,
            "text": text,
            "step": step,
            "tag": tag,
            "html": _rendered(text, deadline) if kind in ("agent", "env", "reasoning") else None,
        }
        for _, kind, head, text, step, tag in rows
    ]


PLAIN_NOTE = "<span class='empty'>(shown as plain text: the page's time for rendering ran out)</span><br>"


def _rendered(text: str, deadline: float | None) -> str:
    """``text`` as Markdown, or past ``deadline`` as escaped plain text with a note that says so."""
    if deadline is not None and time.monotonic() > deadline:
        return PLAIN_NOTE + html.escape(text or "").replace("\n", "<br>")
    return markdown_html(text)


def registry_table(wh: Warehouse) -> pl.DataFrame:
    """Table 3 as the warehouse holds it (shipped and --registry entries), with every agent of
    the episodes that has no entry listed as of unknown cutoff."""
    return wh.sql(
        """
        WITH models AS (
            SELECT model, string_agg(alias, ', ' ORDER BY alias) FILTER (WHERE alias <> lower(model)) AS aliases,
                   any_value(release) AS release, any_value(cutoff) AS cutoff, any_value(source) AS source,
                   any_value(registry) AS registry
            FROM model_registry GROUP BY model
        ), unknown AS (
            SELECT DISTINCT e.agent AS model FROM episodes e
            WHERE NOT EXISTS (SELECT 1 FROM model_registry m WHERE m.alias = lower(e.agent))
        )
        SELECT model, aliases, release, CAST(cutoff AS VARCHAR) AS cutoff, source, registry FROM models
        UNION ALL
        SELECT model, NULL, NULL, 'unknown', 'an agent of the episodes with no registry entry', NULL FROM unknown
        ORDER BY cutoff = 'unknown', model
        """
    )


def trees_table() -> pl.DataFrame:
    """Table 4: the IT-18 papers as the paper lists them beside the shipped trees: journal,
    subtopic counts (ours and the paper's), publication date or window, and DOI."""
    from inquitree.core.game import it18_registry, load_tree_file, publication_window, shipped_tree_paths

    trees = {}
    for path in shipped_tree_paths():
        t = load_tree_file(path)
        if t.paper.get("it18_id"):
            trees[t.paper["it18_id"]] = t
    rows = []
    for p in it18_registry():
        ours = trees.get(p["it18_id"])
        first, last = publication_window(ours.paper) if ours else (None, None)
        published = ours.paper.get("published") if ours else None
        if ours and not published:
            published = f"between {first or '?'} and {last or '?'}"
        rows.append(
            {
                "it18_id": p["it18_id"],
                "title": p["title"],
                "tree": ours.id if ours else None,
                "subtopics_ours": ours.n if ours else None,
                "subtopics_paper": p["subtopics"],
                "journal": ours.paper.get("journal") if ours else None,
                "journal_in_table_4": p["journal"],
                "published": published,
                "doi": ours.paper.get("doi") if ours else None,
            }
        )
    return pl.DataFrame(rows)


def comparison(wh: Warehouse) -> tuple[pl.DataFrame, list[dict]]:
    """``inquitree compare`` over every agent with a pair in a suite (the same query, the same
    pairing: queries/compare.sql, the ``pair_keys`` view): its table, and for each pair of agents,
    judge and level, the pairs of episodes its numbers were computed from."""
    agents = [
        r[0]
        for r in wh.con.execute(
            "SELECT DISTINCT agent FROM pair_keys WHERE in_suite AND status = 'done' ORDER BY agent"
        ).fetchall()
    ]
    if len(agents) < 2:
        return pl.DataFrame(), []
    df = wh.query("compare", {"agents": agents, "one_off": False}).filter(pl.col("paired_cells") > 0)  # pairs listed
    groups: dict[tuple, dict] = {}
    for row in df.iter_rows(named=True):
        key = (row["agent_a"], row["agent_b"], row["judge_id"], row["randomness"])
        group = groups.setdefault(key, {"a": key[0], "b": key[1], "judge": key[2], "level": key[3], "pairs": []})
        group["pairs"] = sorted(set(group["pairs"]) | set(row["pairs"] or ()))
    return df.drop(PAIR_COLUMNS), list(groups.values())


INTERVALS = (
    "Intervals are 95% intervals with the paper as the unit (docs/statistics.md; the module inquitree.stats): "
    "each row names its method, and a warning says wherever a number cannot be trusted."
)


def write_report(wh: Warehouse, out_dir: str | Path, max_episodes: int = 200, scope: str = "") -> Path:
    """The report in ``out_dir``; ``scope`` says which episodes it speaks about (Warehouse.scope)."""
    out = output_folder(out_dir)
    episodes_dir = inner_folder(out, "episodes")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True)
    figs = figures(wh, out)
    summary = wh.query("episode_summary")
    episodes = summary.unique("episode_id", keep="last", maintain_order=True).tail(max_episodes)
    bad = [e for e in episodes["episode_id"].to_list() if not is_episode_id(e)]
    if bad:  # written into the store by someone other than InquiTree (ids are checked where they enter)
        warn(
            f"inquitree: warning: {len(bad)} episode(s) with an id outside the grammar get no page: "
            + ", ".join(shown(e) for e in bad[:5])
        )
        episodes = episodes.filter(~pl.col("episode_id").is_in(bad))
    with OpenFolder(episodes_dir) as pages:  # a link put in its place meanwhile is never followed
        for row in episodes.iter_rows(named=True):
            scores = summary.filter(pl.col("episode_id") == row["episode_id"])
            page = env.get_template("episode.html.j2").render(
                ep=row, items=episode_items(wh, row["episode_id"]), scores=table_html(scores)
            )
            pages.write(f"{row['episode_id']}.html", page)
    total = wh.sql("SELECT count(*) AS n FROM episodes").item()
    compared, pairs = comparison(wh)
    index = env.get_template("index.html.j2").render(
        leaderboard=tables_per_judge(wh.query("table2_leaderboard")),
        intervals=INTERVALS,
        scope=scope,
        figures=figs,
        episodes=episodes.select(
            "episode_id", "tree_id", "agent", "randomness", "status", "steps", "coverage", "q_norm"
        ).iter_rows(named=True),
        shown=episodes.height,
        total=total,
        agreement=table_html(wh.query("judge_agreement")),
        judge_flags=table_html(wh.query("judge_flags")),
        comparison=table_html(compared) if compared.height else None,
        pairs=pairs,
        control=table_html(wh.query("control_accuracy")),
        costs=table_html(wh.query("costs").filter(pl.col("level") != "episode")),
    )
    write_file(out / "index.html", index)
    table_page = env.get_template("page.html.j2")
    write_file(
        out / "registry.html",
        table_page.render(
            title="Model registry (Table 3)",
            intro="Training cutoffs that Figure 4 splits papers by: the paper's Table 3 as shipped "
            "(trees/registry/models.json) and the entries of any --registry file, with the file each came from. "
            "Agents of the episodes that match no entry are listed as of unknown cutoff; Figure 4 does not split "
            "their papers.",
            table=table_html(registry_table(wh)),
        ),
    )
    write_file(
        out / "trees.html",
        table_page.render(
            title="IT-18 papers and their trees (Table 4)",
            intro="The paper's Table 4 beside the shipped trees: our subtopic count next to the paper's, the "
            "journal as the article appeared (and as Table 4 prints it), and the publication date as public "
            "records give it, to the day, month or year, or as a window where only that is known. Each tree's "
            "provenance lists the records.",
            table=table_html(trees_table()),
        ),
    )
    return out / "index.html"
