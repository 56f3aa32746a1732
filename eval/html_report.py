# Over 400 lines: one page, rendered section by section in the order it shows them.
"""`results.html`: a bench as one page to read, the results table first and then every episode's text with
its gold edges beside each program's edges, each edge marked with the metric's verdict.

The page is one self-contained file: inline CSS, one small inline script for the filters (by source,
by program, by verdict, and the episodes where program A beats program B), the plot as a data URI,
and a Content-Security-Policy that allows nothing else, so it opens offline and fetches nothing.
Everything that comes from an episode or a model is HTML-escaped, and the script reads only data
attributes written here, so an episode holding `<script>` shows that text and runs nothing. Building
it is pure functions from the bench's own records; `write_html` reads them from a bench folder.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, NamedTuple

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import normalize_name
from edgewise.domain.types import Edge, Entity
from edgewise.eval.bench_records import BenchReport
from edgewise.eval.dates import format_date
from edgewise.eval.episode_log import (
    EPISODES_JSONL,
    PREDICTIONS_JSONL,
    EpisodePrediction,
    JudgedEdge,
    read_episodes,
    read_predictions,
)
from edgewise.eval.report import COLUMNS, PLOT_PNG, table_notes, table_row
from edgewise.files.atomic import write_bytes_atomic

RESULTS_HTML: Final = "results.html"

ENTITY_COLORS: Final[int] = 8
"""Entity marks cycle through this many colors (classes e0..e7), in the order the episode lists them."""

_F1_EPSILON: Final[float] = 1e-9
"""Per-episode F1s closer than this are a tie for "A beats B" (the same ratio computed twice)."""

VERDICT_LABELS: Final[dict[str, str]] = {
    "matched": "matched",
    "wrongDate": "wrong date",
    "missed": "missed",
    "spurious": "spurious",
    "reversed": "reversed",
    "mistyped": "mistyped",
    "ignored": "not judged",
    "failed": "failed episode",
    "wrongAttribute": "wrong attribute",
}
"""The verdicts the page marks and filters by, as `errors.jsonl` names them, with their display words.
`wrongAttribute` marks a matched edge with an attribute that is not the gold's, beside its verdict."""


class Run(NamedTuple):
    """One model x program as the page shows it: `key` names it in data attributes (r0, r1, ...)."""

    key: str
    model: str
    program: str
    label: str


class Mention(NamedTuple):
    """An entity name found in the text: `text[start:end]`, of the episode's entity number `entity`."""

    start: int
    end: int
    entity: int


# --------------------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------------------


def _e(value: object) -> str:
    """Escape text for an element or a quoted attribute value."""
    return html.escape(str(value), quote=True)


def find_mentions(text: str, names: Sequence[str]) -> list[Mention]:
    """Where the entity names occur in `text`: case-insensitive, longest name first, never overlapping.

    A name matches only as a whole word where it begins or ends with a letter or digit ("Ana" is not
    found in "Banana"). Returned in text order.
    """
    occupied = [False] * len(text)
    found: list[Mention] = []
    order = sorted(range(len(names)), key=lambda index: (-len(names[index]), index))
    for index in order:
        name = names[index].strip()
        if not name:
            continue
        head = r"(?<!\w)" if name[0].isalnum() or name[0] == "_" else ""
        tail = r"(?!\w)" if name[-1].isalnum() or name[-1] == "_" else ""
        for match in re.finditer(head + re.escape(name) + tail, text, flags=re.IGNORECASE):
            start, end = match.span()
            if not any(occupied[start:end]):
                occupied[start:end] = [True] * (end - start)
                found.append(Mention(start, end, index))
    return sorted(found)


def highlight_mentions(text: str, entities: Sequence[Entity]) -> str:
    """`text` as escaped HTML with each entity mention in `<mark class="ent eN">`, N its color."""
    pieces: list[str] = []
    position = 0
    for mention in find_mentions(text, [entity.name for entity in entities]):
        entity = entities[mention.entity]
        title = entity.name + (f" ({entity.type})" if entity.type else "")
        pieces.append(_e(text[position : mention.start]))
        pieces.append(
            f'<mark class="ent e{mention.entity % ENTITY_COLORS}" title="{_e(title)}">'
            f"{_e(text[mention.start : mention.end])}</mark>"
        )
        position = mention.end
    pieces.append(_e(text[position:]))
    return "".join(pieces)


