"""Date guards, offline: each guard on a hand-made episode, the dates they must leave alone, the option
through the extractor with a fake model, and the replay of the guards on benched replies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from benchmark_scripts import RESULTS, load_script
from fakes import ScriptedLM, edge, edges_reply

from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge
from edgewise.eval.bench_records import BenchReport
from edgewise.modules.call_context import CallContext
from edgewise.modules.date_guards import guard_dates
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import lm_context

REFERENCE = datetime(2024, 3, 14, 9, 30, tzinfo=UTC)


def day(year: int, month: int = 1, date: int = 1) -> datetime:
    return datetime(year, month, date, tzinfo=UTC)


def guarded(
    content: str, fact: str, valid_at: datetime | None, invalid_at: datetime | None = None, target: str = "B"
) -> tuple[Edge, list[str]]:
    """The one edge `fact` states, guarded against `content`, and the warning codes."""
    context = CallContext()
    warnings = context.warnings
    given = Edge(
        relationship_type="X",
        source_entity_name="Ann",
        target_entity_name=target,
        fact=fact,
        valid_at=valid_at,
        invalid_at=invalid_at,
    )
    (result,) = guard_dates([given], content, REFERENCE, context)
    return result, [w.code for w in warnings]


# ------------------------------------------------------------------------------------------------
# A number that names a thing
# ------------------------------------------------------------------------------------------------


def test_a_model_year_is_not_a_date_and_the_ongoing_fact_keeps_reference_time() -> None:
    result, codes = guarded(
        "I still drive my 2015 Civic.", "User owns a 2015 Civic.", day(2015), target="Civic"
    )
    assert result.valid_at == REFERENCE and codes == ["date_names_thing"]


@pytest.mark.parametrize(
    ("content", "fact", "valid_at"),
    [
        ("My phone is on iOS 17 now.", "User's phone runs iOS 17.", day(2017)),
        ("My phone is on iOS 17 now.", "User's phone runs iOS 17.", day(2024, 3, 17)),  # "17" as a day
        ("The laptop came with Windows 11.", "User's laptop runs Windows 11.", day(2011)),
        ("We're in room 1204 at the Hilton.", "User stays in room 1204 at the Hilton.", day(1204)),
        ("I take bus 2010 to work.", "User takes bus 2010 to work.", day(2010)),
        ("I live at 1910 Elm Street.", "User lives at 1910 Elm Street.", day(1910)),
    ],
)
def test_a_version_a_room_a_bus_and_an_address_are_not_dates(
    content: str, fact: str, valid_at: datetime
) -> None:
    result, codes = guarded(content, fact, valid_at)
    assert result.valid_at == REFERENCE and codes == ["date_names_thing"]


def test_a_thing_number_gives_way_to_the_time_the_fact_also_names() -> None:
    result, codes = guarded(
        "I bought my 2015 Civic last week.", "User bought a 2015 Civic last week.", day(2015), target="Civic"
    )
    assert result.valid_at == day(2024, 3, 7) and codes == ["date_names_thing"]


def test_a_number_inside_a_name_of_a_past_fact_leaves_no_date() -> None:
    result, codes = guarded(
        "He played for FK DAC 1904 Dunajská Streda.",
        "Pavol played for FK DAC 1904 Dunajská Streda.",
        day(1904),
        target="FK DAC 1904 Dunajská Streda",
    )
    assert result.valid_at is None and codes == ["date_names_thing"]


@pytest.mark.parametrize(
    ("content", "fact", "valid_at"),
    [
        ("She competed at the 2012 Summer Olympics.", "Ann competed at the 2012 Summer Olympics.", day(2012)),
        ("In 2015 Maya joined Acme.", "Maya joined Acme in 2015.", day(2015)),
        ("She moved here in 2015 with her 2015 Civic.", "Ann lives here since 2015.", day(2015)),
        ("Ann joined Acme on March 4, 2021.", "Ann joined Acme on March 4, 2021.", day(2021, 3, 4)),
    ],
)
def test_a_year_the_text_gives_as_a_time_is_kept(content: str, fact: str, valid_at: datetime) -> None:
    result, codes = guarded(content, fact, valid_at)
    assert result.valid_at == valid_at and codes == []


# ------------------------------------------------------------------------------------------------
# A plan that is off
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "We were going to move to Austin in June, but that's off.",
        "We planned to move to Austin in June. The move fell through.",
        "We were going to move to Austin in June. Then we changed our minds.",
    ],
)
def test_a_cancelled_plan_dates_nothing(content: str) -> None:
    result, codes = guarded(content, "User is moving to Austin in June.", day(2024, 6), target="Austin")
    assert result.valid_at is None and codes == ["date_cancelled_plan"]


def test_a_plan_that_still_holds_keeps_its_date() -> None:
    result, codes = guarded(
        "We're going to move to Austin in June; the lease is signed.",
        "User is moving to Austin in June.",
        day(2024, 6),
        target="Austin",
    )
    assert result.valid_at == day(2024, 6) and codes == []


# ------------------------------------------------------------------------------------------------
# REFERENCE_TIME on a fact that ended or is past, and an end written as the start
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fact", "target"),
    [
        ("Pavol Sedlák played for SK Slovan Bratislava.", "SK Slovan Bratislava"),
        ("Marcus was a student at the University of Edinburgh.", "University of Edinburgh"),
        ("The user grew up in Graz.", "Graz"),
        ("Sofia is leaving Quantix on Friday to join a startup called Tidepool.", "Quantix"),
        ("The user moved from Manchester two years ago.", "Manchester"),
    ],
)
def test_a_past_or_ended_fact_with_no_stated_start_has_no_valid_at(fact: str, target: str) -> None:
    result, codes = guarded(fact, fact, REFERENCE, target=target)
    assert result.valid_at is None and codes == ["date_no_start"]


@pytest.mark.parametrize(
    ("fact", "target"),
    [
        ("Maya works as a data analyst at Brightline Insurance.", "Brightline Insurance"),
        ("Sofia is leaving Quantix on Friday to join a startup called Tidepool.", "Tidepool"),
        ("Amir is shadowing her until December.", "Amir"),
        ("Kwame moved into a flat in Oerlikon.", "Oerlikon"),
        ("Kemi and I ended things on Saturday. We're staying friends.", "Kemi"),  # two statements
        ("Maya has worked at Acme for years.", "Acme"),
        ("He worked at the Argonne National Laboratory in 1964.", "Argonne National Laboratory"),
    ],
)
def test_an_ongoing_fact_or_one_that_names_its_time_keeps_reference_time(fact: str, target: str) -> None:
    result, codes = guarded(fact, fact, REFERENCE, target=target)
    assert result.valid_at == REFERENCE and codes == []


def test_an_end_written_as_the_start_moves_to_invalid_at() -> None:
    fact = "Erik will leave Station 12 at the end of March to retrain as a paramedic."
    result, codes = guarded(fact, fact, day(2024, 3), target="Station 12")
    assert (result.valid_at, result.invalid_at) == (None, day(2024, 3)) and codes == ["date_end_as_start"]


def test_an_end_date_about_another_edge_stays() -> None:
    fact = "He transferred to Hendrix College, and graduated with a BA in 1960."
    result, codes = guarded(fact, fact, day(1960), target="Drew Theological School")
    assert (result.valid_at, result.invalid_at, codes) == (day(1960), None, [])


# ------------------------------------------------------------------------------------------------
# The option
# ------------------------------------------------------------------------------------------------


def _episode() -> Episode:
    return Episode.model_validate(
        {
            "episodeContent": "I drive my 2015 Civic. Pavol played for Slovan.",
            "entities": [{"name": "User"}, {"name": "Civic"}, {"name": "Pavol"}, {"name": "Slovan"}],
            "referenceTime": "2024-03-14T09:30:00Z",
        }
    )


def _reply() -> str:
    return edges_reply(
        edge("User", "OWNS", "Civic", "User drives a 2015 Civic.", validAt="2015-01-01T00:00:00Z"),
        edge("Pavol", "PLAYS_FOR", "Slovan", "Pavol played for Slovan.", validAt="2024-03-14T09:30:00Z"),
    )


def test_the_option_guards_the_dates_and_is_off_by_default() -> None:
    with lm_context(ScriptedLM([_reply(), _reply()])):
        off = EdgeExtractor(options=ProgramOptions(fact_dates=True))(_episode()).result
        on = EdgeExtractor(options=ProgramOptions(fact_dates=True, date_guards=True))(_episode()).result
    assert [e.valid_at for e in off.edges] == [day(2015), REFERENCE]
    assert [e.valid_at for e in on.edges] == [REFERENCE, None]
    assert [w.code for w in on.warnings] == ["date_names_thing", "date_no_start"]
    assert ProgramOptions().date_guards is False
    assert ProgramOptions(date_guards=True).changed() == {"date_guards": True}


def test_shipped_programs_keep_their_options() -> None:
    """The compile's levers, and the default vocabulary for an episode that lists no types."""
    assert resolve_program("qwen2.5-coder-1.5b-program").options == ProgramOptions(
        type_signatures=True, fact_dates=True, default_types=True
    )
    assert resolve_program("qwen2.5-coder-1.5b-program-v2").options == ProgramOptions(
        type_signatures=True,
        unseen_types_open=True,
        fact_dates=True,
        speaker_names=True,
        default_types=True,
    )


