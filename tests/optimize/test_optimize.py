"""`edgewise optimize` and the compiled-program artifact, offline: every optimizer on a tiny split.

The fake model answers any DSPy request by the output fields it asks for. Its extraction is only
half right (one of two gold edges) unless the prompt carries demos or an instruction with the word
IMPROVED, which is what its instruction-proposing answers contain, so each optimizer has something
real to find and the tests can check that it was found, saved and loaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import re
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dspy
import pytest
from fakes import ScriptedLM

import edgewise
from edgewise.cli import build_parser, main
from edgewise.domain.gold import LabeledEpisode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.optimize import ArtifactError, OptimizeSettings, load, optimize, save
from edgewise.programs.artifact import MANIFEST_FILE, PROGRAM_FILE, new_manifest
from edgewise.runtime.lm import LMConfig, lm_context

IMPROVED = "IMPROVED: extract every fact between the entities, including where people live."


def labeled(i: int) -> LabeledEpisode:
    return LabeledEpisode.model_validate(
        {
            "id": f"ep{i}",
            "source": "test",
            "license": "CC0-1.0",
            "episodeContent": f"Ann{i} works at Co{i}. Ann{i} lives in Town{i}.",
            "entities": [{"name": f"Ann{i}"}, {"name": f"Co{i}"}, {"name": f"Town{i}"}],
            "referenceTime": "2025-01-01T00:00:00Z",
            "edges": [gold_edge(i, "WORKS_AT", f"Co{i}"), gold_edge(i, "LIVES_IN", f"Town{i}")],
        }
    )


def gold_edge(i: int, rel: str, target: str) -> dict[str, Any]:
    return {"relationshipType": rel, "sourceEntityName": f"Ann{i}", "targetEntityName": target, "fact": rel}


TRAIN = [labeled(i) for i in range(4)]
DEV = [labeled(i) for i in (4, 5)]


def output_fields(system: str) -> list[tuple[str, str]]:
    block = system.split("Your output fields are:")[1].split("All interactions")[0]
    return re.findall(r"^\d+\. `(\w+)` \(([^)]*)\)", block, re.MULTILINE)


def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    """Answer any JSONAdapter request; extraction is complete only with demos or an IMPROVED instruction."""
    system = str(messages[0]["content"])
    reply: dict[str, Any] = {}
    for name, kind in output_fields(system):
        if name == "edges":
            i = int(re.search(r"Ann(\d+) works", str(messages[-1]["content"])).group(1))
            edges = [gold_edge(i, "WORKS_AT", f"Co{i}")]
            if len(messages) > 2 or "IMPROVED" in system:
                edges.append(gold_edge(i, "LIVES_IN", f"Town{i}"))
            reply[name] = edges
        elif kind.startswith("list"):
            reply[name] = []
        elif "instruction" in name:
            reply[name] = IMPROVED
        else:
            reply[name] = "Short texts about people, their employers and towns."
    return json.dumps(reply)


RUN_ARGUMENTS = {"train", "dev", "teacher_lm", "task_model", "teacher_model", "secrets", "progress"}
"""`optimize()`'s own arguments; every other keyword of `compile_with` is an `OptimizeSettings` field."""


def compile_with(out: Path, lm: ScriptedLM | None = None, **kwargs: Any):
    lm = lm or ScriptedLM(respond)
    run = {"train": TRAIN, "dev": DEV, "progress": io.StringIO()} | {
        key: value for key, value in kwargs.items() if key in RUN_ARGUMENTS
    }
    fields = {"max_demos": 2} | {key: value for key, value in kwargs.items() if key not in RUN_ARGUMENTS}
    with lm_context(lm):
        return optimize(task_lm=lm, out=out, settings=OptimizeSettings(**fields), **run)


def predictor_state(program: dspy.Module) -> list[tuple[str, str, int]]:
    return [(name, p.signature.instructions, len(p.demos)) for name, p in program.named_predictors()]


