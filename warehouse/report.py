"""``inquitree report``: an HTML report over the warehouse.

The leaderboard (Table 2), every figure of the paper as a PNG (Fig. 3a-c,
Fig. 4, steps against the bounds), the tables behind them, and one page per
episode: its dialogue, hints, fake draws and verdicts (an episode viewer).
Every number comes from ``queries/*.sql``; the figures are drawn from the same
DataFrames.
"""

from __future__ import annotations

import html
from pathlib import Path

import jinja2
import polars as pl

from inquitree.warehouse.sync import Warehouse

TEMPLATES = Path(__file__).resolve().parent / "report_templates"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no data yet: {what}", ha="center", va="center", transform=ax.transAxes, color="#777")
    ax.set_xticks([])
    ax.set_yticks([])


def _lines(df: pl.DataFrame, x: str, y: str, by: str, ax, what: str) -> None:
    data = df.drop_nulls(y) if df.height else df
    if not data.height:
        return _empty(ax, what)
    for key in sorted(data[by].unique().to_list(), key=str):
        part = data.filter(pl.col(by) == key).sort(x)
        ax.plot(part[x].to_list(), part[y].to_list(), marker="o", label=str(key))
    ax.legend(fontsize=7)


def figures(wh: Warehouse, out: Path) -> dict[str, dict]:
    """Draw each figure; return {name: {"file", "title", "table"}}."""
    plt = _plt()
    made: dict[str, dict] = {}

    def save(name: str, title: str, df: pl.DataFrame, fig) -> None:
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
        plt.close(fig)
        made[name] = {"file": f"{name}.png", "title": title, "table": table_html(df)}

    df = wh.query("fig3a_score_by_randomness")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    _lines(
        df.with_columns(label=pl.col("agent") + " / " + pl.col("judge_id").str.slice(0, 24)),
        "randomness",
        "conclusion_score",
        "label",
        ax,
        "no scored episodes",
    )
    ax.set(xlabel="randomness level a (fake with p = 10a%)", ylabel="conclusion score (q_norm)")
    save("fig3a", "Figure 3a: conclusion score by randomness level", df, fig)

    df = wh.query("fig3b_redo_frequency")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    _lines(
        df.filter(pl.col("randomness") > 0),
        "randomness",
        "relative_change_pct",
        "agent",
        ax,
        "needs episodes at level 0 and above 0 with redo_study at level 0",
    )
    ax.set(xlabel="randomness level a", ylabel="redo_study frequency, % change vs a = 0")
    save("fig3b", "Figure 3b: relative change in redo_study frequency", df, fig)

    df = wh.query("fig3c_fake_hit_rate")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    hit = df.filter(pl.col("randomness") > 0)
    _lines(hit, "randomness", "hit_rate", "agent", ax, "no fake results observed")
    if hit.height:
        for row in hit.unique("agent").iter_rows(named=True):
            if row["control_fake_detection"] is not None:
                ax.axhline(
                    row["control_fake_detection"], linestyle="--", linewidth=1, label=f"{row['agent']} decontextualized"
                )
        far = hit.drop_nulls("false_alarm_rate")
        for key in sorted(far["agent"].unique().to_list()):
            part = far.filter(pl.col("agent") == key).sort("randomness")
            ax.plot(
                part["randomness"].to_list(),
                part["false_alarm_rate"].to_list(),
                linestyle=":",
                marker="x",
                label=f"{key} false alarms",
            )
        ax.legend(fontsize=7)
    ax.set(xlabel="randomness level a", ylabel="rate", ylim=(-0.02, 1.02))
    save("fig3c", "Figure 3c: fake-result hit rate, false-alarm rate, decontextualized baseline", df, fig)

    df = wh.query("fig4_cutoff")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if df.height:
        agents = sorted(df["agent"].unique().to_list())
        for i, split in enumerate(["pre-cutoff", "post-cutoff"]):
            vals = [
                df.filter((pl.col("agent") == a) & (pl.col("split") == split))["conclusion_score"].mean() or 0
                for a in agents
            ]
            ax.bar([k + 0.4 * i for k in range(len(agents))], vals, width=0.4, label=split)
        ax.set_xticks([k + 0.2 for k in range(len(agents))], agents, rotation=20, fontsize=8)
        ax.legend(fontsize=7)
    else:
        _empty(ax, "needs dated trees and agents in the model registry")
    ax.set(ylabel="conclusion score (q_norm)")
    save("fig4", "Figure 4: papers published before vs after each model's training cutoff", df, fig)

    df = wh.query("steps_bounds")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if df.height:
        labels = [f"{r['tree_id']}\n{r['agent']}" for r in df.iter_rows(named=True)]
        xs = list(range(df.height))
        ax.vlines(xs, df["min_steps"].to_list(), df["max_steps"].to_list(), linewidth=3, label="min-max steps")
        ax.scatter(xs, df["mean_steps"].to_list(), zorder=3, label="mean steps")
        ax.scatter(xs, df["lower_bound"].to_list(), marker="_", s=300, color="green", label="3n")
        ax.scatter(xs, df["upper_bound"].to_list(), marker="_", s=300, color="red", label="n(2H+3)")
        ax.set_xticks(xs, labels, fontsize=6)
        ax.legend(fontsize=7)
    else:
        _empty(ax, "no finished episodes")
    ax.set(ylabel="steps")
    save("steps_bounds", "Steps against the bounds [3n, n(2H+3)] (Appendix B)", df, fig)
    return made


