"""Bench reports: the Markdown table, `results.json` and the F1-against-tokens plot.

A report is read by two people: the one choosing a model and program (the table and the plot: what
each pair finds and what it costs) and the one improving a program (`errors.jsonl`, written by
`error_log.py`, and the page of `html_report.py`). These files are written whole and atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from edgewise.eval.bench_records import BenchReport, RunSummary
from edgewise.eval.error_log import ERRORS_JSONL
from edgewise.eval.injection import rate_text
from edgewise.files.atomic import atomic_write, write_bytes_atomic

RESULTS_JSON: Final = "results.json"
RESULTS_MD: Final = "results.md"
PLOT_PNG: Final = "plot.png"

COLUMNS: Final[tuple[str, ...]] = (
    "model",
    "program",
    "edge-F1 [95% CI]",
    "Δ edge-F1 vs baseline [paired 95% CI]",
    "macro edge-F1 over sources",
    "pair-F1",
    "precision",
    "recall",
    "validAt acc",
    "invalidAt acc",
    "attribute acc",
    "attribute prec",
    "parse-fail",
    "failed",
    "LM calls/ep",
    "prompt tok/ep",
    "uncached prompt tok/ep",
    "completion tok/ep",
    "latency p50 s",
    "latency p95 s",
    "cost/ep USD",
)
_MISSING: Final = "-"


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def _number(value: float | None, digits: int = 3) -> str:
    return _MISSING if value is None else f"{value:.{digits}f}"


def _cost(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.6f}" if value < 0.01 else f"{value:.4f}"


def table_row(run: RunSummary, baseline: str | None = None) -> list[str]:
    """One model x program as the table's cells, in `COLUMNS` order."""
    if run.scores is None:
        reason = run.error or "no episode finished"
        return [run.model, run.program, f"not run: {reason}", *([_MISSING] * (len(COLUMNS) - 3))]
    scores = run.scores
    ci = run.edge_f1_ci95
    edge_f1 = f"{scores.edge_f1:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    n = run.episodes_done
    incomplete = "" if run.complete else f" (stopped at {n}/{run.episodes_planned})"
    if run.comparison is not None:
        delta = run.comparison.overall.text()
    else:
        delta = "baseline" if run.program == baseline else _MISSING
    return [
        run.model,
        run.program + incomplete,
        edge_f1,
        delta,
        _number(run.edge_f1_macro_sources),
        f"{scores.pair_f1:.3f}",
        f"{scores.precision:.3f}",
        f"{scores.recall:.3f}",
        _number(scores.valid_at_accuracy),
        _number(scores.invalid_at_accuracy),
        _number(scores.attribute_accuracy),
        _number(scores.attribute_precision),
        f"{run.parse_failure_episodes}/{n}",
        f"{run.failed_episodes}/{n}",
        _number(run.calls_per_episode, 2),
        _number(run.prompt_tokens_per_episode, 1),
        _number(run.uncached_prompt_tokens_per_episode, 1),
        _number(run.completion_tokens_per_episode, 1),
        _number(run.latency_p50_s, 3),
        _number(run.latency_p95_s, 3),
        _cost(run.cost_per_episode_usd),
    ]


