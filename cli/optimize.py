"""`edgewise optimize`: compile a tuned extractor on a train split, select on dev, save the artifact."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from edgewise.cli import add_command
from edgewise.cli.flags import dest
from edgewise.cli.options import add_lm_arguments, add_open_types_argument, config_from_args
from edgewise.domain.errors import UsageError
from edgewise.optimize.budget import DEV_SHARE_OF_BUDGET, MIN_SELECTION_DEV
from edgewise.optimize.finetune.errors import FinetuneError
from edgewise.optimize.finetune.settings import PROMPTS, FinetuneSettings
from edgewise.optimize.program_search import LEVERS
from edgewise.optimize.run import optimize
from edgewise.optimize.settings import AUTO_LEVELS, DEFAULTS, OPTIMIZERS, OptimizeSettings
from edgewise.runtime.lm import LMConfig, lm_context, open_lm
from edgewise.signatures.extract_edges import OUTPUT_SHAPES

FINETUNE: Final = "finetune"

HELP = "compile a tuned program (instructions and demos) and save it"
DESCRIPTION = """Tune the edge extractor's instructions and few-shot demos for one model with a DSPy optimizer,
using edge-F1 on --train for the search and on --dev for selection, and save the best program as a
directory (program.json + manifest.json) that `edgewise extract --program DIR` and
`edgewise.load(DIR)` use. Progress goes to stderr; a summary (dev edge-F1 before and after, LM calls,
tokens, wall time) to stdout. Ctrl-C, a crash or an exhausted --budget still leaves the best program
found so far in --out. No API key or endpoint is written to the artifact.

