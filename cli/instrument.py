"""``inquitree instrument measure``: how well a matcher (an embedder with the paper's rule) or a
judge reads real agents, on the labelled sets InquiTree ships (docs/instrument.md). A lab that
brings its own embedder or judge model gets its error rates in one command, per state or split,
calibration and held-out, with intervals that resample trees."""

from __future__ import annotations

from typing import Any

import click

from inquitree.cli.common import (
    FiniteFloat,
    call_options,
    db_option,
    echo,
    judge_config,
    judge_options,
    match_rule_option,
    progress,
    progress_due,
)

THRESHOLD = FiniteFloat(0, 1, min_open=True)
PAPER_NAME, FITTED_NAME = "the paper's rule", "the fitted rule"


@click.group()
def instrument() -> None:
    """How well the matcher and the judge read real agents (docs/instrument.md)."""


@instrument.command()
@click.option("--embedder", "embedder_spec", help="Measure this embedder as the matcher: local | nomic | openai:MODEL")
@click.option("--embedder-base-url", default=None, help="OpenAI-compatible base URL for the embedder.")
@click.option("--tau", type=THRESHOLD, help="The Topic threshold (default: the embedder's, else chosen here).")
@click.option("--tau-study", type=THRESHOLD, help="The Subtopic threshold (default: as --tau).")
@match_rule_option(
    "--rule", "The match rule to measure: the paper's (one cosine against tau) or the one fitted for the embedder."
)
@click.option(
    "--judge",
    "judge_spec",
    help="Measure this judge instead: embedding[:FULL/PARTIAL] | openai:MODEL | rubric:MODEL | hybrid:MODEL",
)
@judge_options
@call_options
@click.option("--draws", type=click.IntRange(min=100), default=2000, show_default=True, help="Resamples of trees.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--record",
    "keep",
    is_flag=True,
    help="Keep the measurement in the lab's record ($INQUITREE_INSTRUMENT), which tables then state.",
)
@click.option(
    "--labels",
    "on_labels",
    is_flag=True,
    help="Measure the matcher and the judges on this store's own labels (inquitree label) instead of the shipped sets.",
)
@click.option("--suite", help="With --labels: only the labels of this campaign's samples.")
@click.option("--labeller", help="With --labels: whose answers (default: the labeller with the most).")
@db_option
def measure(
    embedder_spec,
    embedder_base_url,
    tau,
    tau_study,
    match_rule,
    judge_spec,
    draws,
    fmt,
    keep,
    on_labels,
    suite,
    labeller,
    db_url,
    **model_kw,
) -> None:
    """Error rates of a matcher (--embedder) or agreement of a judge (--judge) on the shipped sets,
    or, with --labels, of the matcher and judges that read this store's labelled episodes.

    With --judge, --embedder names the embedding judge's embedder (default: local). With --record,
    every table that shows episodes read by this instrument states the measurement beside them."""
    import json

    if on_labels:
        if embedder_spec or judge_spec or keep:
            raise click.UsageError(
                "--labels measures what read the labelled episodes: give it without --embedder, --judge and "
                "--record (tables state a campaign's own labels by themselves)"
            )
        from inquitree.core.instrument import measure_labels
        from inquitree.events import EventStore

        with EventStore(db_url, create=False) as store:
            found = measure_labels(store, suite, labeller, draws)
        if not found["answers"]:
            raise click.ClickException(
                f"no labels in this store{f' for suite {suite!r}' if suite else ''}: inquitree label moves|conclusions "
                "--suite NAME --sample N draws and labels a sample"
            )
        echo(json.dumps(found, indent=1) if fmt == "json" else _fitted(labels_table(found)))
        return
    if suite or labeller:
        raise click.UsageError("--suite and --labeller are for --labels")

    from inquitree.core.game import MatchRuleError
    from inquitree.core.instrument import measure_judge, measure_matcher
    from inquitree.core.players import make_embedder, make_judge

    if judge_spec:
        if tau is not None or tau_study is not None:
            raise click.UsageError("--tau and --tau-study are the matcher's: measure a judge without them")
        if match_rule != "paper":
            raise click.UsageError("--rule is the matcher's: measure a judge without it")
        embedder = make_embedder(embedder_spec or "local", base_url=embedder_base_url)
        judge = make_judge(judge_spec, embedder, judge_config(model_kw))
        due = progress_due()

        def said(n: int, total: int) -> None:
            if due(n == total):
                progress(f"judged {n}/{total} episodes of the set", done=n == total)

        found = measure_judge(judge, draws=draws, progress=said)
        echo(json.dumps(found, indent=1) if fmt == "json" else _fitted(judge_table(found)))
        _keep(found, keep)
        return
    if not embedder_spec:
        raise click.UsageError("name what to measure: --embedder SPEC (the matcher) or --judge SPEC")
    embedder = make_embedder(embedder_spec, base_url=embedder_base_url)
    if match_rule == "fitted" and (tau is not None or tau_study is not None):
        raise click.UsageError("--tau and --tau-study: the fitted rule decides by its own probability thresholds")
    try:
        found = measure_matcher(embedder, tau=tau, tau_study=tau_study, draws=draws, rule=match_rule)
    except MatchRuleError as exc:
        raise click.UsageError(str(exc)) from None
    echo(json.dumps(found, indent=1) if fmt == "json" else _fitted(matcher_table(found)))
    _keep(found, keep)