def table_html(df: pl.DataFrame, limit: int = 200) -> str:
    if not df.height:
        return "<p class='empty'>no rows</p>"
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
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def episode_items(wh: Warehouse, episode_id: str) -> list[dict]:
    """The episode's dialogue and the engine's notes, in order, from the typed tables."""
    rows = wh.con.execute(
        """
        SELECT global_position, 'env' AS kind,
               format('[{}] environment ({})', step, array_to_string(templates, ' + ')), text
            FROM ev_observation_emitted WHERE episode_id = $1
        UNION ALL SELECT global_position, 'agent', format('[{}] agent ({})', step, state), raw
            FROM ev_agent_replied WHERE episode_id = $1
        UNION ALL SELECT global_position, 'note', NULL,
            format('best match {} cos {:.3f} vs tau {}: {}', best, best_cosine, tau,
                   CASE WHEN accepted THEN 'accepted' ELSE 'below tau' END)
            FROM ev_match_scored WHERE episode_id = $1 AND best IS NOT NULL
        UNION ALL SELECT global_position, 'note', NULL,
            format('{} is locked: needs {}', subtopic_id, array_to_string(missing, ', '))
            FROM ev_dependency_blocked WHERE episode_id = $1
        UNION ALL SELECT global_position, 'note', NULL, format('hint level {}{} towards {}', level,
            CASE WHEN final THEN ' (final)' ELSE '' END, target)
            FROM ev_hint_issued WHERE episode_id = $1
        UNION ALL SELECT global_position, CASE WHEN fake THEN 'fake' ELSE 'note' END, NULL,
            format('result {}: draw {:.3f} vs p {:.1f}: {}', result_id, draw, probability,
                   CASE WHEN fake THEN 'FAKE #' || fake_index ELSE 'true' END)
            FROM ev_result_drawn WHERE episode_id = $1
        UNION ALL SELECT global_position, 'fake', NULL, format('turn limit {} reached', max_turns)
            FROM ev_turn_limit_reached WHERE episode_id = $1
        UNION ALL SELECT global_position, 'verdict', NULL,
            format('{}: {} = {} ({})', judge_id, item_id, score, rationale)
            FROM ev_judge_verdict WHERE episode_id = $1
        UNION ALL SELECT global_position, 'fake', NULL, format('episode failed [{}]: {}', kind, error)
            FROM ev_episode_failed WHERE episode_id = $1
        UNION ALL SELECT global_position, 'fake', NULL,
            format('limit {} reached ({} of {}): the episode ends here', limit_name, used, threshold)
            FROM ev_limit_reached WHERE episode_id = $1
        ORDER BY 1""",
        [episode_id],
    ).fetchall()
    return [{"kind": kind, "head": head, "text": text} for _, kind, head, text in rows]


def write_report(wh: Warehouse, out_dir: str | Path, max_episodes: int = 200) -> Path:
    out = Path(out_dir)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True)
    figs = figures(wh, out)
    summary = wh.query("episode_summary")
    episodes = summary.unique("episode_id", keep="last", maintain_order=True).tail(max_episodes)
    for row in episodes.iter_rows(named=True):
        scores = summary.filter(pl.col("episode_id") == row["episode_id"])
        page = env.get_template("episode.html.j2").render(
            ep=row, items=episode_items(wh, row["episode_id"]), scores=table_html(scores)
        )
        (out / "episodes" / f"{row['episode_id']}.html").write_text(page, encoding="utf-8")
    total = wh.sql("SELECT count(*) AS n FROM episodes").item()
    index = env.get_template("index.html.j2").render(
        leaderboard=table_html(wh.query("table2_leaderboard")),
        figures=figs,
        episodes=episodes.select(
            "episode_id", "tree_id", "agent", "randomness", "status", "steps", "coverage", "q_norm"
        ).iter_rows(named=True),
        shown=episodes.height,
        total=total,
        agreement=table_html(wh.query("judge_agreement")),
        control=table_html(wh.query("control_accuracy")),
        costs=table_html(wh.query("costs").filter(pl.col("level") != "episode")),
    )
    (out / "index.html").write_text(index, encoding="utf-8")
    return out / "index.html"