@pytest.mark.parametrize(
    ("optimizer", "options"),
    [
        ("bootstrap", {}),
        ("mipro", {"auto": "light"}),
        ("gepa", {"auto": "light", "budget": 60}),
    ],
)
def test_each_optimizer_finds_the_better_program_and_writes_a_loadable_artifact(tmp_path, optimizer, options):
    report = compile_with(tmp_path / "prog", optimizer=optimizer, **options)

    assert report.before.edge_f1 == pytest.approx(2 / 3)  # one of two gold edges per episode
    assert report.after is not None and report.after.edge_f1 == 1.0
    loaded = load(tmp_path / "prog")
    assert isinstance(loaded, EdgeExtractor)
    assert predictor_state(loaded) == predictor_state(report.program)
    found = loaded.extract.demos if optimizer != "gepa" else loaded.extract.signature.instructions
    assert found and (optimizer != "gepa" or "IMPROVED" in found)
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert manifest["optimizer"] == optimizer
    assert manifest["task_model"] == "fake/scripted"
    assert manifest["dev_score_before"] == pytest.approx(2 / 3) and manifest["dev_score_after"] == 1.0
    assert (
        manifest["dspy_version"] == dspy.__version__ and manifest["edgewise_version"] == edgewise.__version__
    )
    assert set(manifest["data_hashes"]) == {"train", "dev"}
    assert manifest["settings"]["max_demos"] == 2 and manifest["settings"]["reflexion_rounds"] == 0
    assert manifest["settings"]["closed_types"] is True and loaded.closed_types
    assert len(manifest["notes"]["candidate_scores"]) == report.candidates >= 1
    assert max(manifest["notes"]["candidate_scores"]) == pytest.approx(
        manifest["notes"]["search_score"], abs=1e-4
    )
    with lm_context(ScriptedLM(respond)):
        assert len(loaded(DEV[0].episode()).edges) == 2


def test_an_open_types_program_stays_open_after_loading(tmp_path):
    compile_with(tmp_path / "prog", optimizer="bootstrap", candidates=1, closed_types=False)
    assert json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())["settings"]["closed_types"] is False
    assert load(tmp_path / "prog").closed_types is False


def test_teacher_model_bootstraps_the_demos(tmp_path):
    task, teacher = ScriptedLM(respond), ScriptedLM(respond, model="fake/teacher")
    report = compile_with(tmp_path / "prog", task, optimizer="bootstrap", teacher_lm=teacher, candidates=1)
    assert teacher.calls, "the teacher answered the bootstrapping calls"
    assert report.manifest.teacher_model == "fake/teacher"
    assert report.program.extract.demos


def test_round_trip_gives_identical_prompts_and_predictions(tmp_path):
    report = compile_with(tmp_path / "prog", optimizer="bootstrap", candidates=2)
    loaded = load(tmp_path / "prog")
    assert loaded.extract.demos, "the round trip is only interesting with demos"
    for labeled_episode in DEV:
        answers = []
        for program in (report.program, loaded):
            lm = ScriptedLM(respond)
            with lm_context(lm):
                result = program(labeled_episode.episode()).result
            answers.append((result.model_dump(), [call["messages"] for call in lm.calls]))
        assert answers[0] == answers[1]


def test_a_program_compiled_for_other_signatures_fails_to_load_with_a_clear_message(tmp_path):
    compile_with(tmp_path / "prog", optimizer="bootstrap", candidates=1)
    manifest_path = tmp_path / "prog" / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["signature_fingerprints"]["extract"] = "0" * 16
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=r"compiled for other signatures \(differs in: extract\)"):
        load(tmp_path / "prog")


def test_another_version_warns_but_loads(tmp_path):
    compile_with(tmp_path / "prog", optimizer="bootstrap", candidates=1)
    manifest_path = tmp_path / "prog" / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["dspy_version"] = "0.0.1"
    manifest_path.write_text(json.dumps(manifest))
    with pytest.warns(UserWarning, match="compiled with dspy 0.0.1"):
        assert load(tmp_path / "prog").extract.demos


