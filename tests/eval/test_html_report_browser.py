"""results.html in a real headless Chromium: the table, an episode's marked entities, the filters, and
an episode full of HTML and scripts that runs nothing.

Needs Debian's `chromium` (`apt-get install chromium`; `.ci/run` installs it) and the `playwright`
package from the dev extra, which drives the installed browser (no browser download). Where either is
missing the tests are skipped with the reason (they fail instead where EDGEWISE_REQUIRE_BROWSER is set,
as CI sets it); `EDGEWISE_CHROMIUM` names another Chromium binary.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from fakes import edges_reply, output_field
from test_bench import REPLIES, load_fixture, respond
from test_html_report import bench_folder, xss_episode, xss_reply

from edgewise.eval.html_report import RESULTS_HTML

CHROMIUM = os.environ.get("EDGEWISE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _skip(reason: str) -> NoReturn:
    """Skip, unless this run must have a browser (CI sets EDGEWISE_REQUIRE_BROWSER): then fail."""
    if os.environ.get("EDGEWISE_REQUIRE_BROWSER"):
        pytest.fail(f"EDGEWISE_REQUIRE_BROWSER is set but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip("the playwright package is not installed (it is in the dev extra: pip install -e '.[dev]')")
    if not Path(CHROMIUM).is_file():
        _skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set EDGEWISE_CHROMIUM)")
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()


def open_report(page: Any, folder: Path) -> None:
    page.goto((folder / RESULTS_HTML).resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", state="attached")


def by_program(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    """The fixture's replies, except that `default` gets a-2 right: so default beats seed on a-2 only."""
    if output_field(messages) == "edges" and "Bob founded" in str(messages):
        return edges_reply(
            {
                "relationshipType": "FOUNDED",
                "sourceEntityName": "Bob",
                "targetEntityName": "Beta",
                "fact": "f",
            },
            {
                "relationshipType": "MARRIED_TO",
                "sourceEntityName": "Bob",
                "targetEntityName": "Cara",
                "fact": "f",
            },
        )
    return respond(messages, kwargs) if "Eve works" not in str(messages) else edges_reply()


@pytest.fixture(scope="module")
def fixture_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert "Bob founded" in REPLIES
    out = tmp_path_factory.mktemp("browser")
    bench_folder(out, load_fixture(), by_program)
    return out


def visible_sections(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "section.episode",
        "sections => sections.filter(s => !s.hidden).map(s => s.querySelector('h3 a').textContent)",
    )


def test_the_table_the_marked_text_and_the_filters_work(page: Any, fixture_folder: Path) -> None:
    open_report(page, fixture_folder)
    assert page.locator("#results-table tbody tr").count() == 2
    assert page.locator("#results-table").is_visible()
    first = page.locator("section.episode").first
    marks = first.locator("p.text mark.ent")
    assert marks.all_text_contents() == ["Ana", "Acme", "Ana", "Oslo"]
    assert marks.first.is_visible()
    assert page.locator("#f-count").text_content() == "4 of 4 episodes"

    page.select_option("#f-source", "beta")
    assert visible_sections(page) == ["b-1", "b-2"]
    assert page.locator("#ep-1").is_hidden() and page.locator("#ep-3").is_visible()
    assert page.locator("#f-count").text_content() == "2 of 4 episodes"

    page.select_option("#f-run", "r1")  # default only: seed's column and chips go
    assert page.locator("#ep-3 .col[data-run='r0']").is_hidden()
    assert page.locator("#ep-3 .col[data-run='r1']").is_visible()
    page.select_option("#f-run", "")
    assert page.locator("#ep-3 .col[data-run='r0']").is_visible()

    page.select_option("#f-source", "")
    page.select_option("#f-verdict", "reversed")  # only seed reversed an edge, in a-2
    assert visible_sections(page) == ["a-2"]
    page.select_option("#f-verdict", "")
    assert len(visible_sections(page)) == 4

    page.select_option("#f-a", "r1")
    page.select_option("#f-b", "r0")
    assert visible_sections(page) == ["a-2"]
    assert (
        page.locator("#f-count").text_content()
        == "1 of 4 episodes · default beats seed on 1, loses on 0, ties on 3"
    )
    page.select_option("#f-a", "r0")
    page.select_option("#f-b", "r1")
    assert visible_sections(page) == []


@pytest.fixture(scope="module")
def xss_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser-xss")
    bench_folder(
        out,
        [xss_episode(), *load_fixture()[:1]],
        lambda m, k: xss_reply(m, k) if "Mallory" in str(m) else respond(m, k),
        programs=("default",),
        program_names=("<i>prog</i>",),
    )
    return out


def test_an_episode_full_of_html_runs_nothing_and_shows_as_text(page: Any, xss_folder: Path) -> None:
    dialogs: list[str] = []
    errors: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_report(page, xss_folder)
    page.wait_for_timeout(300)  # time for an injected onerror/onload to fire, if any got in
    assert dialogs == [] and errors == []
    assert page.evaluate("document.scripts.length") == 1
    assert page.evaluate("document.images.length") == 1  # the plot
    injected = "document.querySelectorAll('iframe, svg, b, i, u, style').length"
    assert page.evaluate(injected) == 1  # the page's own <style>
    assert page.locator("section.episode").count() == 2
    assert page.locator("#ep-1 > p.text").text_content() == xss_episode().episode_content
    assert page.locator("#ep-1 > p.text mark.ent").count() == 3
    page.select_option("#f-verdict", "matched")
    assert visible_sections(page) == ['x-1"><script>alert(4)</script>', "a-1"]
