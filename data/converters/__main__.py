"""`python -m edgewise.data.converters [--raw DIR] [--out DIR]`: rebuild data/episodes/*.jsonl."""

from __future__ import annotations

import argparse
from pathlib import Path

from edgewise.data.converters.pipeline import default_out_dir, default_raw_dir, main


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m edgewise.data.converters",
        description="Rebuild the labeled episode files (train, dev, test, smoke) from the raw public data.",
    )
    parser.add_argument(
        "--raw", type=Path, default=None, help=f"raw data folder (default: {default_raw_dir()})"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"output folder (default: {default_out_dir()})"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = _parse()
    raise SystemExit(main(arguments.raw, arguments.out))