def test_a_crash_during_save_leaves_the_previous_artifact_intact(tmp_path, monkeypatch):
    report = compile_with(tmp_path / "prog", optimizer="bootstrap", candidates=1)
    before = (tmp_path / "prog" / PROGRAM_FILE).read_bytes()
    replacement = EdgeExtractor()

    def crash(path: str, **kwargs: Any) -> None:
        Path(path).write_text('{"extract": {"dem')  # half a file, then the process "dies"
        raise OSError("disk full")

    monkeypatch.setattr(replacement, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        save(replacement, tmp_path / "prog", new_manifest(replacement, task_model="x", optimizer="bootstrap"))
    assert (tmp_path / "prog" / PROGRAM_FILE).read_bytes() == before
    assert predictor_state(load(tmp_path / "prog")) == predictor_state(report.program)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog"], "no staging folder is left behind"


def test_a_save_stopped_between_its_renames_is_recovered(tmp_path):
    report = compile_with(tmp_path / "prog", optimizer="bootstrap", candidates=1)
    (tmp_path / "prog").rename(tmp_path / ".prog.previous")  # the state between the two renames
    with pytest.raises(ArtifactError, match="previous program is intact"):
        load(tmp_path / "prog")
    program = EdgeExtractor()
    save(program, tmp_path / "prog", new_manifest(program, task_model="x", optimizer="bootstrap"))
    assert load(tmp_path / "prog").extract.demos == []
    assert not (tmp_path / ".prog.previous").exists()
    assert report.program.extract.demos


@pytest.mark.parametrize("workers", [1, 3])
def test_the_budget_stops_the_search_and_the_best_program_is_still_saved(tmp_path, workers):
    lm = ScriptedLM(respond)
    report = compile_with(tmp_path / "prog", lm, optimizer="bootstrap", budget=5, workers=workers)
    assert report.status == "budget_exhausted" and report.candidates == 1
    assert report.usage["search"].calls == 5
    assert len(lm.calls) == report.usage["before"].calls + 5 + report.usage["after"].calls
    # the one candidate scored within the budget beat the baseline, and it is what was kept
    assert report.after is not None and report.after.edge_f1 == 1.0
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert manifest["status"] == "budget_exhausted" and manifest["settings"]["budget"] == 5
    assert load(tmp_path / "prog").extract.demos


def failing_after(calls: int, error: BaseException):
    counter = iter(range(10**6))

    def responder(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if next(counter) >= calls:
            raise error
        return respond(messages, kwargs)

    return responder


def test_ctrl_c_mid_search_saves_the_best_program_so_far(tmp_path):
    # 2 dev calls before, then the first candidate: 2 bootstrapping calls and 2 dev calls (a new best)
    lm = ScriptedLM(failing_after(7, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        compile_with(tmp_path / "prog", lm, optimizer="bootstrap")
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["notes"]["search_score"] == 1.0 and manifest["dev_score_after"] is None
    assert len(load(tmp_path / "prog").extract.demos) == 2


def test_a_crash_mid_search_saves_the_best_program_so_far_and_propagates(tmp_path, monkeypatch):
    from dspy.teleprompt import random_search

    real_evaluate, made = random_search.Evaluate, []

    def evaluate_that_breaks_on_the_second_candidate(*args: Any, **kwargs: Any):
        made.append(args)
        if len(made) == 2:
            raise RuntimeError("optimizer bug")
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(random_search, "Evaluate", evaluate_that_breaks_on_the_second_candidate)
    with pytest.raises(RuntimeError, match="optimizer bug"):
        compile_with(tmp_path / "prog", optimizer="bootstrap")
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert manifest["status"] == "failed" and manifest["notes"]["error"] == "RuntimeError: optimizer bug"
    assert len(load(tmp_path / "prog").extract.demos) == 2


def test_a_run_stopped_before_any_candidate_saves_the_uncompiled_program(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        compile_with(
            tmp_path / "prog", ScriptedLM(failing_after(3, KeyboardInterrupt())), optimizer="bootstrap"
        )
    assert predictor_state(load(tmp_path / "prog")) == predictor_state(EdgeExtractor())


def test_a_model_that_never_answers_fails_before_the_search(tmp_path):
    def unreachable(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        raise ConnectionError("connection refused")

    lm = ScriptedLM(unreachable)
    with pytest.raises(ConnectionError, match="connection refused"):
        compile_with(tmp_path / "prog", lm, optimizer="bootstrap")
    assert len(lm.calls) == len(DEV) and not (tmp_path / "prog").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"optimizer": "bootstrap", "max_demos": 0}, "max_demos must be >= 1"),
        ({"optimizer": "mipro", "candidates": 3}, "give both candidates and trials"),
        ({"optimizer": "bootstrap", "budget": 0}, "budget must be >= 1"),
        ({"optimizer": "gold", "dev_size": 0}, "dev_size must be >= 1"),
        ({"optimizer": "simba"}, "optimizer must be one of"),
    ],
)
def test_bad_settings_are_refused_before_any_call(tmp_path, options, message):
    lm = ScriptedLM(respond)
    with pytest.raises(ValueError, match=message):
        compile_with(tmp_path / "prog", lm, **options)
    assert lm.calls == [] and not (tmp_path / "prog").exists()


# --------------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------------


def write_jsonl(path: Path, episodes: list[LabeledEpisode]) -> Path:
    path.write_text("".join(json.dumps(e.model_dump(mode="json", by_alias=True)) + "\n" for e in episodes))
    return path


def test_cli_compiles_from_files_and_writes_no_secret(tmp_path, monkeypatch, capsys):
    import edgewise.cli.optimize as cli_optimize

    opened: list[LMConfig] = []

    @contextmanager
    def fake_open_lm(config: LMConfig) -> Iterator[ScriptedLM]:
        opened.append(config)
        lm = ScriptedLM(respond, model=config.model)
        lm.kwargs["api_key"] = config.api_key  # a real LM holds its key like this
        yield lm

    monkeypatch.setattr(cli_optimize, "open_lm", fake_open_lm)
    monkeypatch.setenv("EDGEWISE_API_KEY", "sk-env-SECRET-0001")
    train, dev = write_jsonl(tmp_path / "train.jsonl", TRAIN), write_jsonl(tmp_path / "dev.jsonl", DEV)
    code = main(
        [
            "optimize", "--model", "openai/task-model", "--api-base", "http://user:pw@127.0.0.1:9/v1",
            "--api-key", "sk-task-SECRET-0002", "--teacher-model", "openai/teacher-model",
            "--teacher-api-key", "sk-teacher-SECRET-0003", "--optimizer", "bootstrap", "--candidates", "1",
            "--train", str(train), "--dev", str(dev), "--max-demos", "2", "--out", str(tmp_path / "prog"),
        ]
    )  # fmt: skip
    assert code == 0
    assert [c.api_key for c in opened] == ["sk-task-SECRET-0002", "sk-teacher-SECRET-0003"]
    out = capsys.readouterr()
    assert "dev edge-F1 (micro, 2 episodes): before 0.667, after 1.000" in out.out
    assert "optimize: dev before" in out.err
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert (
        manifest["task_model"] == "openai/task-model" and manifest["teacher_model"] == "openai/teacher-model"
    )
    assert manifest["data_hashes"] == {
        "train": hashlib.sha256(train.read_bytes()).hexdigest(),
        "dev": hashlib.sha256(dev.read_bytes()).hexdigest(),
    }
    written = "".join(p.read_text() for p in (tmp_path / "prog").iterdir())
    for secret in ("SECRET", "user:pw", "127.0.0.1", "api_key", "api_base"):
        assert secret not in written


def test_every_optimize_flag_has_help_with_an_example():
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    parser = subparsers.choices["optimize"]
    for action in parser._actions:
        if action.dest != "help":
            assert "Example:" in (action.help or ""), action.dest


def test_the_command_line_defaults_are_the_settings_defaults():
    from edgewise.cli.optimize import settings_from_args
    from edgewise.optimize import DEFAULTS

    args = build_parser().parse_args(["optimize", "--out", "runs/prog"])
    assert settings_from_args(args) == DEFAULTS
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    helps = {action.dest: action.help or "" for action in subparsers.choices["optimize"]._actions}
    assert f"(default {DEFAULTS.minibatch_size})" in helps["minibatch_size"]
    assert f"(default {DEFAULTS.demo_threshold})" in helps["demo_threshold"]
    own = OptimizeSettings.DEFAULT_CANDIDATES
    assert f"(default {own['bootstrap']}, so {own['bootstrap'] + 1} candidates" in helps["candidates"]


def test_every_setting_comes_from_its_flag():
    """Each flag off its default reaches its own setting; none is left at the default or crossed."""
    import dataclasses

    from edgewise.cli.optimize import settings_from_args
    from edgewise.optimize import DEFAULTS

    args = build_parser().parse_args([
        "optimize", "--out", "runs/prog", "--optimizer", "mipro", "--auto", "heavy", "--seed", "3",
        "--max-demos", "2", "--budget", "50", "--reflexion-rounds", "2", "--open-types",
        "--output-shape", "compact", "--gold-demos", "1", "--demo-tokens", "900", "--minibatch-size", "5",
        "--workers", "3", "--candidates", "4", "--trials", "8", "--demo-threshold", "0.7",
        "--log-dir", "runs/log", "--dev-size", "9", "--levers", "gleaning", "--find-entities",
    ])  # fmt: skip
    settings = settings_from_args(args)
    assert settings == OptimizeSettings(
        optimizer="mipro", auto="heavy", seed=3, max_demos=2, budget=50, reflexion_rounds=2,
        closed_types=False, output_shape="compact", gold_demos=1, demo_tokens=900, minibatch_size=5,
        workers=3, candidates=4, trials=8, demo_threshold=0.7, log_dir=Path("runs/log"), dev_size=9,
        levers=("gleaning",), find_entities=True,
    )  # fmt: skip
    unchanged = [
        field.name
        for field in dataclasses.fields(OptimizeSettings)
        if getattr(settings, field.name) == getattr(DEFAULTS, field.name)
    ]
    assert unchanged == []


# --------------------------------------------------------------------------------------------------
# The production API on a loaded program
# --------------------------------------------------------------------------------------------------


def slow_respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    time.sleep(0.002)  # let worker threads interleave
    return respond(messages, kwargs)


class ThreadedLM(ScriptedLM):
    """Records which threads answered, to show the batch really ran concurrently."""

    def __init__(self) -> None:
        super().__init__(slow_respond)
        self.threads: set[int] = set()

    def forward(self, *args: Any, **kwargs: Any):
        self.threads.add(threading.get_ident())
        return super().forward(*args, **kwargs)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compiled") / "prog"
    compile_with(out, optimizer="bootstrap", candidates=1)
    return out


def test_loaded_extractor_batch_is_thread_safe(compiled):
    extractor = edgewise.load(compiled)
    episodes = [labeled(i) for i in range(10, 30)]
    lm = ThreadedLM()
    with lm_context(lm):
        results = extractor.extract_many([e.episode() for e in episodes], workers=4)
    assert len(lm.threads) > 1
    for episode, result in zip(episodes, results, strict=True):
        assert {(e.source_entity_name, e.target_entity_name) for e in result.edges} == {
            (g.source_entity_name, g.target_entity_name) for g in episode.edges
        }
        assert result.usage["extract"].calls == 1, "each result counts only its own call"


def test_loaded_extractor_aextract_runs_concurrently_with_the_callers_lm(compiled):
    extractor = edgewise.load(compiled)
    episodes = [labeled(i) for i in range(40, 46)]

    async def extract_all():
        with lm_context(ScriptedLM(slow_respond)):
            return await asyncio.gather(*(extractor.aextract(e.episode()) for e in episodes))

    for episode, result in zip(episodes, asyncio.run(extract_all()), strict=True):
        assert [e.target_entity_name for e in result.edges] == [g.target_entity_name for g in episode.edges]


def test_load_accepts_keyword_episodes_and_needs_an_artifact(compiled, tmp_path):
    extractor = edgewise.load(str(compiled))
    with lm_context(ScriptedLM(respond)):
        result = extractor(
            episode_content="Ann7 works at Co7. Ann7 lives in Town7.",
            entities=[{"name": "Ann7"}, {"name": "Co7"}, {"name": "Town7"}],
            reference_time="2025-01-01T00:00:00Z",
        ).result
    assert len(result.edges) == 2
    with pytest.raises(ArtifactError, match="no compiled program"):
        edgewise.load(tmp_path / "missing")


def test_every_shipped_program_loads_by_name_with_no_endpoint_or_key():
    from edgewise.programs.artifact import shipped_programs

    shipped = shipped_programs()
    assert {
        "qwen2.5-coder-1.5b-gold",
        "qwen2.5-coder-0.5b-gold",
        "qwen2.5-coder-1.5b-program",
        "baseline-v1",
    } <= set(shipped)
    for name, directory in shipped.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # compiled with this edgewise and dspy: no version warning
            program = load(name)
        assert isinstance(program, EdgeExtractor)
        manifest = json.loads((directory / MANIFEST_FILE).read_text())
        assert manifest["status"] == "complete"
        if manifest["optimizer"] != "none":  # baseline-v1 is frozen, not compiled: it has no dev scores
            assert manifest["dev_score_after"] >= manifest["dev_score_before"]
        text = "".join(p.read_text() for p in directory.glob("*.json"))  # an adapter is binary
        assert "api_key" not in text and "api_base" not in text and "127.0.0.1" not in text


def test_every_file_of_every_shipped_program_is_package_data():
    """A wheel carries only the package-data patterns: a shipped file they miss (a fine-tuned program's
    adapter) would be absent from an installed program, which then refuses to load."""
    import fnmatch
    import tomllib

    from paths import ROOT

    from edgewise.programs.artifact import shipped_programs

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "edgewise.optimize"
    ]
    for directory in shipped_programs().values():
        for file in directory.iterdir():
            path = f"compiled/{directory.name}/{file.name}"
            assert any(fnmatch.fnmatch(path, pattern) for pattern in patterns), path


def test_gold_search_shows_labeled_episodes_as_demos_and_keeps_them_when_dev_improves(tmp_path):
    report = compile_with(tmp_path / "gold", optimizer="gold", gold_demos=1, candidates=2)

    assert report.after is not None and report.after.edge_f1 == 1.0  # demos make the fake complete
    demos = load(tmp_path / "gold").extract.demos
    assert len(demos) == 1 and demos[0]["gold_episode_id"] in {episode.id for episode in TRAIN}
    assert {edge["relationshipType"] for edge in demos[0]["edges"]} == {"WORKS_AT", "LIVES_IN"}  # the gold
    notes = json.loads((tmp_path / "gold" / MANIFEST_FILE).read_text())["notes"]
    assert notes["selected"] == "compiled" and notes["extract_gold_demo_ids"] == [demos[0]["gold_episode_id"]]
    paired = notes["paired_dev_difference"]
    assert paired["difference"] == pytest.approx(1 / 3, abs=1e-3) and paired["low"] > 0
    assert paired["episodes"] == len(DEV) and paired["level"] == 0.95


def test_the_picked_candidate_is_not_scored_on_dev_a_second_time(tmp_path):
    lm = ScriptedLM(respond)
    report = compile_with(tmp_path / "gold", lm, optimizer="gold", gold_demos=1, candidates=1)

    # dev before (2 episodes) and the one candidate on dev (2): no third pass over dev for "after"
    assert len(lm.calls) == 2 * len(DEV)
    assert report.after is not None and report.after.edge_f1 == 1.0
    assert [score.tp for score in report.after.episode_scores] == [2, 2]
    assert report.usage["after"].calls == 0


def test_a_candidate_whose_gain_is_inside_the_noise_does_not_replace_the_uncompiled_program(tmp_path):
    dev = [labeled(i) for i in (4, 5, 6, 7)]

    def respond_better_on_one(messages, kwargs):
        reply = json.loads(respond(messages, kwargs))
        if "edges" in reply and not re.search(r"Ann4 works", str(messages[-1]["content"])):
            reply["edges"] = reply["edges"][:1]  # the demos help episode 4 only
        return json.dumps(reply)

    report = compile_with(tmp_path / "noise", ScriptedLM(respond_better_on_one), optimizer="gold", dev=dev,
                          gold_demos=1, candidates=1)  # fmt: skip

    assert (
        report.candidate_scores and max(report.candidate_scores) > report.before.mean_f1
    )  # it looked better
    notes = json.loads((tmp_path / "noise" / MANIFEST_FILE).read_text())["notes"]
    assert notes["selected"] == "uncompiled" and notes["paired_dev_difference"]["low"] <= 0
    assert load(tmp_path / "noise").extract.demos == []
    assert report.after == report.before


@pytest.mark.parametrize("optimizer", ["mipro", "gepa"])
def test_instruction_search_can_start_from_gold_demos(tmp_path, optimizer):
    report = compile_with(tmp_path / optimizer, optimizer=optimizer, gold_demos=1, budget=80, auto="light")
    loaded = load(tmp_path / optimizer)
    assert report.after is not None and report.after.edge_f1 == 1.0
    assert [demo.get("gold_episode_id") for demo in loaded.extract.demos][:1] != [None]
    assert json.loads((tmp_path / optimizer / MANIFEST_FILE).read_text())["settings"]["gold_demos"] == 1


def test_the_output_shape_is_compiled_and_loaded_with_the_program(tmp_path):
    def respond_compact(messages, kwargs):
        reply = json.loads(respond(messages, kwargs))
        if "edges" in reply:
            reply["edges"] = [
                {
                    "source": e["sourceEntityName"],
                    "type": e["relationshipType"],
                    "target": e["targetEntityName"],
                    "fact": e["fact"],
                }
                for e in reply["edges"]
            ]
        return json.dumps(reply)

    compile_with(tmp_path / "compact", ScriptedLM(respond_compact), optimizer="gold", gold_demos=1,
                 output_shape="compact")  # fmt: skip
    loaded = load(tmp_path / "compact")
    assert loaded.output_shape == "compact"
    assert set(loaded.extract.demos[0]["edges"][0]) == {
        "source",
        "type",
        "target",
        "fact",
        "validAt",
        "invalidAt",
    }
    with lm_context(ScriptedLM(respond_compact)):
        assert len(loaded(DEV[0].episode()).edges) == 2


@pytest.mark.parametrize("optimizer", ["mipro", "gepa"])
def test_a_budgeted_instruction_search_is_sized_to_end_within_its_budget(tmp_path, optimizer):
    dev = [labeled(i) for i in range(4, 10)]
    report = compile_with(tmp_path / optimizer, optimizer=optimizer, dev=dev, budget=60, minibatch_size=2)
    assert report.status == "complete"  # it planned within the budget instead of being cut off
    assert report.usage["search"].calls <= 60
    assert report.after is not None and report.after.edge_f1 == 1.0


def two_source_dev(count: int) -> list[LabeledEpisode]:
    """`count` dev episodes, a quarter of them from a second source."""
    return [
        labeled(i).model_copy(update={"source": "other" if i % 4 == 0 else "test"})
        for i in range(10, 10 + count)
    ]


def test_a_budgeted_run_selects_on_the_stratified_part_of_dev_its_budget_affords(tmp_path):
    dev = two_source_dev(60)
    lm = ScriptedLM(respond)
    report = compile_with(
        tmp_path / "prog", lm, optimizer="gold", gold_demos=1, candidates=1, dev=dev, budget=100
    )
    # a fifth of the budget is 20 episodes, below the floor of 40: it selects on 40 of the 60
    assert len(report.before.episode_scores) == 40 and len(report.after.episode_scores) == 40
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert "(40 of 60 episodes, stratified by source, seed 0)" in manifest["settings"]["dev"]
    scored = {score.episode_id for score in report.before.episode_scores}
    assert sum(episode.id in scored for episode in dev if episode.source == "other") == 10  # its share kept
    assert len(lm.calls) == 40 + 40  # before, and the one gold candidate: nothing outside the sample


def test_dev_size_sets_the_sample_and_is_recorded(tmp_path, monkeypatch, capsys):
    import edgewise.cli.optimize as cli_optimize

    @contextmanager
    def fake_open_lm(config: LMConfig) -> Iterator[ScriptedLM]:
        yield ScriptedLM(respond, model=config.model)

    monkeypatch.setattr(cli_optimize, "open_lm", fake_open_lm)
    dev = write_jsonl(tmp_path / "dev.jsonl", two_source_dev(8))
    code = main(
        [
            "optimize", "--model", "openai/task-model", "--optimizer", "gold", "--gold-demos", "1",
            "--candidates", "1", "--train", str(write_jsonl(tmp_path / "train.jsonl", TRAIN)), "--dev", str(dev),
            "--dev-size", "4", "--seed", "3", "--out", str(tmp_path / "prog"),
        ]
    )  # fmt: skip
    assert code == 0
    assert "dev edge-F1 (micro, 4 episodes)" in capsys.readouterr().out
    settings = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())["settings"]
    assert settings["dev_size"] == 4 and "(4 of 8 episodes, stratified by source, seed 3)" in settings["dev"]