def _keep(found: dict[str, Any], keep: bool) -> None:
    if keep:
        from inquitree.core.instrument import record

        echo(f"kept in {record(found)}", err=True)


def _fitted(lines: list[str], width: int = 80) -> str:
    """The table's lines, each longer than ``width`` wrapped (the rows of numbers fit as they are)."""
    from inquitree.warehouse import wrapped

    return "\n".join(part for line in lines for part in (wrapped(line, width) if len(line) > width else [line]))


def _pct(value: float | None, interval: list[float] | None = None) -> str:
    if value is None:
        return "-"
    shown = f"{100 * value:.1f}%"
    return shown + (f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]" if interval else "")


def _counted(rate: float | None, n: int, of: int) -> str:
    from inquitree.core.instrument import FEW

    return f"{_pct(rate)} {n}/{of}" + ("*" if of < FEW else "")


def _span(interval: list[float] | None) -> str:
    return "-" if not interval else f"[{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def matcher_table(found: dict[str, Any]) -> list[str]:
    """The matcher's measurement as a person reads it (80 columns): per state and split, each rate
    with its counts (recognised and wrong of the intended moves, false of the actions that mean no
    candidate), and under it its 95% interval over trees."""
    from inquitree.core.instrument import FEW, GOAL

    fitted = found["rule"] != "paper"
    lines = [
        f"matcher: {FITTED_NAME if fitted else PAPER_NAME} with {found['embedder']}",
        (
            f"  probability thresholds: topic {found['tau']}, subtopic {found['tau_study']} (the rule's own)"
            if fitted
            else f"  tau {found['tau']}, tau_study {found['tau_study']} ({found['thresholds']})"
        ),
        f"set: {found['labels']}, {found['actions']} labelled actions of Qwen2.5-Coder-1.5B on 18 trees",
        "recognised and wrong: of the intended moves; false: of the actions meaning none",
        f"{'state':9}{'split':13}{'recognised':19}{'false':19}wrong",
    ]
    met, few = {}, False
    for state in ("topic", "subtopic"):
        for split in ("calibration", "held_out"):
            r = found[state][split]
            c, iv = r["counts"], r["intervals"]
            few = few or min(r["n_intended"], r["n_null"]) < FEW
            lines.append(
                f"{state:9}{split.replace('_', '-'):13}{_counted(r['recognised'], c['recognised'], r['n_intended']):19}"
                f"{_counted(r['false_match'], c['false_match'], r['n_null']):19}"
                f"{_counted(r['wrong_candidate'], c['wrong_candidate'], r['n_intended'])}"
            )
            lines.append(
                f"{'':22}{_span(iv['recognised']):19}{_span(iv['false_match']):19}{_span(iv['wrong_candidate'])}"
            )
        h = found[state]["held_out"]
        met[state] = (
            (h["recognised"] or 0) >= GOAL["recognised"]
            and (h["false_match"] or 0) <= GOAL["false_match"]
            and (h["wrong_candidate"] or 0) <= GOAL["wrong_candidate"]
            and min(h["n_intended"], h["n_null"]) >= FEW
        )
    lines += [
        f"under each row: its 95% interval over the split's {found['topic']['held_out']['intervals']['trees']} trees"
        + (f"; * fewer than {FEW} items: too few to read as a rate" if few else ""),
        (
            "the rule's thresholds were chosen on the calibration trees when it was fitted (studies/matching.py)"
            if fitted
            else f"thresholds the calibration trees choose: tau {found['chosen']['tau']}, "
            f"tau_study {found['chosen']['tau_study']}"
        ),
        "goal on held-out trees, per state: recognised >= 66.7%, false <= 5%, wrong <= 2%, "
        f"each of at least {FEW} items: "
        + ", ".join(f"{state} {'met' if ok else 'missed'}" for state, ok in met.items()),
    ]
    return lines


