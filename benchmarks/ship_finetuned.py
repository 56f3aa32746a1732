"""Judge a fine-tuned program on dev from its bench, record the verdict in its manifest, ship it if kept.

`edgewise optimize --optimizer finetune` trains an adapter but does not judge it: the judgement needs
the adapter served by llama-server on the dev split, next to the program without it, which `edgewise
bench` does (`benchmarks/results/finetune-0.5b/command.sh`, step 3). This reads that bench's folders
(no model call), pairs the tuned program with the baseline on the given dev episodes, and writes the
comparison into a copy of the program's manifest the way a compile's dev selection writes its own
(`optimize.selection`): `notes.selected`, `notes.paired_dev_difference`, and the micro edge-F1 before
and after as `dev_score_before` / `dev_score_after`, with `notes.dev_judgement` naming the bench. The
copy goes to `optimize/compiled/NAME` only when the tuned program is better beyond noise on all the
episodes and worse beyond noise on none of their sources (`notes.paired_dev_difference_by_source`):
an adapter trained on one kind of episode can win the pooled score on the strength of that kind while
it fails every other, and a shipped program serves them all. Otherwise nothing is written there, and
the exit status is 1.

    python benchmarks/ship_finetuned.py benchmarks/results/finetune-0.5b/program \\
        benchmarks/results/finetune-0.5b/dev-*-chunk-* --tuned runs/qwen2.5-coder-0.5b-lora \\
        --baseline default --episodes runs/results/dev-no-attributes.jsonl --name qwen2.5-coder-0.5b-lora
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from paired_from_results import merged_runs

from edgewise.eval.bench_records import EpisodeRun
from edgewise.eval.intervals import DEFAULT_RESAMPLES
from edgewise.eval.paired import PairedDifference, paired_on_shared
from edgewise.eval.records import f1_of
from edgewise.optimize.manifest import paired_record
from edgewise.programs.artifact import MANIFEST_FILE, Manifest, read_manifest

COMPILED_DIR = Path(__file__).resolve().parents[1] / "optimize" / "compiled"


def micro_f1(episodes: list[EpisodeRun]) -> float:
    """Edge-F1 pooled over the episodes' counts, as the dev score of a compile is."""
    return f1_of(*(sum(getattr(e, part) for e in episodes) for part in ("tp", "fp", "fn")))


def _paired(baseline: list[EpisodeRun], tuned: list[EpisodeRun]) -> PairedDifference:
    paired = paired_on_shared(baseline, tuned, n_resamples=DEFAULT_RESAMPLES, seed=0)
    assert paired is not None  # every wanted episode is in both
    return paired


def judged_manifest(
    program_dir: Path, results_dirs: list[Path], *, tuned: str, baseline: str, ids: list[str]
) -> tuple[Manifest, PairedDifference]:
    """The program's manifest with the paired dev verdict of `tuned` against `baseline` written in."""
    manifest = read_manifest(program_dir)
    model = manifest.task_model
    runs = merged_runs(results_dirs)
    for program in (baseline, tuned):
        if (model, program) not in runs:
            raise SystemExit(f"{program!r} was not benched on {model} in these folders")
    wanted = set(ids)
    order = {episode_id: index for index, episode_id in enumerate(ids)}
    chosen = {  # in the episodes file's order, as paired_from_results --episodes pairs them
        program: sorted(
            (e for e in runs[(model, program)].episodes if e.id in wanted), key=lambda e: order[e.id]
        )
        for program in (baseline, tuned)
    }
    for program, episodes in chosen.items():
        missing = wanted - {e.id for e in episodes}
        if missing:
            raise SystemExit(
                f"{program!r} has no result for {len(missing)} dev episode(s), e.g. {min(missing)}"
            )
    paired = _paired(chosen[baseline], chosen[tuned])
    by_source = {
        source: _paired(
            [e for e in chosen[baseline] if e.source == source],
            [e for e in chosen[tuned] if e.source == source],
        )
        for source in sorted({e.source for e in chosen[baseline]})
    }
    worse = sorted(source for source, difference in by_source.items() if difference.high < 0)
    notes = dict(manifest.notes)
    notes["paired_dev_difference"] = paired_record(paired)
    notes["paired_dev_difference_by_source"] = {source: paired_record(d) for source, d in by_source.items()}
    notes["selected"] = "compiled" if paired.better and not worse else "uncompiled"
    notes["dev_judgement"] = {
        "by": "edgewise bench, the adapter served by llama-server",
        "baseline": baseline,
        "results": [str(folder) for folder in results_dirs],
    }
    return manifest.model_copy(
        update={
            "notes": notes,
            "dev_score_before": round(micro_f1(chosen[baseline]), 4),
            "dev_score_after": round(micro_f1(chosen[tuned]), 4),
        }
    ), paired


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "program_dir", type=Path, help="the fine-tuned program folder (manifest, program, adapter)"
    )
    parser.add_argument(
        "results_dirs", type=Path, nargs="+", help="the dev bench's folders (`edgewise bench --out`)"
    )
    parser.add_argument(
        "--tuned", required=True, help="the tuned program's name in the bench (its --programs entry)"
    )
    parser.add_argument(
        "--baseline", default="default", help="the program without the adapter (default: default)"
    )
    parser.add_argument("--episodes", type=Path, required=True, help="the dev episodes judged on (JSONL)")
    parser.add_argument("--name", required=True, help="the shipped program's name: optimize/compiled/NAME")
    parser.add_argument("--compiled-dir", type=Path, default=COMPILED_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    ids = [
        json.loads(line)["id"]
        for line in args.episodes.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    manifest, paired = judged_manifest(
        args.program_dir, args.results_dirs, tuned=args.tuned, baseline=args.baseline, ids=ids
    )
    lines = [f"{args.tuned} against {args.baseline} on {paired.episodes} dev episodes: {paired.text()}"]
    for source, record in manifest.notes["paired_dev_difference_by_source"].items():
        lines.append(
            f"  {source} ({record['episodes']}): {record['difference']:+.3f} [{record['low']:+.3f}, {record['high']:+.3f}]"
        )
    print("\n".join(lines))
    if manifest.notes["selected"] != "compiled":
        reason = "not better beyond noise" if not paired.better else "worse beyond noise on a source"
        print(f"{reason}: not shipped", file=sys.stderr)
        return 1
    target = args.compiled_dir / args.name
    if target.exists():
        raise SystemExit(f"{target} exists; remove it first")
    with tempfile.TemporaryDirectory(prefix=".", dir=args.compiled_dir) as staging:
        folder = Path(staging) / args.name
        shutil.copytree(args.program_dir, folder)
        (folder / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        folder.rename(target)
    print(f"shipped as {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