@pytest.mark.parametrize("optimizer", ["mipro", "gepa"])
def test_an_instruction_search_tunes_only_the_predictors_the_program_calls(tmp_path, optimizer, caplog):
    with caplog.at_level("INFO", logger="dspy"):
        report = compile_with(tmp_path / optimizer, optimizer=optimizer, auto="light", budget=60)
    assert report.after is not None and report.after.edge_f1 == 1.0  # extract was tuned
    untouched, loaded = EdgeExtractor(), load(tmp_path / optimizer)
    assert loaded.extract.signature.instructions != untouched.extract.signature.instructions
    for name in ("reflect", "attributes"):  # no reflexion rounds, no type with attributes: left alone
        assert getattr(loaded, name).signature.instructions == getattr(untouched, name).signature.instructions
    if optimizer == "mipro":  # it proposed and tried instructions for one predictor only
        assert "Predictor 0:" in caplog.text and "Predictor 1:" not in caplog.text
    manifest = json.loads((tmp_path / optimizer / MANIFEST_FILE).read_text())
    assert manifest["settings"]["tuned_predictors"] == ["extract"]


def test_searched_predictors_follow_reflexion_rounds_and_declared_attributes():
    from edgewise.optimize.dispatch import searched_predictors

    with_attributes = labeled(1).model_copy(
        update={
            "edge_types": [{"name": "WORKS_AT", "attributes": [{"name": "role", "description": "job title"}]}]
        }
    )
    with_attributes = LabeledEpisode.model_validate(with_attributes.model_dump(by_alias=True))
    mipro, gepa = OptimizeSettings(optimizer="mipro"), OptimizeSettings(optimizer="gepa")
    assert searched_predictors(mipro, TRAIN) == ("extract",)
    assert searched_predictors(OptimizeSettings(optimizer="mipro", reflexion_rounds=1), TRAIN) == (
        "extract",
        "reflect",
    )
    assert searched_predictors(gepa, [*TRAIN, with_attributes]) == ("extract", "attributes")
    for formulation, tuned in (("per-episode", ("extract", "attributes")), ("in-extraction", ("extract",))):
        student = EdgeExtractor(options=ProgramOptions(attributes=formulation))
        assert searched_predictors(gepa, [*TRAIN, with_attributes], student) == tuned


def test_a_search_that_tunes_the_attribute_step_scores_attributes_too():
    from edgewise.eval.feedback import edge_and_attribute_metric, edge_metric
    from edgewise.optimize.dispatch import search_metric

    assert search_metric(EdgeExtractor().tuned_only(["extract"])) is edge_metric
    assert search_metric(EdgeExtractor().tuned_only(["extract", "attributes"])) is edge_and_attribute_metric


def test_a_predictor_hidden_from_the_search_is_still_saved_and_loaded(tmp_path):
    program = EdgeExtractor().tuned_only(["extract"])
    assert [name for name, _ in program.named_predictors()] == ["extract"]
    assert set(program.tuned_only(None).dump_state()) == {"extract", "reflect", "attributes"}