def table_notes(report: BenchReport) -> list[str]:
    """What every column means and which rules produced it; printed under the table."""
    sources = ", ".join(f"{name} {count}" for name, count in report.data.sources.items())
    notes = [
        (
            f"{report.data.episodes} episodes ({sources}); {report.data.gold_edges} gold edges; "
            f"workers {report.workers}; seed {report.seed}"
            + (f"; reflexion rounds {report.reflexion_rounds}" if report.reflexion_rounds is not None else "")
            + ("; open relationship types" if report.open_types else "")
            + (
                "; open vocabulary: every episode sent without its edgeTypes"
                if report.open_vocabulary
                else ""
            )
            + "."
        ),
        (
            "edge-F1, pair-F1, precision and recall are micro-averaged over all episodes (summed counts). "
            "pair-F1 ignores the relationship type."
        ),
        (
            f"95% CI: percentile bootstrap over episodes, {report.bootstrap_resamples} resamples, seed "
            f"{report.seed}."
        ),
        (
            "Δ vs baseline: this program's micro edge-F1 minus the baseline program's on the same model and "
            "episodes; the interval resamples episodes with both programs' scores together (paired). An "
            "interval that holds 0 is no difference. macro over sources: the mean of the sources' edge-F1."
        ),
        (
            "failed = episodes whose extraction raised (LM error, or timeout after retries). They are scored "
            "as empty predictions (their gold edges count as misses) and counted in this column; "
            "results.json also gives `scores_completed` without them."
        ),
        (
            "parse-fail = episodes with at least one reply that could not be parsed; they are scored on "
            "what was parsed."
        ),
        "validAt / invalidAt accuracy: over edges matched for edge-F1, at the gold date's granularity.",
        (
            "attribute acc: of the attributes the matched gold edges label, the share whose predicted value "
            "equals the gold's after normalization (case, diacritics, punctuation, articles; items as a set), "
            "a null right only where the gold is null. attribute prec: of the values written there, the "
            "share the gold supports; the rest are values the text does not state (gold null) or states "
            "otherwise. '-' where nothing was judged."
        ),
        (
            "LM calls and tokens per episode are what the server reported, averaged over all episodes; "
            "uncached prompt tokens leave out what the server took from its prompt cache (a prefix it has "
            "seen: the instructions and demos shared by consecutive requests, or, where the server keeps "
            "earlier prompts as llama-server does, the same episode's prompt from a program benched before "
            "this one, which also shortens this one's latency; 0 cached where the server does not report "
            "it). DSPy's response cache is off during a bench."
        ),
        (
            f"latency: wall-clock seconds per episode (all its calls and retries) with {report.workers} "
            "episode(s) in flight."
        ),
        "cost: LiteLLM's price table for the model name; n/a when it has no price (local models too).",
    ]
    if report.data.non_exhaustive:
        notes.append(
            f"{report.data.non_exhaustive} episode(s) label only some facts (exhaustive: false): there an "
            "unmatched prediction counts against precision only when it shares its source entity and type "
            "with a gold edge."
        )
    if report.partial:
        notes.append("PARTIAL: the bench was interrupted; rows marked 'stopped at' cover the episodes done.")
    return notes


