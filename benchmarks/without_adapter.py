"""A fine-tuned program folder without its adapter: the same program.json, the manifest less `adapter`.

Benched beside the tuned program, it runs the same requests on the base weights, so the pair isolates
what the adapter does (quality, and latency on the same server build).

    python benchmarks/without_adapter.py runs/qwen2.5-coder-0.5b-lora runs/qwen2.5-coder-0.5b-compact
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness import script_parser

from edgewise.programs.artifact import MANIFEST_FILE, PROGRAM_FILE


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("tuned", type=Path, help="the fine-tuned program folder")
    parser.add_argument("out", type=Path, help="the folder to write (replaced)")
    args = parser.parse_args()
    manifest = json.loads((args.tuned / MANIFEST_FILE).read_text(encoding="utf-8"))
    if manifest.pop("adapter", None) is None:
        raise SystemExit(f"{args.tuned} has no adapter")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    shutil.copyfile(args.tuned / PROGRAM_FILE, args.out / PROGRAM_FILE)
    (args.out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    print(f"{args.out}: {args.tuned} without its adapter")


if __name__ == "__main__":
    main()