--optimizer finetune instead trains a LoRA adapter of a local model's weights on the train episodes'
gold replies (pip install 'edgewise[finetune]') and saves the program with the adapter beside it;
checkpoints go to <--out>.training/, and the same command resumes a run that was stopped."""

EXAMPLES = """examples:
  edgewise optimize --model local --optimizer bootstrap --train smoke --dev smoke --out /tmp/prog
  edgewise optimize --model local --optimizer gold --gold-demos 3 --candidates 4 --out runs/gold
  edgewise optimize --model local/qwen2.5-coder-0.5b --teacher-model local/qwen2.5-coder-1.5b \\
      --optimizer mipro --auto light --budget 2000 --out runs/qwen05-mipro
  edgewise optimize --model openai/gpt-4o-mini --reflection-model openai/gpt-4o --optimizer gepa \\
      --train train --dev dev --workers 8 --out runs/gpt4omini-gepa
  edgewise optimize --optimizer finetune --model local/qwen2.5-coder-0.5b --train train --dev dev \\
      --out runs/ft-0.5b --max-minutes 60"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """The `optimize` subcommand; every default and every default its help names is `DEFAULTS`'s."""
    own_candidates = OptimizeSettings.DEFAULT_CANDIDATES
    parser = add_command(subparsers, "optimize", HELP, DESCRIPTION, EXAMPLES)
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        help="directory for the compiled program; replaced atomically. Example: --out runs/prog",
    )
    parser.add_argument(
        "--optimizer",
        choices=(*OPTIMIZERS, FINETUNE),
        default=DEFAULTS.optimizer,
        help="mipro = MIPROv2 (instructions and demos), gepa = GEPA (instructions, from the metric's "
        "feedback), bootstrap = bootstrapped demos with random search, gold = seeded picks of "
        "labeled training episodes as demos (no teacher), each scored on dev, program = what the model is "
        "asked to do: input order, pairwise formulation, type signatures learned from --train, dates from "
        "facts, a precision step and (with --gold-demos) gold demos, each kept only when its paired dev "
        "interval is above 0, finetune = a LoRA adapter of the local model's weights trained on the train "
        "episodes' gold replies (the `finetune` extra; see the finetune flags) "
        f"(default {DEFAULTS.optimizer}). Example: --optimizer program --dev-size 40",
    )
    setting_argument(parser, "--auto", "search size for mipro and gepa", "medium", choices=AUTO_LEVELS)
    parser.add_argument(
        "--train",
        default="train",
        help="split name or JSONL file the optimizer learns from (default train). Example: --train smoke",
    )
    parser.add_argument(
        "--dev",
        default="dev",
        help="split name or JSONL file candidates are selected on and the result is scored on (default dev); "
        "keep the test split out. Example: --dev data/episodes/dev.jsonl",
    )
    parser.add_argument(
        "--dev-size",
        type=int,
        default=DEFAULTS.dev_size,
        help="score and select on this many --dev episodes, a sample stratified by source (--seed); "
        f"default: all of them, or with --budget what it affords ({DEV_SHARE_OF_BUDGET * 100:.0f}%% of it, at least "
        f"{MIN_SELECTION_DEV}). Example: --dev-size 40",
    )
    setting_argument(
        parser,
        "--seed",
        "random seed: the order bootstrap tries training episodes in, mipro's and gepa's sampling",
        "7",
    )
    parser.add_argument(
        "--max-demos",
        type=int,
        default=DEFAULTS.max_demos,
        help=f"most bootstrapped demos per step (default {DEFAULTS.max_demos}; 0 = instructions only, "
        "mipro/gepa). Example: --max-demos 2",
    )
    parser.add_argument(
        "--gold-demos",
        type=int,
        default=DEFAULTS.gold_demos,
        help="gold: demos per candidate (default: --max-demos); mipro and gepa: start from this many "
        f"gold demos and tune the instructions around them (default {DEFAULTS.gold_demos}: none). "
        "Example: --gold-demos 3",
    )
    setting_argument(
        parser,
        "--demo-tokens",
        "estimated prompt tokens all gold demos together may take; recorded in the manifest",
        "1500",
    )
    parser.add_argument(
        "--output-shape",
        choices=OUTPUT_SHAPES,
        default=DEFAULTS.output_shape,
        help="the reply the model writes: seed (the seed's edge objects), compact (short keys, subject "
        "before type before object, dates as days), compact-text-dates (compact, dates also as the text's "
        f"words); results always have the seed's shape (default {DEFAULTS.output_shape}). "
        "Example: --output-shape compact",
    )
    parser.add_argument(
        "--levers",
        type=lambda text: tuple(part.strip() for part in text.split(",") if part.strip()),
        default=DEFAULTS.levers,
        help=f"program: the levers to try, in this order (default all: {','.join(LEVERS)}); "
        "lever=value tries only that alternative of a lever with several. "
        "Example: --levers formulation=entities,type_signatures,retype,gleaning",
    )
    parser.add_argument(
        "--minibatch-size",
        type=int,
        default=DEFAULTS.minibatch_size,
        help=f"mipro: dev episodes a trial is scored on (default {DEFAULTS.minibatch_size}); the best trials "
        "are scored on all of dev. Example: --minibatch-size 20",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULTS.budget,
        help="stop the search after this many LM calls (task and teacher models together, cached replies "
        "included) and keep the best program found; the dev scoring before and after is not counted, and "
        "sizes the dev sample (see --dev-size). Example: --budget 500",
    )
    add_open_types_argument(parser)
    parser.add_argument(
        "--find-entities",
        action="store_true",
        help="compile a program with an entity step, for episodes that come as text alone: train and dev "
        "episodes are sent without their entities and scored through the entities the step found, so the "
        "search tunes the entity step with the rest (not with finetune). Example: --find-entities",
    )
    setting_argument(
        parser, "--reflexion-rounds", "rounds of missed-fact review in the compiled program", "1"
    )
    setting_argument(parser, "--workers", "episodes scored concurrently", "8")
    parser.add_argument(
        "--candidates",
        type=int,
        default=DEFAULTS.candidates,
        help=f"bootstrap: shuffled demo sets tried after the unshuffled one (default {own_candidates['bootstrap']}, "
        f"so {own_candidates['bootstrap'] + 1} candidates; 0 tries the unshuffled one only); mipro: instruction and "
        "demo candidates, replacing --auto (needs --trials); gold: demo sets scored on dev (default "
        f"{own_candidates['gold']}). Example: --candidates 4",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=DEFAULTS.trials,
        help="mipro: search trials when --candidates replaces --auto. Example: --trials 8",
    )
    setting_argument(
        parser,
        "--demo-threshold",
        "edge-F1 a teacher's answer must reach to become a demo",
        "0.8",
        type=float,
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        default=DEFAULTS.log_dir,
        help="the optimizer's own log: mipro saves every scored candidate there, gepa its state (run again "
        "with the same --log-dir to resume). Example: --log-dir runs/gepa-log",
    )
    teacher = parser.add_argument_group("teacher model (optional, stronger)")
    teacher.add_argument(
        "--teacher-model",
        "--reflection-model",
        dest="teacher_model",
        help="model that bootstraps demos (bootstrap, mipro), proposes instructions (mipro) and reflects (gepa); "
        "default: the task model. Example: --teacher-model local/qwen2.5-coder-1.5b",
    )
    teacher.add_argument(
        "--teacher-api-base",
        help="OpenAI-compatible server of the teacher model. Example: --teacher-api-base http://127.0.0.1:8001/v1",
    )
    teacher.add_argument(
        "--teacher-api-key",
        help="API key of the teacher model (default: the provider's own variable). Example: --teacher-api-key sk-...",
    )
    add_finetune_arguments(parser)
    add_lm_arguments(parser)
    parser.set_defaults(func=run)