def _date(value: datetime | None) -> str:
    """A predicted date as the reader needs it: the day when it is midnight, else the instant."""
    if value is None:
        return "null"
    if (value.hour, value.minute, value.second) == (0, 0, 0):
        return format_date(value, "day")
    return format_date(value, None)


def _dates(edge: Edge, wrong: Iterable[str] = ()) -> str:
    if isinstance(edge, GoldEdge):
        valid = format_date(edge.valid_at, edge.valid_at_granularity)
        invalid = format_date(edge.invalid_at, edge.invalid_at_granularity)
    else:
        valid, invalid = _date(edge.valid_at), _date(edge.invalid_at)
    bad = set(wrong)
    parts = [
        f'<span class="{"bad" if name in bad else "date"}">{name} {_e(value)}</span>'
        for name, value in (("validAt", valid), ("invalidAt", invalid))
        if value != "null" or name in bad
    ]
    return f'<span class="dates">{" ".join(parts)}</span>' if parts else ""


def _name(name: str, colors: Mapping[str, int]) -> str:
    color = colors.get(normalize_name(name))
    kind = f"ent e{color % ENTITY_COLORS}" if color is not None else "ent outside"
    return f'<span class="{kind}">{_e(name)}</span>'


def _attributes(edge: Edge, wrong: Sequence[str]) -> str:
    """The edge's attributes (a gold's labeled null as null), each wrong one marked, written or not."""
    values = dict(edge.attributes) | {name: edge.attributes.get(name) for name in wrong}
    return "".join(
        f'<span class="{"attr bad" if name in wrong else "attr"}">{_e(name)}='
        f"{_e('null' if value is None else value)}</span>"
        for name, value in values.items()
    )


def _edge_body(
    edge: Edge, colors: Mapping[str, int], wrong: Iterable[str] = (), wrong_attributes: Sequence[str] = ()
) -> str:
    fact = f'<q class="fact">{_e(edge.fact)}</q>' if edge.fact else ""
    attributes = _attributes(edge, wrong_attributes)
    return (
        f'{_name(edge.source_entity_name, colors)} <span class="rel">{_e(edge.relationship_type)}</span> '
        f"{_name(edge.target_entity_name, colors)} {_dates(edge, wrong)}{attributes}{fact}"
    )


def _predicted_item(edge: JudgedEdge, colors: Mapping[str, int]) -> str:
    label = "duplicate" if edge.duplicate else VERDICT_LABELS[edge.verdict]
    if edge.wrong_attributes:
        label += f", {VERDICT_LABELS['wrongAttribute']}"
    if edge.gold is not None:
        label += f" · g{edge.gold + 1}"
    marks = f"v-{edge.verdict}" + (" v-wrongAttribute" if edge.wrong_attributes else "")
    return (
        f'<li class="edge pred {marks}"><span class="verdict">{_e(label)}</span> '
        f"{_edge_body(edge, colors, edge.wrong_dates, edge.wrong_attributes)}</li>"
    )


def _gold_item(
    number: int, edge: GoldEdge, verdicts: Sequence[tuple[Run, str]], colors: Mapping[str, int]
) -> str:
    chips = "".join(
        f'<span class="chip v-{verdict}" data-run="{run.key}" title="{_e(run.label)}: '
        f'{VERDICT_LABELS[verdict]}">{_e(run.label)}</span>'
        for run, verdict in verdicts
    )
    aliases = f' <span class="aliases">or {_e(", ".join(edge.aliases))}</span>' if edge.aliases else ""
    return (
        f'<li class="edge gold"><span class="gid">g{number}</span> {_edge_body(edge, colors)}{aliases}'
        f'<span class="chips">{chips}</span></li>'
    )


def _tally(prediction: EpisodePrediction) -> str:
    counts: dict[str, int] = {}
    for edge in prediction.edges:
        counts[edge.verdict] = counts.get(edge.verdict, 0) + 1
        if edge.wrong_attributes:
            counts["wrongAttribute"] = counts.get("wrongAttribute", 0) + 1
    for verdict in prediction.gold:
        if verdict == "missed":
            counts["missed"] = counts.get("missed", 0) + 1
    return ", ".join(f"{count} {VERDICT_LABELS[name]}" for name, count in counts.items()) or "no edges"


