"""`edgewise optimize --find-entities`: the entity step compiled with the edge steps, the episodes sent
as text alone and scored through the entities the step found.

The fake model's entity step finds the person and the employer (by a longer name than the gold's) but
misses the town unless its prompt carries demos; its extraction writes the edges between the entities it
is given, by their names. So the uncompiled program finds one of two gold edges through its own entities
(and none by the gold names), and only a program whose entity step was tuned finds both.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from fakes import ScriptedLM
from test_optimize import DEV, TRAIN, gold_edge, output_fields

from edgewise.cli import main
from edgewise.optimize import OptimizeSettings, load, optimize
from edgewise.programs.artifact import MANIFEST_FILE
from edgewise.runtime.lm import lm_context


def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    system, request = str(messages[0]["content"]), str(messages[-1]["content"])
    names = [name for name, _ in output_fields(system)]
    i = int(re.search(r"Ann(\d+) works", request).group(1))
    if "entities" in names:
        found = [f"Ann{i}", f"Co{i} Ltd"] + ([f"Town{i}"] if len(messages) > 2 else [])
        return json.dumps({"entities": [{"name": name, "type": None} for name in found]})
    given = request.split("[[ ## entities ## ]]")[1].split("[[ ##")[0]
    edges = [gold_edge(i, "WORKS_AT", f"Co{i} Ltd")]
    if f"Town{i}" in given:
        edges.append(gold_edge(i, "LIVES_IN", f"Town{i}"))
    return json.dumps({"edges": edges})


def test_the_entity_step_is_compiled_and_scored_through_the_entities_it_found(tmp_path) -> None:
    lm = ScriptedLM(respond)
    settings = OptimizeSettings(optimizer="bootstrap", max_demos=2, find_entities=True)
    with lm_context(lm):
        report = optimize(task_lm=lm, out=tmp_path / "prog", train=TRAIN, dev=DEV, settings=settings,
                          progress=io.StringIO())  # fmt: skip
    assert report.before.edge_f1 == pytest.approx(2 / 3)  # the town was never found
    assert report.after is not None and report.after.edge_f1 == 1.0
    loaded = load(tmp_path / "prog")
    assert loaded.options.entity_step and loaded.find_entities.demos  # the entity step itself was tuned
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert manifest["settings"]["find_entities"] is True
    assert manifest["settings"]["program_options"]["entity_step"] is True
    with lm_context(ScriptedLM(respond)):
        result = loaded(
            DEV[0].model_dump(by_alias=True, exclude={"entities", "edges", "id", "source", "license"})
        )
    assert [entity.name for entity in result.result.entities] == ["Ann4", "Co4 Ltd", "Town4"]
    assert len(result.edges) == 2


def test_finetune_refuses_find_entities_before_training(capsys) -> None:
    code = main(["optimize", "--optimizer", "finetune", "--model", "local/qwen2.5-coder-0.5b", "--out", "x",
                 "--find-entities"])  # fmt: skip
    assert code == 1 and "finetune trains the edge step's adapter only" in capsys.readouterr().err