def judge_table(found: dict[str, Any]) -> list[str]:
    """The judge's measurement as a person reads it (80 columns)."""
    from inquitree.core.instrument import CATEGORIES

    lines = [
        f"judge: {found['judge']}",
        f"set: {found['labels']}, {found['items']} conclusion items of {found['episodes']} episodes, read by hand",
        f"{'split':13}{'items':>6}  {'agreement':>9}  {'kappa':22}{'failed':>6}",
    ]
    for split in ("calibration", "held_out"):
        r = found[split]
        iv = r["kappa_interval"]
        kappa = "-" if r["kappa"] is None else f"{r['kappa']:.2f}" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "")
        name = split.replace("_", "-")
        lines.append(f"{name:13}{r['items']:>6}  {_pct(r['agreement']):>9}  {kappa:22}{r['failed']:>6}")
    confusion = found["held_out"]["confusion"]
    lines.append("held-out confusion (rows: the reading; columns: the judge):")
    lines.append(f"  {'':10}" + "".join(f"{c:>10}" for c in CATEGORIES))
    for row in CATEGORIES:
        lines.append(f"  {row:10}" + "".join(f"{confusion[row][c]:>10}" for c in CATEGORIES))
    lines.append("kappa intervals: 95%, resampling trees; a failed verdict is counted apart, not as absent")
    return lines


def _rate_cell(block: dict[str, Any], key: str, of: str) -> str:
    c = block["counts"][key]
    n = block[of]
    if not n:
        return "-"
    from inquitree.core.instrument import FEW

    return f"{100 * c / n:.0f}% {c}/{n}" + ("*" if n < FEW else "")


def labels_table(found: dict[str, Any]) -> list[str]:
    """The instrument on a campaign's own labels, as a person reads it (80 columns)."""
    from inquitree.core.instrument import FEW

    m = found["matcher"]
    lines = [f"labels of {', '.join(found['suites'])}: {found['answers']} answers"]
    for pair in found["agreement"]:
        if pair["items"]:
            kappa = "-" if pair["kappa"] is None else f"{pair['kappa']:.2f}"
            lines.append(
                f"  {pair['labellers'][0]} and {pair['labellers'][1]}: {pair['items']} items both answered, "
                f"agreement {100 * pair['agreement']:.0f}%, kappa {kappa}"
            )
    if m["labelled"]:
        lines += [
            f"matcher, on {m['labelled']} labelled moves ({m['labeller']}):",
            "  recognised, wrong: of the intended moves; false: of the moves meaning none;",
            "  misread (a wrong or false match, or an intended move missed): of every move",
            f"  {'agent':13}{'state':9}{'recognised':13}{'false':12}{'wrong':10}{'misread'}",
        ]
        rows = [("(all)", st, b) for st, b in m["overall"].items()]
        rows += [(agent, st, b) for agent, by in m["agents"].items() for st, b in by.items()]
        for agent, state, b in rows:
            iv = b["intervals"].get("misread")
            span = f" [{100 * iv[0]:.0f}, {100 * iv[1]:.0f}]" if iv else ""
            lines.append(
                f"  {agent[:12]:13}{state:9}{_rate_cell(b, 'recognised', 'n_intended'):13}"
                f"{_rate_cell(b, 'false_match', 'n_null'):12}{_rate_cell(b, 'wrong_candidate', 'n_intended'):10}"
                f"{_rate_cell(b, 'misread', 'labelled')}{span}"
            )
    j = found["judges"]
    if j["labelled"]:
        lines.append(f"judges, on {j['labelled']} labelled conclusion items ({j['labeller']}):")
        lines.append(f"  {'agent':16}{'items':>6} {'agreement':>10}  {'kappa':22}{'failed':>6}")
        for judge_id, block in j["judge"].items():
            lines.append(f"  {judge_id}")
            for agent, b in [("(all)", block["overall"]), *block["agents"].items()]:
                iv = b["kappa_interval"]
                kappa = (
                    "-" if b["kappa"] is None else f"{b['kappa']:.2f}" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "")
                )
                lines.append(f"  {agent[:15]:16}{b['items']:>6} {_pct(b['agreement']):>10}  {kappa:22}{b['failed']:>6}")
    lines.append(f"intervals: 95%, resampling papers; * fewer than {FEW} items: too few to read as a rate")
    return lines