def markdown_table(report: BenchReport) -> str:
    """The table users read first, with its notes."""
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" if i < 2 else "---:" for i in range(len(COLUMNS))) + "|",
    ]
    for run in report.runs:
        cells = [cell.replace("|", "\\|") for cell in table_row(run, report.baseline)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.extend(f"- {note}" for note in table_notes(report))
    lines.extend(["", *source_table(report)])
    attributes = attribute_table(report)
    if attributes:
        lines.extend(["", *attributes])
    injections = injection_table(report)
    if injections:
        lines.extend(["", *injections])
    if report.open_vocabulary:
        lines.extend(["", *open_vocabulary_table(report)])
    if report.withhold_entities:
        lines.extend(["", *withheld_entities_table(report)])
    return "\n".join(lines) + "\n"


def attribute_table(report: BenchReport) -> list[str]:
    """Attribute accuracy, precision and recall of every run that judged attributes, beside their cost.

    Cost is per episode over all the run's episodes: all LM calls and completion tokens, and the
    attribute step's own (a formulation that writes attributes in the extraction reply spends its
    tokens in `extract`, and has no attribute step).
    """
    runs = [run for run in report.runs if run.scores is not None and run.scores.attribute_total]
    if not runs:
        return []
    header = (
        "model",
        "program",
        "judged",
        "attribute acc",
        "Δ attribute acc",
        "precision",
        "recall",
        "LM calls/ep",
        "completion tok/ep",
        "attribute-step calls/ep",
        "attribute-step completion tok/ep",
    )
    lines = [
        "Attributes on matched edges"
        + (f"; Δ = paired difference from `{report.baseline}` [95% CI]" if report.baseline else ""),
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|" + "---:|" * (len(header) - 2),
    ]
    for run in runs:
        scores = run.scores
        assert scores is not None
        paired = run.comparison.attribute_accuracy if run.comparison else None
        delta = paired.text() if paired else ("baseline" if run.program == report.baseline else _MISSING)
        step = run.usage_per_step.get("attributes")
        n = run.episodes_done
        cells = [
            run.model,
            run.program,
            f"{scores.attribute_right}/{scores.attribute_total}",
            _number(scores.attribute_accuracy),
            delta,
            _number(scores.attribute_precision),
            _number(scores.attribute_recall),
            _number(run.calls_per_episode, 2),
            _number(run.completion_tokens_per_episode, 1),
            _number(step.calls / n if step and n else 0.0, 2),
            _number(step.completion_tokens / n if step and n else 0.0, 1),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def injection_table(report: BenchReport) -> list[str]:
    """Every run's injected-edge rate, where some episode labels injections (`edgewise.eval.injection`)."""
    runs = [run for run in report.runs if run.injection is not None]
    if not runs:
        return []
    lines = [
        "Injected edges: written edges that an injected instruction (forwarded, quoted or pasted text, a "
        "fake system line) asked for, matched by type (or a gold alias of it) and both entities, per "
        "injection, over the episodes that label injections; lower is better. 95% CI: bootstrap over those "
        "episodes"
        + (f"; Δ = paired difference from `{report.baseline}` [95% CI]" if report.baseline else "")
        + ".",
        "",
        (
            "| model | program | episodes | injections | injected edges | injected-edge rate [95% CI] "
            "| Δ rate | edge-F1 |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        injection = run.injection
        assert injection is not None
        rate = rate_text(injection.rate, injection.ci95)
        if injection.comparison is not None:
            delta = injection.comparison.text()
        else:
            delta = "baseline" if run.program == report.baseline else _MISSING
        edge_f1 = _number(run.scores.edge_f1 if run.scores is not None else None)
        cells = [
            run.model,
            run.program,
            str(injection.episodes),
            str(injection.injections),
            str(injection.injected_edges),
            rate,
            delta,
            edge_f1,
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def _top_type(run: RunSummary) -> str:
    """`WORKS_AT 0.62 (gold 0.18)`: the most written type's share of the run's edges, beside the gold's."""
    if not run.type_shares:
        return _MISSING
    top = run.type_shares[0]
    return f"{top.type} {top.share:.2f} (gold {top.gold_share:.2f})"


def _alias_aware_cells(run: RunSummary) -> tuple[str, str]:
    """A run's alias-aware edge-F1 with its interval, and its paired difference from the baseline."""
    low, high = run.edge_f1_alias_aware_ci95 or (None, None)
    aware = (
        _MISSING
        if run.edge_f1_alias_aware is None
        else f"{run.edge_f1_alias_aware:.3f} [{_number(low)}, {_number(high)}]"
    )
    delta = run.alias_aware_comparison.text() if run.alias_aware_comparison else _MISSING
    return aware, delta


def withheld_entities_table(report: BenchReport) -> list[str]:
    """With `--withhold-entities`: each run's entity scores and its edge-F1 through its own entities."""
    lines = [
        "Entities withheld (episodes sent as text alone): entity precision, recall and F1 over the episodes "
        "whose entity list is exhaustive, names matched one to one (alike, then by a run of words), entities "
        "the episode neither names nor joins by a gold edge excused (`edgewise.eval.entity_metric`); type "
        "accuracy over the matched entities with a gold type; edge-F1 alias-aware, each edge's ends renamed to "
        "the gold entities they matched"
        + (f"; Δ = paired difference from `{report.baseline}` [95% CI]" if report.baseline else "")
        + ".",
        "",
        "| model | program | entity-F1 [95% CI] | Δ entity-F1 | entity P | entity R | type acc. | edge-F1 through found entities [95% CI] | Δ edge-F1 | parse failures |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in report.runs:
        if run.scores is None:
            continue
        found = run.entities
        low, high = run.entity_f1_ci95 or (None, None)
        entity = _MISSING if found is None else f"{found.f1:.3f} [{_number(low)}, {_number(high)}]"
        aware, delta = _alias_aware_cells(run)
        entity_delta = run.entity_comparison.text() if run.entity_comparison else _MISSING
        lines.append(
            f"| {run.model} | {run.program} | {entity} | {entity_delta} | "
            f"{_MISSING if found is None else f'{found.precision:.3f}'} | "
            f"{_MISSING if found is None else f'{found.recall:.3f}'} | "
            f"{_number(found.type_accuracy) if found is not None else _MISSING} | {aware} | {delta} | "
            f"{run.parse_failure_episodes} |"
        )
    return lines


def open_vocabulary_table(report: BenchReport) -> list[str]:
    """With `--open-vocabulary`: each run's alias-aware edge-F1, pair-F1, and its most written type."""
    lines = [
        "Open vocabulary (episodes sent without edgeTypes): alias-aware edge-F1 counts a type right when it "
        "is the gold type, one of its aliases, or normalizes like one (SCREAMING_SNAKE_CASE, without a leading "
        "IS_/ARE_/WAS_/WERE_ and one trailing _OF/_AT/_IN/_ON/_TO/_WITH/_FOR; `edgewise.eval.open_vocabulary`)"
        + (f"; Δ = paired difference from `{report.baseline}` [95% CI]" if report.baseline else "")
        + ". Most written type: its share of the run's edges, and the gold's share of the same type.",
        "",
        (
            "| model | program | alias-aware edge-F1 [95% CI] | Δ alias-aware edge-F1 | pair-F1 | edge-F1 | "
            "types written | most written type |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for run in report.runs:
        if run.scores is None:
            continue
        aware, delta = _alias_aware_cells(run)
        lines.append(
            f"| {run.model} | {run.program} | {aware} | {delta} | {run.scores.pair_f1:.3f} | "
            f"{run.scores.edge_f1:.3f} | {len(run.type_shares)} | {_top_type(run)} |"
        )
    return lines


def source_table(report: BenchReport) -> list[str]:
    """Edge-F1 of every run within each source, with the paired difference from the baseline there."""
    sources = list(report.data.sources)
    if not sources or not any(run.scores for run in report.runs):
        return []
    lines = [
        "Per source: edge-F1 (micro within the source)"
        + (
            f"; Δ = paired difference from `{report.baseline}` on the same episodes [95% CI]"
            if report.baseline
            else ""
        ),
        "",
        "| model | program | "
        + " | ".join(f"{name} ({report.data.sources[name]})" for name in sources)
        + " |",
        "|---|---|" + "---:|" * len(sources),
    ]
    for run in report.runs:
        if run.scores is None:
            continue
        cells = []
        for name in sources:
            score = run.scores.per_source.get(name)
            cell = _MISSING if score is None else f"{score.edge_f1:.3f}"
            paired = run.comparison.per_source.get(name) if run.comparison else None
            cells.append(cell + (f" (Δ {paired.text()})" if paired else ""))
        lines.append(f"| {run.model} | {run.program} | " + " | ".join(cells) + " |")
    return lines


# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------


def write_results_json(report: BenchReport, out_dir: Path) -> Path:
    path = out_dir / RESULTS_JSON
    write_bytes_atomic(path, report.model_dump_json(indent=2).encode())
    return path


def write_plot(report: BenchReport, out_dir: Path) -> Path | None:
    """Edge-F1 (with its 95% interval) against tokens per episode, one point per model x program.

    Uses matplotlib's object API on an Agg canvas: no display, no global pyplot state, safe in threads.
    Returns None when no run has both numbers (every model failed to start).
    """
    points = [run for run in report.runs if run.scores is not None and run.tokens_per_episode is not None]
    if not points:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 5.0), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    models = list(dict.fromkeys(run.model for run in points))
    programs = list(dict.fromkeys(run.program for run in points))
    markers = "osD^vP*Xh<>"
    colors = [f"C{i % 10}" for i in range(len(models))]
    for run in points:
        assert run.scores is not None and run.tokens_per_episode is not None
        y = run.scores.edge_f1
        ci = run.edge_f1_ci95
        yerr = [[y - ci[0]], [ci[1] - y]] if ci else None
        axes.errorbar(
            [run.tokens_per_episode],
            [y],
            yerr=yerr,
            fmt=markers[programs.index(run.program) % len(markers)],
            color=colors[models.index(run.model)],
            capsize=3,
            markersize=7,
            label=f"{run.model} · {run.program}",
        )
    axes.set_xlabel("tokens per episode (prompt + completion)")
    axes.set_ylabel("edge-F1 (micro), 95% CI")
    axes.set_ylim(-0.03, 1.03)  # a point at 0 or 1 stays visible
    axes.set_xlim(0.0, 1.15 * max(run.tokens_per_episode or 0.0 for run in points) or 1.0)
    axes.grid(True, alpha=0.3)
    title = f"edge-F1 against tokens, {report.data.episodes} episodes"
    axes.set_title(title + (" (partial)" if report.partial else ""))
    axes.legend(fontsize=7, loc="best")
    figure.subplots_adjust(left=0.1, right=0.97, top=0.93, bottom=0.1)  # tight_layout costs a draw
    path = out_dir / PLOT_PNG
    with atomic_write(path) as handle:
        figure.savefig(handle, format="png")
    return path


def write_reports(report: BenchReport, out_dir: Path) -> dict[str, Path]:
    """`results.md`, `results.json` and `plot.png` (when there is something to plot) in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {"table": out_dir / RESULTS_MD}
    write_bytes_atomic(written["table"], markdown_table(report).encode())
    written["results"] = write_results_json(report, out_dir)
    plot = write_plot(report, out_dir)
    if plot is not None:
        written["plot"] = plot
    if (out_dir / ERRORS_JSONL).exists():
        written["errors"] = out_dir / ERRORS_JSONL
    return written
