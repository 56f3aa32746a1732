"""One `edgewise bench` over a labeled file, run as source-stratified chunks so that no long run is lost.

A bench of several programs over many episodes on a local model takes hours; stopped part way, it keeps
only a partial results.json. This splits the file into N chunks (episode i of each source goes to chunk
(i mod N) + 1, in file order, so every chunk keeps the sources' shares), writes each chunk's episodes to
CHUNK_DIR, and benches them one after the other, each with every program on the same server. A chunk
whose results.json is complete is skipped, so the same command resumes; every finished chunk holds
complete pairs. `benchmarks/paired_from_results.py FOLDERS --episodes DATA` then scores the whole
file as one sample.

    python benchmarks/bench_in_chunks.py runs/results/test-conversational.jsonl --chunks 4 \\
        --out 'benchmarks/results/test-conversational-graphiti-1.5b/chunk-{n}' -- \\
        --models local/qwen2.5-coder-1.5b --programs graphiti-structured,graphiti,default \\
        --baseline graphiti-structured --seed 0

Everything after `--` goes to `edgewise bench` as it is (not --data or --out, which this sets).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path


def chunk_lines(lines: list[str], chunks: int) -> list[list[str]]:
    """The file's non-empty lines in `chunks` parts: the i-th episode of each source in part i mod chunks."""
    parts: list[list[str]] = [[] for _ in range(chunks)]
    seen: dict[str, int] = defaultdict(int)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            source = json.loads(line).get("source", "")
        except (json.JSONDecodeError, AttributeError) as error:
            raise SystemExit(f"line {number}: not a JSON object ({error})") from None
        parts[seen[source] % chunks].append(line)
        seen[source] += 1
    return parts


def is_complete(folder: Path) -> bool:
    """Whether a bench already finished in `folder` (a results.json not marked partial)."""
    results = folder / "results.json"
    if not results.is_file():
        return False
    try:
        return json.loads(results.read_bytes()).get("partial") is False
    except json.JSONDecodeError:
        return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, bench_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="the labeled JSONL file to bench")
    parser.add_argument("--chunks", type=int, required=True, help="how many parts. Example: --chunks 4")
    parser.add_argument(
        "--out",
        required=True,
        help="each chunk's bench folder, with {n} for its number (1..N). Example: --out 'runs/b/chunk-{n}'",
    )
    parser.add_argument(
        "--chunk-dir",
        type=Path,
        default=Path("runs/chunks"),
        help="where the chunks' episode files go, as <data stem>-<n>.jsonl (default runs/chunks)",
    )
    parser.add_argument(
        "--edgewise", default=os.environ.get("EDGEWISE", "edgewise"), help="the edgewise command ($EDGEWISE)"
    )
    args = parser.parse_args(own)
    if args.chunks < 1:
        parser.error("--chunks must be at least 1")
    if "{n}" not in args.out:
        parser.error("--out needs {n}, the chunk's number, so that every chunk has its own folder")
    clash = {"--data", "--out", "--split", "--limit"} & {a.split("=", 1)[0] for a in bench_args}
    if clash:
        parser.error(f"{', '.join(sorted(clash))} after -- : this script sets the chunk's data and folder")

    parts = chunk_lines(args.data.read_text(encoding="utf-8").splitlines(keepends=True), args.chunks)
    args.chunk_dir.mkdir(parents=True, exist_ok=True)
    for n, part in enumerate(parts, start=1):
        out = Path(args.out.format(n=n))
        data = args.chunk_dir / f"{args.data.stem}-{n}.jsonl"
        if is_complete(out):
            print(f"chunk {n}/{args.chunks}: complete in {out}, skipped", flush=True)
            continue
        if not part:
            print(f"chunk {n}/{args.chunks}: no episodes, skipped", flush=True)
            continue
        data.write_text(
            "".join(line if line.endswith("\n") else line + "\n" for line in part), encoding="utf-8"
        )
        command = [args.edgewise, "bench", *bench_args, "--data", str(data), "--out", str(out)]
        print(
            f"{time.strftime('%H:%M:%S')} chunk {n}/{args.chunks}: {len(part)} episodes -> {out}", flush=True
        )
        status = subprocess.call(command)
        if status != 0:
            print(f"chunk {n}/{args.chunks}: edgewise bench exited with {status}; stopping", flush=True)
            return status
        print(f"{time.strftime('%H:%M:%S')} chunk {n}/{args.chunks}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