def _run_column(run: Run, prediction: EpisodePrediction | None, colors: Mapping[str, int]) -> str:
    head = f'<div class="col" data-run="{run.key}"><h4>{_e(run.label)}'
    if prediction is None:
        return head + '</h4><p class="none">not run on this episode</p></div>'
    parts = [
        head + f" <small>F1 {prediction.f1:.2f} · {_e(_tally(prediction))}</small></h4>",
    ]
    if prediction.status == "failed":
        parts.append(f'<p class="failed">failed: {_e(prediction.error or "no message")}</p>')
    if prediction.parse_failures:
        parts.append(f'<p class="failed">{prediction.parse_failures} reply(ies) could not be parsed</p>')
    if prediction.edges:
        parts.append("<ol>" + "".join(_predicted_item(edge, colors) for edge in prediction.edges) + "</ol>")
    if prediction.warnings:
        items = "".join(
            f"<li><code>{_e(warning.code)}</code> {_e(warning.message)}</li>"
            for warning in prediction.warnings
        )
        parts.append(
            f"<details><summary>{len(prediction.warnings)} warning(s)</summary><ul>{items}</ul></details>"
        )
    return "".join(parts) + "</div>"


def episode_tokens(
    runs: Sequence[Run], predictions: Mapping[str, EpisodePrediction]
) -> tuple[list[str], list[str]]:
    """The filter tokens of one episode: `run:verdict` (and `*:verdict`) for the verdict filter, and
    `a>b` for every pair of runs where run a's episode F1 is above run b's."""
    verdicts: dict[str, None] = {}
    for run in runs:
        prediction = predictions.get(run.key)
        if prediction is None:
            continue
        names = [edge.verdict for edge in prediction.edges] + [v for v in prediction.gold if v == "missed"]
        names += ["wrongAttribute" for edge in prediction.edges if edge.wrong_attributes]
        if prediction.status == "failed":
            names.append("failed")
        for name in names:
            verdicts[f"{run.key}:{name}"] = None
            verdicts[f"*:{name}"] = None
    beats = [
        f"{a.key}>{b.key}"
        for a in runs
        for b in runs
        if a.key in predictions
        and b.key in predictions
        and predictions[a.key].f1 > predictions[b.key].f1 + _F1_EPSILON
    ]
    return list(verdicts), beats


def episode_section(
    number: int, episode: LabeledEpisode, runs: Sequence[Run], predictions: Mapping[str, EpisodePrediction]
) -> str:
    """One episode: its text with entity mentions marked, the gold edges, and a column per run."""
    colors = {normalize_name(entity.name): index for index, entity in enumerate(episode.entities)}
    verdicts, beats = episode_tokens(runs, predictions)
    done = " ".join(run.key for run in runs if run.key in predictions)
    badges = "".join(
        f'<span class="f1" data-run="{run.key}">{_e(run.label)} {predictions[run.key].f1:.2f}</span>'
        for run in runs
        if run.key in predictions
    )
    tags = (
        "" if episode.exhaustive else '<span class="tag" title="labels only some facts">partial labels</span>'
    )
    previous = ""
    if episode.previous_episodes:
        items = "".join(
            f"<p class='text'>{highlight_mentions(text, episode.entities)}</p>"
            for text in episode.previous_episodes
        )
        previous = f"<details><summary>{len(episode.previous_episodes)} previous episode(s)</summary>{items}</details>"
    gold_items = "".join(
        _gold_item(
            g + 1,
            edge,
            [(run, predictions[run.key].gold[g]) for run in runs if _has_gold(predictions.get(run.key), g)],
            colors,
        )
        for g, edge in enumerate(episode.edges)
    )
    gold = (
        f'<div class="col gold"><h4>gold <small>{len(episode.edges)} edge(s)</small></h4>'
        + (f"<ol>{gold_items}</ol>" if gold_items else '<p class="none">no edges: the text states none</p>')
        + "</div>"
    )
    columns = "".join(_run_column(run, predictions.get(run.key), colors) for run in runs)
    return (
        f'<section class="episode" id="ep-{number}" data-source="{_e(episode.source)}" '
        f'data-v="{" ".join(verdicts)}" data-runs="{done}" data-beats="{" ".join(beats)}">'
        f'<h3><a href="#ep-{number}">{_e(episode.id)}</a> <span class="source">{_e(episode.source)}</span>'
        f"{tags}{badges}</h3>"
        f'<p class="text">{highlight_mentions(episode.episode_content, episode.entities)}</p>{previous}'
        f'<div class="cols">{gold}{columns}</div></section>'
    )


