"""How big results.html gets at the size of the full test split, how long it takes to build, and how long
headless Chromium takes to open it and to apply a filter.

A real `edgewise bench` runs the 306 test episodes with 4 programs (seed, seed-structured, default, and
default with open types) against the mock OpenAI-compatible server (tests/mock_openai.py), which
answers each request with a noisy copy of the episode's gold edges: kept (sometimes with a date
dropped), reversed, mistyped or missed, plus spurious edges, seeded per program and episode. So every
verdict occurs, at the density of a real bench, and the page is the one a user gets. Then:

- file size of results.html (and gzipped, for reference);
- build time: `write_html` on the finished folder (reads the per-episode files, renders, writes), median;
- open time in Debian's Chromium driven by Playwright: DOMContentLoaded, load and first contentful
  paint from the page's own navigation timing, median over fresh pages;
- filter time: selecting a source, then a verdict, until the style and layout are done, median;
- the same page without `content-visibility: auto` on the episodes, which lets Chromium skip laying
  out the episodes off screen, for comparison.

    python benchmarks/html_report_size.py                       # 306 episodes x 4 programs, median of 5
    python benchmarks/html_report_size.py --out runs/report-size --screenshot docs/report.png
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import edgewise  # noqa: F401  (offline LiteLLM settings first)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mock_openai import MockOpenAIServer, prompt_text

from edgewise.data.loader import load_episodes
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import format_utc
from edgewise.eval import run_bench
from edgewise.eval.html_report import RESULTS_HTML, write_html
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import LMConfig

CHROMIUM: Final = "/usr/bin/chromium"
CHROMIUM_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PROGRAMS: Final = ("seed", "seed-structured", "default", "default-open-types")


def _edge(
    source: str, kind: str, target: str, fact: str, valid: str | None, invalid: str | None
) -> dict[str, Any]:
    return {
        "relationshipType": kind,
        "sourceEntityName": source,
        "targetEntityName": target,
        "fact": fact,
        "validAt": valid,
        "invalidAt": invalid,
    }


def noisy_edges(episode: LabeledEpisode, style: str) -> list[dict[str, Any]]:
    """A plausible model's answer: the gold edges kept, broken or missed, plus some invented ones."""
    rng = random.Random(f"{style}:{episode.id}")
    quality = 0.25 + 0.5 * int(hashlib.sha256(style.encode()).hexdigest()[:4], 16) / 0xFFFF
    types = [edge_type.name for edge_type in episode.edge_types] or ["RELATED_TO"]
    names = [entity.name for entity in episode.entities]
    edges: list[dict[str, Any]] = []
    for gold in episode.edges:
        valid = format_utc(gold.valid_at) if gold.valid_at else None
        invalid = format_utc(gold.invalid_at) if gold.invalid_at else None
        draw = rng.random()
        if draw < quality:
            if valid and rng.random() < 0.25:
                valid = None  # a wrong date
            edges.append(_edge(gold.source_entity_name, gold.relationship_type, gold.target_entity_name, gold.fact,
                               valid, invalid))  # fmt: skip
        elif draw < quality + 0.1:
            edges.append(_edge(gold.target_entity_name, gold.relationship_type, gold.source_entity_name, gold.fact,
                               valid, invalid))  # fmt: skip
        elif draw < quality + 0.2:
            kind = rng.choice([t for t in types if t != gold.relationship_type] or ["RELATED_TO"])
            edges.append(
                _edge(gold.source_entity_name, kind, gold.target_entity_name, gold.fact, valid, invalid)
            )
    if len(names) >= 2:
        for _ in range(rng.choice((0, 0, 1, 2))):
            source, target = rng.sample(names, 2)
            edges.append(
                _edge(source, rng.choice(types), target, f"{source} and {target} are related.", None, None)
            )
    return edges


class Responder:
    """Answers each request with `noisy_edges` of the episode it is about, seeded by the program's style."""

    def __init__(self, episodes: list[LabeledEpisode]) -> None:
        self._episodes = episodes

    def __call__(self, body: dict[str, Any]) -> str:
        text = prompt_text(body)
        # the episode whose text is in the prompt; a later turn of a conversation also carries the
        # earlier turns as previous episodes, so the one with the most of them present is the one asked
        candidates = [e for e in self._episodes if _quoted(e.episode_content, text)]
        if not candidates:
            return json.dumps({"edges": []})
        episode = max(candidates, key=lambda e: sum(_quoted(p, text) for p in e.previous_episodes))
        # what tells the programs apart: their instructions and the schema they ask for
        style = hashlib.sha256(
            (text[:300] + json.dumps(body.get("response_format"))[:2000]).encode()
        ).hexdigest()
        return json.dumps({"edges": noisy_edges(episode, style)})


def _quoted(passage: str, text: str) -> bool:
    return passage in text or json.dumps(passage)[1:-1] in text


def bench(out: Path, episodes: list[LabeledEpisode], workers: int) -> float:
    """The bench itself, against the mock; returns its wall seconds."""
    programs = {
        "seed": resolve_program("seed"),
        "seed-structured": resolve_program("seed-structured"),
        "default": resolve_program("default"),
        "default-open-types": resolve_program("default", open_types=True),
    }
    with MockOpenAIServer(Responder(episodes)) as server:
        started = time.perf_counter()
        run_bench(
            [LMConfig(model="mock", api_base=server.api_base, num_retries=0)],
            programs,
            episodes,
            workers=workers,
            seed=0,
            out_dir=out,
            progress=False,
        )
        return time.perf_counter() - started


