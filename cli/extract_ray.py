"""`edgewise extract --engine ray`: the command's flags mapped onto `edgewise.scale.ray_driver.extract_files`.

The driver does the run (the batch contract, the journal, Ray); this layer only turns flags into
its arguments and its summary into the command's exit status: 0 every line is a result, 2 some
are errors, 1 nothing ran or the run stopped (an error, printed by `edgewise.cli.main`).
"""

from __future__ import annotations

import argparse

from edgewise.cli import EXIT_OK, EXIT_SOME_FAILED
from edgewise.cli.options import config_from_args, program_flags
from edgewise.domain.errors import UsageError
from edgewise.scale.ray_driver import DEFAULT_ACTORS, MISSING_RAY, extract_files

__all__ = ["DEFAULT_ACTORS", "MISSING_RAY", "run_ray"]


def server_list(api_base: str | None) -> list[str]:
    """The model servers `--api-base` names: several may be given, separated by commas."""
    return [base.strip() for base in (api_base or "").split(",") if base.strip()]


def run_ray(args: argparse.Namespace) -> int:
    """Extract every line of --input on Ray; the exit status is the local engine's (0, 2, or 1 via an error)."""
    if args.input is None or args.output is None:
        raise UsageError(
            "--engine ray reads --input (a file or a folder of .jsonl and .parquet files) and writes "
            "--output (.jsonl, or .parquet); stdin and stdout are for --engine local"
        )
    config = config_from_args(args)
    summary = extract_files(
        args.input,
        args.output,
        program=args.baseline or args.program,
        lm=config,
        api_bases=server_list(config.api_base),
        actors=args.actors or DEFAULT_ACTORS,
        workers=args.workers,
        address=args.address,
        resume=args.resume,
        episode_timeout_s=args.episode_timeout,
        **program_flags(args),
        progress=not args.no_progress,
        summary_json=args.summary_json,
    )
    return EXIT_OK if summary.all_done else EXIT_SOME_FAILED