def _has_gold(prediction: EpisodePrediction | None, index: int) -> bool:
    return prediction is not None and index < len(prediction.gold)


def results_section(report: BenchReport, plot_png: bytes | None) -> str:
    """The results table (the rows of `results.md`), its notes, and the plot."""
    head = "".join(f"<th>{_e(column)}</th>" for column in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in table_row(run, report.baseline)) + "</tr>"
        for run in report.runs
    )
    notes = "".join(f"<li>{_e(note)}</li>" for note in table_notes(report))
    plot = ""
    if plot_png is not None:
        data = base64.b64encode(plot_png).decode("ascii")
        plot = (
            f'<img class="plot" alt="edge-F1 against tokens per episode" src="data:image/png;base64,{data}">'
        )
    return (
        f'<section id="results"><h2>Results</h2><div class="scroll"><table id="results-table"><thead><tr>{head}'
        f'</tr></thead><tbody>{rows}</tbody></table></div><ul class="notes">{notes}</ul>{plot}</section>'
    )


def _options(pairs: Iterable[tuple[str, str]], first: str) -> str:
    return f'<option value="">{_e(first)}</option>' + "".join(
        f'<option value="{_e(value)}">{_e(text)}</option>' for value, text in pairs
    )


def filters_section(report: BenchReport, runs: Sequence[Run]) -> str:
    """The filter controls; the script reads their values and the episodes' data attributes."""
    sources = [(name, f"{name} ({count})") for name, count in report.data.sources.items()]
    run_options = [(run.key, run.label) for run in runs]
    verdicts = list(VERDICT_LABELS.items())
    legend = "".join(
        f'<span class="chip v-{name}">{_e(text)}</span>' for name, text in VERDICT_LABELS.items()
    )
    return (
        '<nav id="filters"><label>source <select id="f-source">'
        + _options(sources, "all")
        + '</select></label> <label>program <select id="f-run">'
        + _options(run_options, "all")
        + '</select></label> <label>verdict <select id="f-verdict">'
        + _options(verdicts, "any")
        + '</select></label> <label>episodes where <select id="f-a">'
        + _options(run_options, "—")
        + '</select></label> <label>beats <select id="f-b">'
        + _options(run_options, "—")
        + f'</select></label> <output id="f-count"></output><div class="legend">{legend}</div></nav>'
    )


def page_runs(report: BenchReport) -> list[Run]:
    """The report's model x program runs in table order, labelled by program alone when one model ran."""
    single_model = len({run.model for run in report.runs}) == 1
    return [
        Run(
            f"r{index}",
            run.model,
            run.program,
            run.program if single_model else f"{run.model} · {run.program}",
        )
        for index, run in enumerate(report.runs)
    ]


# --------------------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------------------

_CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1500px;padding:0 16px 40px;color:#1b1b1b}
h1{font-size:22px;margin:16px 0 4px}h2{font-size:18px}.meta{color:#555;margin:0}
.partial{background:#fff3cd;padding:6px 10px;border-radius:4px}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}
th:nth-child(-n+2),td:nth-child(-n+2){text-align:left}thead th{background:#f2f2f2}
.notes{font-size:12px;color:#444}.plot{max-width:640px;width:100%;border:1px solid #ddd}
#filters{position:sticky;top:0;background:#fafafa;border:1px solid #ddd;border-radius:4px;padding:8px;
z-index:2;margin:12px 0}#filters label{margin-right:10px;white-space:nowrap}#f-count{font-weight:600}
.legend{margin-top:6px}
.episode{border-top:2px solid #ddd;padding:6px 0 10px;content-visibility:auto;contain-intrinsic-size:auto 420px;
scroll-margin-top:120px}
.episode h3{font-size:15px;margin:6px 0}.episode h3 a{color:inherit}
.source,.tag,.f1{font-size:11px;font-weight:400;background:#eee;border-radius:3px;padding:1px 5px;margin-left:6px}
.tag{background:#fde2c8}.text{white-space:pre-wrap;background:#fcfcf7;border:1px solid #eee;padding:6px 8px;
margin:4px 0}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(230px,1fr));gap:10px;margin-top:6px}
.col{border:1px solid #e3e3e3;border-radius:4px;padding:4px 8px}.col.gold{background:#f7fbff}
.col h4{margin:2px 0 4px;font-size:13px}.col small{font-weight:400;color:#555}
ol{margin:0;padding-left:20px}.edge{margin:3px 0;padding:2px 4px;border-left:4px solid transparent}
.rel{font-family:ui-monospace,monospace;font-size:12px}.fact{display:block;color:#444;font-style:italic}
.fact::before,.fact::after{content:""}.dates{font-size:11px;color:#555;margin-left:4px}
.bad{color:#b00020;font-weight:600}.attr{font-size:11px;background:#f1f1f1;border-radius:3px;padding:0 4px;
margin-left:4px}.gid{font-weight:600;color:#555}.aliases{font-size:11px;color:#555}
.verdict{font-size:11px;font-weight:600;text-transform:uppercase;margin-right:4px}
.chips{display:block}.chip{display:inline-block;font-size:11px;border-radius:3px;padding:0 5px;margin:1px 3px 1px 0;
border:1px solid rgba(0,0,0,.15)}
.failed{color:#b00020}.none{color:#777;font-style:italic}
mark.ent,span.ent{border-radius:3px;padding:0 2px}span.ent{font-weight:600}span.ent.outside{color:#b00020;
text-decoration:underline dotted}
.e0{background:#ffe08a}.e1{background:#b9e4ff}.e2{background:#c8f0c0}.e3{background:#f9c8e6}
.e4{background:#dccbff}.e5{background:#ffd0b0}.e6{background:#c0f0ec}.e7{background:#e6e6a8}
.v-matched{border-color:#2e7d32}.chip.v-matched{background:#d8f0d9}.v-matched .verdict{color:#2e7d32}
.v-wrongDate{border-color:#c77700}.chip.v-wrongDate{background:#ffe7c2}.v-wrongDate .verdict{color:#c77700}
.v-missed{border-color:#b00020}.chip.v-missed{background:#f8d0d6}
.v-spurious{border-color:#b00020}.chip.v-spurious{background:#f8d0d6}.v-spurious .verdict{color:#b00020}
.v-reversed{border-color:#7b1fa2}.chip.v-reversed{background:#ead4f3}.v-reversed .verdict{color:#7b1fa2}
.v-mistyped{border-color:#5d4037}.chip.v-mistyped{background:#e7dcd7}.v-mistyped .verdict{color:#5d4037}
.v-ignored{border-color:#999}.chip.v-ignored{background:#eee}.v-ignored .verdict{color:#777}
.chip.v-failed{background:#ffd6d6}
.v-wrongAttribute{border-color:#00838f}.chip.v-wrongAttribute{background:#cdeff2}
"""

_SCRIPT: Final = """(()=>{const $=i=>document.getElementById(i),E=[...document.querySelectorAll('section.episode')],
F=['f-source','f-run','f-verdict','f-a','f-b'].map($),L=i=>$('f-a').querySelector('option[value="'+i+'"]').text;
function apply(){const[s,r,v,a,b]=F.map(f=>f.value),p=a&&b&&a!==b;let n=0,w=0,l=0,t=0;
document.body.dataset.run=r;document.body.dataset.verdict=v;
for(const e of E){const d=e.dataset;let ok=(!s||d.source===s)&&(!v||d.v.split(' ').includes((r||'*')+':'+v));
if(ok&&p){const x=d.beats.split(' '),k=d.runs.split(' ');if(k.includes(a)&&k.includes(b)){t++;
if(x.includes(a+'>'+b))w++;else if(x.includes(b+'>'+a))l++;}ok=x.includes(a+'>'+b);}
e.hidden=!ok;if(ok)n++;}
$('f-count').textContent=n+' of '+E.length+' episodes'+(p?' · '+L(a)+' beats '+L(b)+' on '+w+', loses on '+l+
', ties on '+(t-w-l):'');}
F.forEach(f=>f.addEventListener('change',apply));apply();document.body.dataset.ready='1';})();"""


def _filter_css(runs: Sequence[Run]) -> str:
    """Rules that hide the other runs' columns and chips when one program is chosen, and dim the edges
    that lack the chosen verdict: the script only sets two attributes on <body>."""
    hide = "".join(
        f'body[data-run="{run.key}"] [data-run]:not([data-run="{run.key}"]){{display:none}}' for run in runs
    )
    dim = "".join(
        f'body[data-verdict="{name}"] li.pred:not(.v-{name}),body[data-verdict="{name}"] .chips .chip:not(.v-{name})'
        "{opacity:.3}"
        for name in VERDICT_LABELS
    )
    return hide + dim


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render_page(
    report: BenchReport,
    episodes: Sequence[LabeledEpisode] | None,
    predictions: Sequence[EpisodePrediction],
    plot_png: bytes | None,
) -> str:
    """The whole page. `episodes` None means the folder has no per-episode files (table and plot only).

    Predictions of a model x program that is not in `report.runs` are left out: the page shows what
    `results.json` reports.
    """
    runs = page_runs(report)
    key_of = {(run.model, run.program): run.key for run in runs}
    by_episode: dict[str, dict[str, EpisodePrediction]] = {}
    for prediction in predictions:
        key = key_of.get((prediction.model, prediction.program))
        if key is not None:
            by_episode.setdefault(prediction.id, {})[key] = prediction
    style = _CSS + _filter_css(runs)
    csp = (
        f"default-src 'none'; img-src data:; style-src 'sha256-{_sha256(style)}'; "
        f"script-src 'sha256-{_sha256(_SCRIPT)}'"
    )
    sources = ", ".join(f"{name} {count}" for name, count in report.data.sources.items())
    meta = (
        f"{_e(report.created_at)} · {report.data.episodes} episodes ({_e(sources)}) · "
        f"{report.data.gold_edges} gold edges · edgewise {_e(report.versions.get('edgewise', '?'))}"
    )
    partial = (
        '<p class="partial">PARTIAL: the bench was interrupted or is still running; the page shows the '
        "finished model x program runs.</p>"
        if report.partial
        else ""
    )
    if episodes is None:
        body = (
            f'<p class="none">This folder has no {EPISODES_JSONL} and {PREDICTIONS_JSONL} (a bench by an '
            "older edgewise), so the page shows the table only. Run the bench again to read its episodes.</p>"
        )
    else:
        body = (
            filters_section(report, runs)
            + '<main id="episodes">'
            + "".join(
                episode_section(number, episode, runs, by_episode.get(episode.id, {}))
                for number, episode in enumerate(episodes, start=1)
            )
            + "</main>"
        )
    title = f"edgewise bench · {report.data.episodes} episodes · {len(runs)} runs"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{_e(title)}</title><style>{style}</style></head><body>"
        f'<header><h1>edgewise bench</h1><p class="meta">{meta}</p>{partial}</header>'
        f"{results_section(report, plot_png)}{body}<script>{_SCRIPT}</script></body></html>\n"
    )


def write_html(report: BenchReport, out_dir: Path, *, plot: bool, output: Path | None = None) -> Path:
    """Write `results.html` (or `output`) from `report` and the per-episode files of the bench folder.

    `plot` embeds the folder's `plot.png` (pass False when it may be stale, mid-bench). Written
    atomically, like the other reports; a lone surrogate from a model is written as a `\\ud800`-style
    escape rather than failing the page.
    """
    has_episodes = (out_dir / EPISODES_JSONL).is_file()
    episodes = read_episodes(out_dir) if has_episodes else None
    predictions = (
        read_predictions(out_dir) if has_episodes and (out_dir / PREDICTIONS_JSONL).is_file() else []
    )
    plot_path = out_dir / PLOT_PNG
    plot_png = plot_path.read_bytes() if plot and plot_path.is_file() else None
    page = render_page(report, episodes, predictions, plot_png)
    path = output if output is not None else out_dir / RESULTS_HTML
    write_bytes_atomic(path, page.encode("utf-8", "backslashreplace"))
    return path
