"""results.html and the per-episode files behind it: verdicts per edge, entity marks, escaping, the
`edgewise report` command, and `edgewise bench` against the mock server writing the page.

The verdicts are checked against the bench fixture's hand-counted mistakes (tests/eval/test_bench.py) and,
for any input, against the metric's own counts. The page is parsed as HTML here; tests/
test_html_report_browser.py opens it in a real browser.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedLM, edge, edges_reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mock_openai import MockOpenAIServer
from test_bench import FIXTURE, REPLIES, load_fixture, respond
from test_metric import episode, episodes, gold, pred, pred_edges

from edgewise.cli import build_parser, main
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Entity
from edgewise.eval import BenchInterrupted, BenchReport, run_bench, score_episode
from edgewise.eval.episode_log import EpisodePrediction, JudgedEdge, judge_edges, read_predictions
from edgewise.eval.error_log import read_errors
from edgewise.eval.html_report import (
    RESULTS_HTML,
    Run,
    episode_section,
    episode_tokens,
    find_mentions,
    highlight_mentions,
    page_runs,
)
from edgewise.programs.names import resolve_program
from edgewise.runtime.jsonl import InputError
from edgewise.runtime.lm import LMConfig

Responder = Callable[[list[dict[str, Any]], dict[str, Any]], str]

XSS = "<script>alert(1)</script>"


def factory_for(responder: Responder) -> Any:
    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        yield ScriptedLM(responder, model=config.model)

    return factory


def bench_folder(
    out: Path,
    episodes: list[LabeledEpisode],
    responder: Responder,
    models: tuple[str, ...] = ("fake/a",),
    programs: tuple[str, ...] = ("seed", "default"),
    program_names: tuple[str, ...] | None = None,
) -> BenchReport:
    """Bench `episodes` with a scripted LM into `out`, as `edgewise bench` does."""
    names = program_names or programs
    return run_bench(
        [LMConfig(model=model) for model in models],
        {name: resolve_program(spec) for name, spec in zip(names, programs, strict=True)},
        episodes,
        workers=1,
        seed=0,
        out_dir=out,
        progress=False,
        lm_factory=factory_for(responder),
    )


def fixture_responder(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    return respond(messages, kwargs)


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text inside each `<p class="text">`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self._in_text = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "p" and dict(attrs).get("class") == "text":
            self._in_text = 1
            self.texts.append("")
        elif self._in_text:
            self._in_text += 1

    def handle_endtag(self, tag: str) -> None:
        if self._in_text:
            self._in_text -= 1

    def handle_data(self, data: str) -> None:
        if self._in_text:
            self.texts[-1] += data


def parse(page: str) -> Tags:
    parser = Tags()
    parser.feed(page)
    parser.close()
    return parser


PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "p", "section",
    "div", "table", "thead", "tbody", "tr", "th", "td", "ul", "ol", "li", "img", "nav", "label", "select",
    "option", "output", "main", "a", "span", "mark", "details", "summary", "small", "q", "code", "script",
}  # fmt: skip
"""The only elements the page builder writes; anything else in a page came from its data."""


# ------------------------------------------------------------------------------------------ verdicts


@pytest.fixture(scope="module")
def fixture_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchReport, Path]:
    out = tmp_path_factory.mktemp("report")
    return bench_folder(out, load_fixture(), fixture_responder), out


def test_predictions_jsonl_marks_every_edge_with_the_hand_counted_verdict(
    fixture_bench: tuple[BenchReport, Path],
) -> None:
    _, out = fixture_bench
    lines = read_predictions(out)
    assert [(line.program, line.id) for line in lines] == [
        (program, episode_id)
        for program in ("seed", "default")
        for episode_id in ("a-1", "a-2", "b-1", "b-2")
    ]
    # Entities given: no line carries an `entities` key (only a program that found them writes one).
    assert not any(
        "entities" in json.loads(text) for text in (out / "predictions.jsonl").read_text().splitlines()
    )
    by_id = {line.id: line for line in lines if line.program == "seed"}
    assert [e.verdict for e in by_id["a-1"].edges] == ["matched", "matched"] and by_id["a-1"].gold == [
        "matched",
        "matched",
    ]
    a2 = by_id["a-2"]  # Beta FOUNDED Bob (reversed), Cara MARRIED_TO Bob (symmetric), Cara WORKS_AT Beta
    assert [(e.verdict, e.gold) for e in a2.edges] == [("reversed", 0), ("matched", None), ("spurious", None)]
    assert a2.gold == ["reversed", "matched"]
    b1 = by_id["b-1"]  # MANAGES with invalidAt 2019 (gold 2020), OWNS for FOUNDED
    assert [(e.verdict, e.gold, e.wrong_dates) for e in b1.edges] == [
        ("wrongDate", 0, ["invalidAt"]),
        ("mistyped", 1, []),
    ]
    assert b1.gold == ["wrongDate", "mistyped"]
    b2 = by_id["b-2"]
    assert b2.status == "failed" and "provider down" in (b2.error or "") and b2.edges == []
    assert b2.gold == ["missed"]
    assert (a2.f1, a2.tp, a2.fp, a2.fn) == (pytest.approx(0.4), 1, 2, 1)


def test_predictions_and_errors_jsonl_name_the_same_mistakes(fixture_bench: tuple[BenchReport, Path]) -> None:
    _, out = fixture_bench
    predictions = {(p.program, p.id): p for p in read_predictions(out)}
    errors = read_errors(out / "errors.jsonl")
    assert errors, "the fixture has mistakes"
    for record in errors:
        line = predictions[(record["program"], record["id"])]
        edges = [e.to_json_dict() for e in line.edges]
        judged = {kind: [e for e, j in zip(edges, line.edges, strict=True) if j.verdict == kind] for kind in
                  ("spurious", "reversed", "mistyped")}  # fmt: skip
        assert [s["predicted"]["fact"] for s in record["spurious"]] == [e["fact"] for e in judged["spurious"]]
        assert [r["predicted"] for r in record["reversed"]] == [_edge_fields(e) for e in judged["reversed"]]
        assert [m["predicted"] for m in record["mistyped"]] == [_edge_fields(e) for e in judged["mistyped"]]
        assert len(record["missed"]) == line.gold.count("missed")
        assert len(record["wrongDates"]) == sum(len(e.wrong_dates) for e in line.edges)


def _edge_fields(judged: dict[str, Any]) -> dict[str, Any]:
    return {
        key: judged[key]
        for key in judged
        if key not in {"verdict", "gold", "duplicate", "wrongDates", "wrongAttributes"}
    }


def test_judge_edges_marks_duplicates_and_what_a_partial_label_cannot_judge() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme")], exhaustive=False)
    ep.entities.append(Entity(name="Bob"))
    preds = [
        pred("Alice", "WORKS_AT", "Acme"),
        pred("Alice", "WORKS_AT", "Acme"),  # the same edge again: a duplicate
        pred("Bob", "KNOWS", "Alice"),  # another source and type: not judged on a partial label
    ]
    judged, gold_verdicts = judge_edges(ep.edges, preds, score_episode(ep, preds))
    assert [(e.verdict, e.duplicate) for e in judged] == [
        ("matched", False),
        ("spurious", True),
        ("ignored", False),
    ]
    assert gold_verdicts == ["matched"]


def test_judge_edges_finds_equal_copies_when_the_objects_differ() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme"), gold("Bob", "KNOWS", "Acme")])
    preds = [pred("Acme", "WORKS_AT", "Alice")]
    score = score_episode(ep, preds)
    copies = [p.model_copy() for p in preds]  # same values, other objects: found by equality
    judged, gold_verdicts = judge_edges(ep.edges, copies, score)
    assert [(e.verdict, e.gold) for e in judged] == [("reversed", 0)]
    assert gold_verdicts == ["reversed", "missed"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ep=episodes, preds=st.lists(pred_edges, max_size=6))
def test_verdicts_restate_the_metric_counts_for_any_input(ep: LabeledEpisode, preds: list[Any]) -> None:
    score = score_episode(ep, preds)
    judged, gold_verdicts = judge_edges(ep.edges, preds, score)
    verdicts = [e.verdict for e in judged]
    assert len(judged) == len(preds)
    assert sum(v in {"matched", "wrongDate"} for v in verdicts) == score.tp
    assert sum(v in {"matched", "wrongDate"} for v in gold_verdicts) == score.tp
    for kind, records in (
        ("spurious", score.spurious),
        ("reversed", score.reversed),
        ("mistyped", score.mistyped),
    ):
        assert verdicts.count(kind) == len(records)
    assert verdicts.count("ignored") == len(score.ignored)
    assert gold_verdicts.count("missed") == len(score.missed)
    assert gold_verdicts.count("reversed") == len(score.reversed)
    assert gold_verdicts.count("mistyped") == len(score.mistyped)
    assert sum(len(e.wrong_dates) for e in judged) == len(score.wrong_dates)
    # the predictions marked matched are a matching by themselves, of the gold edges marked found
    found = [p for p, v in zip(preds, verdicts, strict=True) if v in {"matched", "wrongDate"}]
    found_gold = [g for g, v in zip(ep.edges, gold_verdicts, strict=True) if v in {"matched", "wrongDate"}]
    alone = score_episode(ep.model_copy(update={"edges": found_gold}), found)
    assert alone.tp == len(found) == len(found_gold)
    for e in judged:  # a reference points at a gold edge the verdict is about
        if e.verdict in {"reversed", "mistyped", "wrongDate"}:
            assert e.gold is not None and gold_verdicts[e.gold] == e.verdict


# ------------------------------------------------------------------------------------------ mentions


def test_mentions_are_case_insensitive_longest_first_and_never_overlap() -> None:
    text = "New York Times reporters met in new york. York is small; Yorkshire is not York."
    names = ["York", "New York", "New York Times"]
    spans = [(text[m.start : m.end], names[m.entity]) for m in find_mentions(text, names)]
    assert spans == [
        ("New York Times", "New York Times"),
        ("new york", "New York"),
        ("York", "York"),
        ("York", "York"),  # "Yorkshire" is not a mention: names match as whole words
    ]


def test_highlight_escapes_the_text_around_and_inside_the_marks() -> None:
    entities = [Entity(name="<b>Ana</b>", type='"x"'), Entity(name="Acme & Co")]
    marked = highlight_mentions(f"{XSS} <b>ana</b> joined Acme & Co.", entities)
    assert marked == (
        "&lt;script&gt;alert(1)&lt;/script&gt; "
        '<mark class="ent e0" title="&lt;b&gt;Ana&lt;/b&gt; (&quot;x&quot;)">&lt;b&gt;ana&lt;/b&gt;</mark> joined '
        '<mark class="ent e1" title="Acme &amp; Co">Acme &amp; Co</mark>.'
    )


# ------------------------------------------------------------------------------------------ the page


def test_the_page_has_the_table_every_episode_and_the_plot(fixture_bench: tuple[BenchReport, Path]) -> None:
    report, out = fixture_bench
    page = (out / RESULTS_HTML).read_text(encoding="utf-8")
    tags = parse(page)
    rows = [attrs for tag, attrs in tags.tags if tag == "tr"]
    assert len(rows) == 1 + len(report.runs)  # header + one row per model x program
    sections = [attrs for tag, attrs in tags.tags if tag == "section" and attrs.get("class") == "episode"]
    assert [s["data-source"] for s in sections] == ["alpha", "alpha", "beta", "beta"]
    assert tags.texts[0] == "Ana has worked at Acme since 2021. Ana lives in Oslo."
    assert page.count('<mark class="ent e0" title="Ana">Ana</mark>') == 2
    (plot,) = [attrs for tag, attrs in tags.tags if tag == "img"]
    assert (plot["src"] or "").startswith("data:image/png;base64,iVBOR")
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert sum(tag == "script" for tag, _ in tags.tags) == 1


def test_filter_data_says_which_program_beats_which_per_episode(
    fixture_bench: tuple[BenchReport, Path],
) -> None:
    report, out = fixture_bench
    runs = page_runs(report)
    assert [(r.key, r.label) for r in runs] == [("r0", "seed"), ("r1", "default")]  # one model: program names
    lines = read_predictions(out)
    a2 = {("r0" if line.program == "seed" else "r1"): line for line in lines if line.id == "a-2"}
    verdicts, beats = episode_tokens(runs, a2)
    assert {"r0:reversed", "r1:spurious", "*:matched"} <= set(verdicts) and beats == []  # same replies: a tie
    worse = a2["r1"].model_copy(update={"f1": 0.1})
    _, beats = episode_tokens(runs, {"r0": a2["r0"], "r1": worse})
    assert beats == ["r0>r1"]
    _, beats = episode_tokens(runs, {"r0": a2["r0"]})
    assert beats == []  # a run without this episode is never compared


def xss_episode() -> LabeledEpisode:
    names = ['<img src=x onerror="alert(2)">', "Mallory", "Eve</mark><script>alert(3)</script>"]
    return LabeledEpisode(
        id='x-1"><script>alert(4)</script>',
        source='<b onmouseover="alert(5)">src</b>',
        license="CC0-1.0",
        episode_content=f"{XSS} Mallory met {names[0]} and {names[2]} at </p></section></main><!-- x",
        previous_episodes=["<style>body{display:none}</style> Mallory again"],
        entities=[Entity(name=name, type="<i>T</i>") for name in names],
        reference_time="2025-01-01T00:00:00Z",
        edges=[
            GoldEdge(
                relationship_type="MET",
                source_entity_name="Mallory",
                target_entity_name=names[0],
                fact=f"Mallory met someone {XSS}",
                aliases=["<u>SAW</u>"],
            )
        ],
    )


def xss_reply(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    return edges_reply(
        edge("Mallory", "MET", '<img src=x onerror="alert(2)">', fact=f'</q>{XSS}"'),
        edge("Mallory", "KNOWS", '<svg onload="alert(6)">'),  # outside the entities: dropped, with a warning
        edge("Eve</mark><script>alert(3)</script>", "MET", "Mallory", fact="<iframe src=x></iframe>"),
    )


@pytest.fixture(scope="module")
def xss_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchReport, Path]:
    out = tmp_path_factory.mktemp("xss")
    report = bench_folder(
        out,
        [xss_episode(), *load_fixture()[:1]],
        lambda m, k: xss_reply(m, k) if "Mallory" in str(m) else respond(m, k),
        models=('fake/<b onclick="alert(7)">m</b>',),
        programs=("default",),
        program_names=("<i>prog</i>",),
    )
    return report, out


def test_html_from_episodes_and_models_is_escaped_and_cannot_break_the_page(
    xss_bench: tuple[BenchReport, Path],
) -> None:
    _, out = xss_bench
    page = (out / RESULTS_HTML).read_text(encoding="utf-8")
    tags = parse(page)
    assert {tag for tag, _ in tags.tags} <= PAGE_TAGS  # no <b>, <i>, <u>, <svg>, <iframe> from the data
    assert (
        sum(tag == "script" for tag, _ in tags.tags) == 1 and sum(tag == "style" for tag, _ in tags.tags) == 1
    )
    (plot,) = [attrs for tag, attrs in tags.tags if tag == "img"]
    assert (plot["src"] or "").startswith("data:image/png;base64,")
    assert not [name for _, attrs in tags.tags for name in attrs if name.startswith("on")]
    assert len([1 for tag, attrs in tags.tags if tag == "section" and attrs.get("class") == "episode"]) == 2
    assert tags.texts[0] == xss_episode().episode_content  # shown as text, whole
    assert html.escape(XSS) in page and "&lt;svg onload=&quot;alert(6)&quot;&gt;" in page  # in the warning
    assert "<!--" not in page


def test_the_page_forbids_every_script_but_its_own(xss_bench: tuple[BenchReport, Path]) -> None:
    _, out = xss_bench
    page = (out / RESULTS_HTML).read_text(encoding="utf-8")
    (csp,) = [a["content"] for t, a in parse(page).tags if t == "meta" and a.get("http-equiv")]
    assert (
        csp.startswith("default-src 'none'; img-src data:; style-src 'sha256-")
        and "script-src 'sha256-" in csp
    )
    assert "unsafe-inline" not in csp


# ------------------------------------------------------------------------------------------ writing


def test_edgewise_report_rebuilds_the_page_the_bench_wrote(
    fixture_bench: tuple[BenchReport, Path], tmp_path: Path
) -> None:
    _, out = fixture_bench
    written = (out / RESULTS_HTML).read_bytes()
    assert main(["report", str(out), "--output", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_bytes() == written


def test_a_folder_from_an_older_bench_gets_the_table_only(
    fixture_bench: tuple[BenchReport, Path], tmp_path: Path
) -> None:
    _, out = fixture_bench
    for name in ("results.json", "results.md", "plot.png", "errors.jsonl"):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    assert main(["report", str(tmp_path)]) == 0
    page = (tmp_path / RESULTS_HTML).read_text(encoding="utf-8")
    assert 'id="results-table"' in page and 'class="episode"' not in page
    assert "no episodes.jsonl and predictions.jsonl" in page


def test_report_errors_name_the_file_line_and_field(
    fixture_bench: tuple[BenchReport, Path], tmp_path: Path, capsys: Any
) -> None:
    assert main(["report", str(tmp_path)]) == 1
    assert f"{tmp_path / 'results.json'} not found" in capsys.readouterr().err
    _, out = fixture_bench
    for name in ("results.json", "episodes.jsonl"):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    lines = (out / "predictions.jsonl").read_text().splitlines()
    broken = json.loads(lines[1])
    broken["edges"][0]["verdict"] = "great"
    (tmp_path / "predictions.jsonl").write_text("\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n")
    with pytest.raises(InputError, match=r"predictions.jsonl line 2, field 'edges\[0\].verdict'"):
        read_predictions(tmp_path)
    assert main(["report", str(tmp_path)]) == 1
    assert "predictions.jsonl line 2, field 'edges[0].verdict': Input should be" in capsys.readouterr().err
    (tmp_path / "results.json").write_text('{"seed": 0}')
    assert main(["report", str(tmp_path)]) == 1
    assert "results.json: not a bench results.json: field 'created_at'" in capsys.readouterr().err


def test_a_line_cut_by_a_kill_is_left_out(fixture_bench: tuple[BenchReport, Path], tmp_path: Path) -> None:
    _, out = fixture_bench
    for name in ("results.json", "episodes.jsonl"):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    text = (out / "predictions.jsonl").read_text()
    (tmp_path / "predictions.jsonl").write_text(text[: len(text) - 40])  # the last line, cut
    assert len(read_predictions(tmp_path)) == len(text.splitlines()) - 1


def test_the_page_is_rewritten_after_each_model_and_program(tmp_path: Path) -> None:
    seen: list[str] = []

    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        if config.model == "fake/second":  # the first model's runs are done: their page is there
            seen.append((tmp_path / RESULTS_HTML).read_text(encoding="utf-8"))
        yield ScriptedLM(fixture_responder, model=config.model)

    run_bench(
        [LMConfig(model="fake/first"), LMConfig(model="fake/second")],
        {"seed": resolve_program("seed")},
        load_fixture(),
        workers=1,
        seed=0,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory,
    )
    (mid,) = seen
    assert "PARTIAL" in mid and mid.count('data-run="r0"') > 4 and 'data-run="r1"' not in mid
    assert "data:image/png" not in mid  # no plot yet: a plot.png there now may be an older bench's
    final = (tmp_path / RESULTS_HTML).read_text(encoding="utf-8")
    assert "PARTIAL" not in final and 'data-run="r1"' in final and "data:image/png" in final


def test_ctrl_c_leaves_a_page_with_the_episodes_done(tmp_path: Path) -> None:
    def interrupting(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if "Dan founded" in str(messages):
            raise KeyboardInterrupt
        return respond(messages, kwargs)

    with pytest.raises(BenchInterrupted):
        bench_folder(tmp_path, load_fixture(), interrupting, programs=("default",))
    lines = read_predictions(tmp_path)
    assert [line.id for line in lines] == ["a-1", "a-2"]
    page = (tmp_path / RESULTS_HTML).read_text(encoding="utf-8")
    assert "PARTIAL" in page and page.count("not run on this episode") == 2  # b-1 and b-2


def test_a_lone_surrogate_from_a_model_does_not_fail_the_files(tmp_path: Path) -> None:
    half = '"fact": "half \\ud800 a pair"'  # a JSON escape a model can write; Python reads half a pair
    reply = (
        f'{{"edges": [{{"relationshipType": "WORKS_AT", "sourceEntityName": "Ana", "targetEntityName": "Acme", {half}}}, '
        f'{{"relationshipType": "OWNS", "sourceEntityName": "Ana", "targetEntityName": "Oslo", {half}}}]}}'
    )
    bench_folder(tmp_path, load_fixture()[:1], lambda m, k: reply, programs=("seed",))
    (line,) = read_predictions(tmp_path)
    assert [(e.verdict, e.fact) for e in line.edges] == [
        ("wrongDate", "half \ud800 a pair"),  # gold validAt 2021
        ("mistyped", "half \ud800 a pair"),
    ]
    (record,) = read_errors(tmp_path / "errors.jsonl")
    assert record["mistyped"][0]["predicted"]["fact"] == "half \ud800 a pair"
    assert "half \\ud800 a pair" in (tmp_path / RESULTS_HTML).read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ the CLI


def test_every_report_flag_has_help_with_an_example() -> None:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    report = subparsers.choices["report"]
    actions = [a for a in report._actions if a.dest != "help"]
    assert {a.dest for a in actions} == {"results_dir", "output"}
    assert [a.dest for a in actions if "Example:" not in (a.help or "")] == []


def test_bench_against_the_mock_server_writes_results_html(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str:
        text = json.dumps(body["messages"])
        return next((r for marker, r in REPLIES.items() if marker in text), edges_reply())

    with MockOpenAIServer(reply) as server:
        code = main(
            [
                "bench", "--models", "openai/mock", "--api-base", server.api_base, "--programs", "seed,default",
                "--data", str(FIXTURE), "--out", str(tmp_path), "--no-progress", "--max-retries", "0",
            ]
        )  # fmt: skip
    assert code == 0
    page = (tmp_path / RESULTS_HTML).read_text(encoding="utf-8")
    tags = parse(page)
    sections = [a for t, a in tags.tags if t == "section" and a.get("class") == "episode"]
    assert len(sections) == 4 and all(s["data-runs"] == "r0 r1" for s in sections)
    assert "r0:reversed" in sections[1]["data-v"] and "r0:wrongDate" in sections[2]["data-v"]
    assert {"episodes.jsonl", "predictions.jsonl", "errors.jsonl"} <= {p.name for p in tmp_path.iterdir()}


def test_an_edge_attribute_is_shown_and_escaped() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme")])
    judged = JudgedEdge(
        relationship_type="WORKS_AT",
        source_entity_name="Alice",
        target_entity_name="Acme",
        fact="",
        attributes={"role": "<b>CTO</b>"},
        verdict="matched",
    )
    line = EpisodePrediction(
        model="m", program="p", id="e1", source="news", status="ok", f1=1.0, tp=1, fp=0, fn=0,
        edges=[judged], gold=["matched"],
    )  # fmt: skip
    section = episode_section(1, ep, [Run("r0", "m", "p", "p")], {"r0": line})
    assert '<span class="attr">role=&lt;b&gt;CTO&lt;/b&gt;</span>' in section
    assert 'data-v="r0:matched *:matched"' in section and 'data-runs="r0"' in section