def add_finetune_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `--optimizer finetune`; every default is `FinetuneSettings`'s."""
    group = parser.add_argument_group(
        "finetune (--optimizer finetune --model local/<name>; --train, --dev, --dev-size and --seed apply)"
    )
    fields = FinetuneSettings.model_fields

    def flag(name: str, what: str, example: str, *, field: str | None = None, **options: Any) -> None:
        """A flag setting the field of its name (`field` where that differs), as `ft_<field>`."""
        field = field or dest(name)
        default = fields[field].default
        shown = ",".join(default) if isinstance(default, tuple) else default
        if "choices" not in options:
            options["metavar"] = dest(name).upper()
        group.add_argument(
            name,
            dest=f"ft_{field}",
            default=default,
            help=f"{what} (default {shown}). Example: {name} {example}",
            **options,
        )

    flag(
        "--prompt",
        "compact: the extract step with a one-line instruction and no demos; full: the "
        "program's request as it is",
        "full",
        choices=PROMPTS,
    )
    flag("--rank", "LoRA rank", "8", type=int)
    flag("--alpha", "LoRA alpha (the adapter's scale is alpha / rank)", "16", type=float)
    flag(
        "--target-modules",
        "the linear layers that carry adapters, comma-separated",
        "q_proj,v_proj",
        type=lambda text: tuple(part.strip() for part in text.split(",") if part.strip()),
    )
    flag("--top-layers", "only the top N blocks carry adapters (None: all)", "8", type=int)
    flag("--lr", "peak learning rate", "1e-4", field="learning_rate", type=float)
    flag("--epochs", "passes over the training examples", "3", type=int)
    flag("--batch-size", "examples per optimizer step", "8", type=int)
    flag("--seq-len", "longest example in tokens; longer ones are left out", "1024", type=int)
    flag(
        "--max-minutes",
        "stop after a checkpoint once this many minutes have passed; the same command resumes",
        "60",
        type=float,
    )
    flag("--checkpoint-minutes", "minutes between checkpoints", "5", type=float)
    group.add_argument(
        "--program",
        help="the program whose extract requests are trained on and that ships with the adapter (default: the "
        "model's default program). Example: --program qwen2.5-coder-1.5b-program-v2",
    )
    group.add_argument(
        "--all-episodes",
        action="store_true",
        help="also train on episodes whose labels are partial (by default only exhaustively labeled ones). "
        "Example: --all-episodes",
    )
    group.add_argument(
        "--fresh",
        action="store_true",
        help="discard the checkpoints of an earlier run into --out instead of resuming it. Example: --fresh",
    )