# ------------------------------------------------------------------------------------------------
# The replay on benched replies
# ------------------------------------------------------------------------------------------------


def test_the_replay_reproduces_the_benched_dates_from_facts_and_scores_the_guards(capsys) -> None:
    folder = RESULTS / "test-conversational-program-1.5b"
    benched = BenchReport.model_validate_json((folder / "results.json").read_bytes())
    (run,) = [r for r in benched.runs if r.program == "qwen2.5-coder-1.5b-program"]
    assert load_script("date_guards_replay").main([str(folder), "--programs", run.program]) == 0
    report = capsys.readouterr().out
    assert f"{len(run.episodes)} of {len(run.episodes)} episodes give the benched edges exactly" in report
    assert f"| as benched validAt | {run.scores.valid_at_accuracy:.3f} [{run.scores.tp}] |" in report


def test_against_pairs_each_programs_benched_dates_with_the_named_programs(capsys) -> None:
    folder = RESULTS / "test-conversational-program-1.5b"
    benched = BenchReport.model_validate_json((folder / "results.json").read_bytes())
    scores = {run.program: run.scores for run in benched.runs}
    script = load_script("date_guards_replay")
    assert script.main([str(folder), "--against", "baseline-v1"]) == 0
    report = capsys.readouterr().out.split("## validAt as benched, against baseline-v1")[1]
    base, program = scores["baseline-v1"], scores["qwen2.5-coder-1.5b-program"]
    own = next(line for line in report.splitlines() if "| baseline-v1 |" in line)
    assert f"{base.valid_at_accuracy:.3f} [{base.tp}] |" in own and "Δ" not in own
    other = next(line for line in report.splitlines() if "| qwen2.5-coder-1.5b-program |" in line)
    assert f"{program.valid_at_accuracy:.3f} [{program.tp}] Δ +" in other
    with pytest.raises(SystemExit, match="no complete run of seed"):
        script.main([str(folder), "--against", "seed"])
