"""A compiled program with some of its options changed, saved as a program folder to bench beside it.

It keeps what the program learned (its type signatures, demos, and each predictor's tuned instructions
where the changed option leaves that predictor's inputs and outputs as they were) and changes only
the options given, so a bench of the program and its variants on the same episodes isolates the
options' effect. The manifest names the program it came from and what changed.

    python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/attributes/per-episode \\
        --set attributes=per-episode
    python benchmarks/program_variant.py baseline-v1 runs/attributes/in-extraction-default \\
        --set attributes=in-extraction
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import script_parser

from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import FLAT_NAMES, ProgramOptions
from edgewise.optimize.program_search import build_program
from edgewise.programs.artifact import new_manifest, read_manifest, resolve_artifact_dir, save
from edgewise.programs.names import resolve_program


def variant(source: EdgeExtractor, changes: dict[str, Any]) -> EdgeExtractor:
    """`source` with `changes` to its options, keeping its learned state where it still applies.

    A predictor keeps its tuned instructions, followed by what the changed options add to the
    untuned ones (the fact span's task, the speaker marks' question).
    """
    options = ProgramOptions.model_validate(source.options.model_dump() | changes)
    program = build_program(source, options, source.type_signatures)
    untuned = build_program(source, source.options, source.type_signatures)
    for name, predictor in program.named_predictors():
        before = getattr(source, name, None)
        if before is None:
            continue
        same_outputs = set(before.signature.output_fields) == set(predictor.signature.output_fields)
        inputs_kept = set(before.signature.input_fields) <= set(predictor.signature.input_fields)
        if same_outputs and inputs_kept:
            own = getattr(untuned, name).signature.instructions
            now = predictor.signature.instructions
            added = now[len(own) :] if now.startswith(own) else ""
            predictor.signature = predictor.signature.with_instructions(before.signature.instructions + added)
    return program


def parse_changes(pairs: list[str]) -> dict[str, Any]:
    """`name=value` pairs as option values, typed as `ProgramOptions` declares them."""
    changes: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in FLAT_NAMES or not value:
            raise SystemExit(f"--set {pair!r}: expected NAME=VALUE, NAME one of {', '.join(FLAT_NAMES)}")
        changes[name] = {"true": True, "false": False}.get(value.lower(), value)
    return changes


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("program", help="a shipped program name or a compiled program folder")
    parser.add_argument("out", type=Path, help="the folder to save the variant in")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="an option to change"
    )
    args = parser.parse_args()
    changes = parse_changes(args.set)
    source = resolve_program(args.program)
    if not isinstance(source, EdgeExtractor):
        raise SystemExit(f"{args.program} is not an edgewise program (a baseline prompt has no options)")
    manifest = read_manifest(resolve_artifact_dir(args.program))
    program = variant(source, changes)
    settings = manifest.settings | {"program_options": program.options.model_dump()}
    notes = {"variant_of": args.program, "changed_options": changes}
    save(program, args.out, new_manifest(program, task_model=manifest.task_model, optimizer=manifest.optimizer,
                                         settings=settings, notes=notes))  # fmt: skip
    print(f"{args.out}: {args.program} with {', '.join(f'{k}={v}' for k, v in changes.items())}")


if __name__ == "__main__":
    main()