def without_content_visibility(out: Path) -> Path:
    """The same page with every episode laid out at once, to show what `content-visibility: auto` saves."""
    from edgewise.cli.report import load_report
    from edgewise.eval import html_report

    css = html_report._CSS
    html_report._CSS = css.replace("content-visibility:auto;contain-intrinsic-size:auto 420px", "")
    assert html_report._CSS != css, "the page's CSS no longer sets content-visibility"
    try:
        return write_html(load_report(out), out, plot=True, output=out / "results-eager.html")
    finally:
        html_report._CSS = css


def build_times(out: Path, runs: int) -> list[float]:
    from edgewise.cli.report import load_report

    report = load_report(out)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        write_html(report, out, plot=True)
        times.append(time.perf_counter() - started)
    return times


_TIMINGS: Final = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return {dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, fcp: paint ? paint.startTime : null};
}"""

_FILTER: Final = """() => {
  const pick = (id, value) => { const s = document.getElementById(id); s.value = value;
                                s.dispatchEvent(new Event('change')); };
  const source = document.querySelector('#f-source option:nth-child(2)').value;
  let t = performance.now(); pick('f-source', source); document.body.offsetHeight;
  const bySource = performance.now() - t;
  t = performance.now(); pick('f-source', ''); pick('f-verdict', 'missed'); document.body.offsetHeight;
  const byVerdict = performance.now() - t;
  pick('f-verdict', '');
  return {bySource, byVerdict, shown: document.getElementById('f-count').textContent};
}"""


def browser_times(page_path: Path, runs: int, screenshot: Path | None) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    figures: dict[str, list[float]] = {"dcl": [], "load": [], "fcp": [], "source": [], "verdict": []}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(runs):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            page.wait_for_selector("body[data-ready='1']", state="attached")
            timings = page.evaluate(_TIMINGS)
            filtered = page.evaluate(_FILTER)
            figures["dcl"].append(timings["dcl"])
            figures["load"].append(timings["load"])
            if timings["fcp"] is not None:
                figures["fcp"].append(timings["fcp"])
            figures["source"].append(filtered["bySource"])
            figures["verdict"].append(filtered["byVerdict"])
            context.close()
        if screenshot is not None:
            take_screenshot(browser, page_path, screenshot)
        browser.close()
    return figures


def take_screenshot(browser: Any, page_path: Path, target: Path) -> None:
    """The top of the page, the plot narrowed and the table notes folded so that the first episode fits,
    with the filters set to one source and "default beats seed"."""
    context = browser.new_context(viewport={"width": 1280, "height": 1120}, device_scale_factor=1)
    page = context.new_page()
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    page.wait_for_selector("body[data-ready='1']", state="attached")
    # CSSOM changes, which the page's Content-Security-Policy allows (a new <style> it refuses)
    page.evaluate("document.querySelector('.plot').style.maxWidth = '300px'")
    page.evaluate("document.querySelector('.notes').style.display = 'none'")
    page.select_option("#f-source", "conversational")
    page.select_option("#f-a", "r2")
    page.select_option("#f-b", "r0")
    page.screenshot(path=str(target), type="png")
    context.close()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--split", default="test", help="episodes to bench (default test). Example: --split smoke"
    )
    parser.add_argument(
        "--runs", type=int, default=5, help="repeats per timing (default 5). Example: --runs 3"
    )
    parser.add_argument(
        "--workers", type=int, default=4, help="bench workers (default 4). Example: --workers 8"
    )
    parser.add_argument(
        "--out", type=Path, help="keep the bench folder here. Example: --out runs/report-size"
    )
    parser.add_argument(
        "--screenshot", type=Path, help="save a screenshot. Example: --screenshot docs/report.png"
    )
    args = parser.parse_args()
    episodes = load_episodes(args.split)
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        wall = bench(out, episodes, args.workers)
        page = out / RESULTS_HTML
        size = page.stat().st_size
        zipped = len(gzip.compress(page.read_bytes(), 9))
        predictions = len((out / "predictions.jsonl").read_text(encoding="utf-8").splitlines())
        edges = page.read_text(encoding="utf-8").count('class="edge ')
        built = build_times(out, args.runs)
        opened = browser_times(page, args.runs, args.screenshot)
        eager = browser_times(without_content_visibility(out), args.runs, None)
    print(f"| figure ({len(episodes)} episodes x {len(PROGRAMS)} programs, {predictions} predictions, "
          f"{edges} edge rows; median of {args.runs}) | value |")  # fmt: skip
    print("|---|---:|")
    print(f"| results.html size | {size / 1e6:.2f} MB ({zipped / 1e6:.2f} MB gzipped) |")
    print(f"| build (`write_html`: read the files, render, write) | {1000 * median(built):.0f} ms |")
    rows = (
        ("Chromium: first contentful paint", "fcp"),
        ("Chromium: DOMContentLoaded", "dcl"),
        ("Chromium: load", "load"),
        ("filter by source (style and layout done)", "source"),
        ("filter by verdict", "verdict"),
    )
    for label, key in rows:
        print(
            f"| {label} | {median(opened[key]):.0f} ms (every episode laid out at once: {median(eager[key]):.0f} ms) |"
        )
    print(f"| the bench itself against the mock (4 workers) | {wall:.1f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
