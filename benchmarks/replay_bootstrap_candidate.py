"""Error analysis of a bootstrap search: rebuild its unshuffled candidate (seed -1) and score it beside
the uncompiled program, per dev episode.

It replays `bash benchmarks/run_results.sh` step 5 (the 1.5B compile) from DSPy's disk cache, which
that run filled: every request is answered from the cache, and the LM points at a closed port so that
a cache miss fails at once instead of starting a model. Run it on the machine that ran step 5:

    python benchmarks/replay_bootstrap_candidate.py [--train runs/results/train-40.jsonl]
        [--dev runs/results/dev-10.jsonl] [--max-demos 3] [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import random
from collections import Counter

import dspy
from harness import script_parser

from edgewise.data import load_episodes
from edgewise.data.loader import to_examples
from edgewise.eval.feedback import edge_metric
from edgewise.eval.scoring import score_episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.runtime.lm import LOCAL_TIMEOUT_S, LMConfig, build_lm, lm_context

CLOSED_PORT = "http://127.0.0.1:9/v1"


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--train", default="runs/results/train-40.jsonl", help="the search's train file")
    parser.add_argument("--dev", default="runs/results/dev-10.jsonl", help="the search's dev file")
    parser.add_argument("--max-demos", type=int, default=3, help="the search's --max-demos")
    parser.add_argument("--seed", type=int, default=0, help="the search's --seed (it shuffles train)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="the local model's server alias")
    args = parser.parse_args()

    config = LMConfig(model="local", response_format="json_schema", timeout_s=LOCAL_TIMEOUT_S, num_retries=0)
    lm = build_lm(config, model_name=f"openai/{args.model}", api_base=CLOSED_PORT)
    train = to_examples(load_episodes(args.train))
    random.Random(args.seed).shuffle(train)  # as `edgewise optimize` does before the search
    dev = load_episodes(args.dev)
    with lm_context(lm):
        bootstrap = dspy.BootstrapFewShot(
            metric=edge_metric,
            metric_threshold=0.5,
            max_bootstrapped_demos=args.max_demos,
            max_labeled_demos=0,
        )
        candidate = bootstrap.compile(EdgeExtractor(), trainset=train)
        for index, demo in enumerate(candidate.extract.demos, 1):
            types = [edge.relationshipType for edge in demo["edges"]]
            print(f"demo {index}: {len(demo['episode_content'])} characters, edges {types}")
        for name, program in (("uncompiled", EdgeExtractor()), ("candidate", candidate)):
            totals: Counter[str] = Counter()
            for labeled in dev:
                edges = program(labeled.episode()).edges
                score = score_episode(labeled, edges)
                totals.update(tp=score.tp, fp=score.fp, fn=score.fn, empty=not edges)
                kinds = sorted({edge.relationship_type for edge in edges})
                print(
                    f"{name:10} {labeled.id:34} tp {score.tp} fp {score.fp} fn {score.fn} predicted {kinds}"
                )
            f1 = 2 * totals["tp"] / max(1, 2 * totals["tp"] + totals["fp"] + totals["fn"])
            print(f"{name}: {dict(totals)}; edge-F1 {f1:.3f}")


if __name__ == "__main__":
    main()