def setting_argument(
    parser: argparse.ArgumentParser, flag: str, what: str, example: str, **options: object
) -> None:
    """A flag whose default is the `OptimizeSettings` field of its name, and whose help says so."""
    default = getattr(DEFAULTS, dest(flag))
    if "choices" not in options:
        options.setdefault("type", type(default))
    parser.add_argument(
        flag, default=default, help=f"{what} (default {default}). Example: {flag} {example}", **options
    )


def teacher_config(args: argparse.Namespace, task: LMConfig) -> LMConfig | None:
    """The teacher's settings: its own model and endpoint, the task model's limits and retries."""
    if not args.teacher_model:
        return None
    return task.model_copy(
        update={
            "model": args.teacher_model,
            "api_base": args.teacher_api_base,
            "api_key": args.teacher_api_key,
        }
    )


def manifest_model(config: LMConfig) -> str:
    """The model string a manifest records: `local` is spelled out as the local model it stands for."""
    if config.is_local:
        from edgewise.local.local_models import resolve_local_model

        return f"local/{resolve_local_model(config.model).name}"
    return config.model


def settings_from_args(args: argparse.Namespace) -> OptimizeSettings:
    """The run's settings from the flags (checked here, before any model is opened).

    Each setting has the flag of its name (`--max-demos` sets `max_demos`), so a setting added without
    one fails here rather than running on its default; `closed_types` is the one `--open-types` turns off.
    """
    named = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(OptimizeSettings)
        if field.name != "closed_types"
    }
    return OptimizeSettings(**named, closed_types=not args.open_types)


def finetune_settings_from_args(args: argparse.Namespace) -> FinetuneSettings:
    """The fine-tuning settings from the flags; `--dev-size` and `--seed` are shared with the searches."""
    values = {
        name: getattr(args, f"ft_{name}")
        for name in FinetuneSettings.model_fields
        if hasattr(args, f"ft_{name}")
    }
    if args.dev_size is not None:
        values["dev_size"] = args.dev_size
    try:
        return FinetuneSettings(**values, seed=args.seed, exhaustive_only=not args.all_episodes)
    except ValidationError as error:
        raise FinetuneError(
            f"finetune settings: {error.errors()[0]['loc'][0]}: {error.errors()[0]['msg']}"
        ) from None


def run_finetune(args: argparse.Namespace) -> int:
    """`--optimizer finetune`: train the adapter; no model server is started."""
    from edgewise.optimize.finetune.run import finetune

    if args.find_entities:
        raise UsageError(
            "--find-entities compiles an entity step with the prompt searches; finetune trains the edge "
            "step's adapter only (a tuned program takes text alone at run time: edgewise extract --find-entities)"
        )

    settings = finetune_settings_from_args(args)
    report = finetune(
        model=manifest_model(config_from_args(args)),
        train=args.train,
        dev=args.dev,
        out=args.out,
        settings=settings,
        program=args.program,
        progress=sys.stderr,
        fresh=args.fresh,
    )
    print(report.summary())
    return 0


def run(args: argparse.Namespace) -> int:
    if args.optimizer == FINETUNE:
        return run_finetune(args)
    settings = settings_from_args(args)
    config = config_from_args(args)
    teacher = teacher_config(args, config)
    same_model = teacher is not None and (manifest_model(teacher), teacher.api_base) == (
        manifest_model(config),
        config.api_base,
    )
    with ExitStack() as stack:
        task_lm = stack.enter_context(open_lm(config))
        teacher_lm = task_lm if same_model else stack.enter_context(open_lm(teacher)) if teacher else None
        stack.enter_context(lm_context(task_lm))
        report = optimize(
            task_lm=task_lm,
            teacher_lm=teacher_lm,
            task_model=manifest_model(config),
            teacher_model=manifest_model(teacher) if teacher else None,
            secrets=[config.api_key, teacher.api_key if teacher else None],
            train=args.train,
            dev=args.dev,
            out=args.out,
            settings=settings,
            progress=sys.stderr,
            max_samples=config.local_slots if config.is_local else None,
        )
    print(report.summary())
    return 0
