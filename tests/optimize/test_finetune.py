"""`edgewise optimize --optimizer finetune`, offline, on a tiny Qwen2 with random weights.

The tiny model (hidden size 32, 2 blocks, a byte-level BPE vocabulary of 3,000 tokens
learned from the examples) is written as a GGUF base with the `gguf` package, its weight matrices
in Q8_0 as the shipped models' are quantized, and goes through the whole path: training examples,
a few LoRA steps, the adapter GGUF, the manifest, loading the program folder, and llama-server
serving the base with the adapter. The request tests need no training packages; the training tests
need the `finetune` extra and are skipped without it, unless EDGEWISE_REQUIRE_FINETUNE is set (CI
sets it), where a missing package fails.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import sys
import urllib.request
from pathlib import Path
from typing import Any, Final

import dspy
import numpy as np
import pytest
from fakes import SchemaLM
from paths import ROOT

from edgewise.cli import main
from edgewise.data.loader import load_episodes
from edgewise.domain.gold import LabeledEpisode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.vocabulary import VocabularyJSONAdapter
from edgewise.optimize.finetune.data import COMPACT_INSTRUCTIONS, training_data, training_program
from edgewise.optimize.finetune.errors import FinetuneError
from edgewise.optimize.finetune.settings import FinetuneSettings
from edgewise.programs.artifact import MANIFEST_FILE, ArtifactError, load
from edgewise.programs.names import resolve_program

TRAINING_PACKAGES: Final = ("torch", "transformers", "peft", "gguf", "accelerate")
SMOKE: Final = ROOT / "data" / "episodes" / "smoke.jsonl"
SETTINGS: Final = FinetuneSettings(
    rank=4, alpha=8.0, epochs=3, batch_size=2, learning_rate=3e-2, warmup_steps=0, seq_len=4096, dev_size=2
)
"""3 epochs of 2 steps on 4 examples: enough for the loss to move, a few seconds on a CPU."""


def require_training_packages() -> None:
    """Skip without the `finetune` extra; fail where EDGEWISE_REQUIRE_FINETUNE says it is installed."""
    missing = [name for name in TRAINING_PACKAGES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = f"fine-tuning needs the finetune extra ({', '.join(missing)} missing): pip install 'edgewise[finetune]'"
    if os.environ.get("EDGEWISE_REQUIRE_FINETUNE"):
        pytest.fail(message)
    pytest.skip(message)


def smoke_episodes() -> list[LabeledEpisode]:
    return [episode for episode in load_episodes(SMOKE) if episode.exhaustive]


# -- the requests: what the model is trained on is what the program sends --------------------------


@pytest.mark.parametrize("program_name", ["default", "qwen2.5-coder-1.5b-program-v2"])
@pytest.mark.parametrize("prompt", ["full", "compact"])
def test_each_example_is_the_request_the_tuned_program_sends_with_the_gold_reply(program_name, prompt):
    tuned = training_program(resolve_program(program_name), prompt)
    episodes = smoke_episodes()[:3]
    data = training_data(tuned, episodes)
    for labeled, example in zip(episodes, data.examples, strict=True):
        sent = SchemaLM(lambda messages, kwargs: json.dumps({"edges": []}))
        with dspy.context(lm=sent, adapter=VocabularyJSONAdapter()):
            tuned(episode=labeled.episode())
        assert sent.calls[0]["messages"] == example["messages"][:-1]
        reply = example["messages"][-1]
        assert reply["role"] == "assistant"
        written = json.loads(reply["content"])["edges"]
        assert [
            (edge["sourceEntityName"], edge["relationshipType"], edge["targetEntityName"]) for edge in written
        ] == [
            (edge.source_entity_name, edge.relationship_type, edge.target_entity_name)
            for edge in labeled.edges
        ]
    system = data.examples[0]["messages"][0]["content"]
    assert (COMPACT_INSTRUCTIONS in system) == (prompt == "compact")
    assert tuned.extract.demos == [] or prompt == "full"


def test_the_compact_prompt_is_shorter_and_the_data_says_where_it_came_from():
    program = resolve_program("default")
    episodes = load_episodes(SMOKE)
    full = training_data(training_program(program, "full"), episodes)
    compact = training_data(training_program(program, "compact"), episodes)
    size = lambda data: sum(len(m["content"]) for e in data.examples for m in e["messages"])
    assert size(compact) < size(full)
    assert compact.summary["examples"] == sum(episode.exhaustive for episode in episodes)
    assert compact.summary["left_out_partial_labels"] == sum(not episode.exhaustive for episode in episodes)
    for source, entry in compact.summary["sources"].items():
        assert entry["licenses"] == sorted(
            {e.license for e in episodes if e.source == source and e.exhaustive}
        )
    everything = training_data(training_program(program, "compact"), episodes, exhaustive_only=False)
    assert everything.summary["examples"] == len(episodes)


def test_a_program_whose_reply_gold_edges_cannot_write_is_refused():
    from edgewise.modules.options import ProgramOptions

    with pytest.raises(FinetuneError, match="sentence numbers"):
        training_program(EdgeExtractor(options=ProgramOptions(fact_span=True)), "full")


def test_finetune_of_a_hosted_model_is_refused_before_anything_is_loaded(tmp_path, capsys):
    code = main(["optimize", "--optimizer", "finetune", "--model", "openai/gpt-4o-mini", "--train", str(SMOKE),
                 "--dev", str(SMOKE), "--out", str(tmp_path / "ft")])  # fmt: skip
    assert code != 0
    assert "local model" in capsys.readouterr().err
    assert not (tmp_path / "ft").exists()


def test_the_finetune_flags_make_the_settings_and_their_defaults_are_the_settings_defaults():
    from edgewise.cli import build_parser
    from edgewise.cli.optimize import finetune_settings_from_args

    parse = lambda *flags: build_parser().parse_args(
        ["optimize", "--optimizer", "finetune", "--out", "x", *flags]
    )
    assert finetune_settings_from_args(parse()) == FinetuneSettings()
    chosen = finetune_settings_from_args(
        parse("--rank", "8", "--alpha", "16", "--target-modules", "q_proj, v_proj", "--top-layers", "6",
              "--lr", "1e-4", "--epochs", "3", "--batch-size", "8", "--seq-len", "1024", "--max-minutes", "30",
              "--prompt", "full", "--dev-size", "10", "--seed", "3", "--all-episodes")
    )  # fmt: skip
    assert chosen == FinetuneSettings(
        rank=8, alpha=16, target_modules=("q_proj", "v_proj"), top_layers=6, learning_rate=1e-4, epochs=3,
        batch_size=8, seq_len=1024, max_minutes=30, prompt="full", dev_size=10, seed=3, exhaustive_only=False,
    )  # fmt: skip
    with pytest.raises(FinetuneError, match="rank"):
        finetune_settings_from_args(parse("--rank", "0"))


# -- the tiny base model ---------------------------------------------------------------------------

CHAT_TEMPLATE: Final = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""Qwen2.5's chat format (ChatML), without its tool-calling branches."""
SPECIAL_TOKENS: Final = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def tiny_tokenizer(texts: list[str]) -> tuple[list[str], list[str]]:
    """A byte-level BPE vocabulary learned from `texts` (tokens, merges), the special tokens last."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer)
    model = json.loads(tokenizer.to_str())["model"]
    tokens = [token for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in model["merges"]]
    return [*tokens, *SPECIAL_TOKENS], merges


def write_tiny_base(path: Path, texts: list[str], matrices: str = "Q8_0") -> None:
    """A random Qwen2 (hidden 32, 2 blocks) as a GGUF: metadata, tokenizer, and its weight matrices in
    `matrices` (Q8_0, as the shipped models' are quantized, or F16)."""
    import gguf
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokens, merges = tiny_tokenizer(texts)
    config = Qwen2Config(
        vocab_size=len(tokens), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
        rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():  # embeddings large enough for logits that can tell tokens apart (they are tied)
        model.model.embed_tokens.weight.normal_(0.0, 0.5)
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name("tiny-qwen2")
    writer.add_context_length(8192)
    writer.add_embedding_length(32)
    writer.add_feed_forward_length(64)
    writer.add_block_count(2)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_rope_freq_base(1e6)
    writer.add_layer_norm_rms_eps(1e-6)
    quantized = matrices == "Q8_0"
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if quantized else gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * (len(tokens) - 3) + [gguf.TokenType.CONTROL] * 3)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(len(tokens) - 3)
    writer.add_eos_token_id(len(tokens) - 1)
    writer.add_pad_token_id(len(tokens) - 3)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, 2)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":
            continue  # tied to the embeddings
        module, kind = name.rsplit(".", 1)
        gguf_name = f"{names.get_name(module)}.{kind}"
        values = tensor.float().numpy()
        if values.ndim == 2 and "token_embd" not in gguf_name and quantized:
            blocks = gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(gguf_name, blocks, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        elif values.ndim == 2 and "token_embd" not in gguf_name:
            writer.add_tensor(gguf_name, values.astype(np.float16))
        else:
            writer.add_tensor(gguf_name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def tiny_texts() -> list[str]:
    """What the tiny tokenizer learns from: the smoke episodes' training examples."""
    data = training_data(training_program(EdgeExtractor(), "compact"), smoke_episodes())
    return [message["content"] for example in data.examples for message in example["messages"]]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_training_packages()
    path = tmp_path_factory.mktemp("base") / "tiny.gguf"
    write_tiny_base(path, tiny_texts())
    return path


def run_finetune(base: Path, out: Path, settings: FinetuneSettings = SETTINGS, **options: Any):
    from edgewise.optimize.finetune.run import finetune

    episodes = smoke_episodes()
    return finetune(
        model="local/qwen2.5-coder-0.5b", program="default", base_file=base, train=episodes[:4],
        dev=episodes[4:], out=out, settings=settings, **{"progress": None, **options},
    )  # fmt: skip


@pytest.fixture(scope="module")
def trained(tiny_base: Path, tmp_path_factory: pytest.TempPathFactory):
    return run_finetune(tiny_base, tmp_path_factory.mktemp("run") / "ft")


# -- training, the adapter file, the manifest, loading --------------------------------------------


def test_training_moves_the_loss_on_the_reply_tokens(trained):
    result = trained.outcome.result
    assert result.complete and result.steps == result.total_steps == 6 and result.resumed_from == 0
    assert len(result.losses) == 6 and all(np.isfinite(result.losses))
    assert result.losses[-1] < result.losses[0] - 1.0
    assert result.dev_loss_after < result.dev_loss_before
    assert result.dev_loss_before is not None and result.dev_loss_after is not None
    assert result.examples == 4 and result.left_out_too_long == 0
    assert result.tokens["reply_mean"] > 0 and result.device in ("cpu", "cuda")


def test_the_adapter_is_a_lora_gguf_that_fits_the_base_tensors(trained, tiny_base):
    import gguf

    adapter = gguf.GGUFReader(str(trained.out_dir / "adapter.gguf"))
    base = gguf.GGUFReader(str(tiny_base))
    text = lambda key: bytes(adapter.fields[key].parts[-1]).decode()
    assert text("general.type") == "adapter"
    assert text("general.architecture") == "qwen2"
    assert text("adapter.type") == "lora"
    assert float(adapter.fields["adapter.lora.alpha"].parts[-1][0]) == SETTINGS.alpha
    base_shapes = {tensor.name: [int(n) for n in tensor.shape] for tensor in base.tensors}
    pairs: dict[str, dict[str, list[int]]] = {}
    for tensor in adapter.tensors:
        name, part = tensor.name.rsplit(".", 1)
        pairs.setdefault(name, {})[part] = [int(n) for n in tensor.shape]
    # Every linear layer of both blocks, each as llama.cpp checks it: A's ne[0] and B's ne[1] are the
    # base tensor's, and A's ne[1] is B's ne[0] (the rank).
    assert len(pairs) == 2 * 7
    for name, shapes in pairs.items():
        assert set(shapes) == {"lora_a", "lora_b"}
        assert name in base_shapes, name
        assert shapes["lora_a"][0] == base_shapes[name][0]
        assert shapes["lora_b"][1] == base_shapes[name][1]
        assert shapes["lora_a"][1] == shapes["lora_b"][0] == SETTINGS.rank


def test_the_adapter_file_adds_what_peft_trained(trained, tiny_base):
    """Base weights plus (alpha / rank) * B @ A read from the GGUF give the logits of the trained model."""
    import gguf
    import torch
    from peft import set_peft_model_state_dict

    from edgewise.optimize.finetune.run import training_dir
    from edgewise.optimize.finetune.train import load_base, with_lora

    def base_model() -> Any:  # in float32, so that the comparison sees the adapter, not bf16 rounding
        return load_base(trained.outcome.base, "cpu")[1].float()

    peft_model = with_lora(base_model(), SETTINGS)
    saved = torch.load(training_dir(trained.out_dir) / "checkpoint.pt", weights_only=True)
    set_peft_model_state_dict(peft_model, saved["adapter"])
    merged = base_model()
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, 2)
    modules = {
        f"{names.get_name(name)}.weight": module
        for name, module in merged.named_modules()
        if names.get_name(name)
    }
    factors: dict[str, dict[str, np.ndarray]] = {}
    for tensor in gguf.GGUFReader(str(trained.out_dir / "adapter.gguf")).tensors:
        name, part = tensor.name.rsplit(".", 1)
        factors.setdefault(name, {})[part] = np.array(tensor.data, dtype=np.float32)
    with torch.no_grad():
        for name, pair in factors.items():
            delta = torch.from_numpy(pair["lora_b"] @ pair["lora_a"]) * (SETTINGS.alpha / SETTINGS.rank)
            weight = modules[name].weight
            weight.add_(delta)
        ids = torch.tensor([list(range(40))])
        expected = peft_model(input_ids=ids).logits
        got = merged(input_ids=ids).logits
        base = base_model()(input_ids=ids).logits
    # The file's factors are float16: a thousandth of what the adapter moved the logits, at most.
    assert float((got - expected).abs().max()) < 1e-2 * float((expected - base).abs().max())


def test_the_manifest_names_the_adapter_and_the_folder_loads(trained, tiny_base):
    from edgewise.local.local_models import file_sha256

    manifest = json.loads((trained.out_dir / MANIFEST_FILE).read_text())
    adapter = manifest["adapter"]
    assert adapter["file"] == "adapter.gguf"
    assert adapter["sha256"] == file_sha256(trained.out_dir / "adapter.gguf")
    assert adapter["base_model"] == "gguf:tiny.gguf" and adapter["base_sha256"] == file_sha256(tiny_base)
    assert (adapter["rank"], adapter["alpha"], adapter["tensors"]) == (SETTINGS.rank, SETTINGS.alpha, 14)
    assert manifest["optimizer"] == "finetune" and manifest["status"] == "complete"
    assert manifest["settings"]["prompt"] == "compact" and manifest["settings"]["epochs"] == SETTINGS.epochs
    training = manifest["notes"]["training"]
    assert training["train"]["examples"] == 4 and training["steps"] == 6 and training["epochs"] == 3
    assert training["train"]["sources"] and "minutes" in training
    program = load(trained.out_dir)
    assert program.extract.signature.instructions == COMPACT_INSTRUCTIONS
    assert program.lora_adapter.path == trained.out_dir / "adapter.gguf"
    with pytest.raises(ArtifactError, match=r"trained on gguf:tiny\.gguf"):
        program.lora_adapter.for_model("local/qwen2.5-coder-0.5b")


def test_a_changed_adapter_file_is_refused_at_load(trained, tmp_path):
    copy = tmp_path / "changed"
    shutil.copytree(trained.out_dir, copy)
    data = bytearray((copy / "adapter.gguf").read_bytes())
    data[-1] ^= 0xFF
    (copy / "adapter.gguf").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="sha256"):
        load(copy)
    (copy / "adapter.gguf").unlink()
    with pytest.raises(ArtifactError, match="missing"):
        load(copy)


def test_a_run_stopped_by_its_time_limit_resumes_from_its_checkpoint(trained, tiny_base, tmp_path):
    import gguf

    out = tmp_path / "ft"
    stopped = run_finetune(tiny_base, out, SETTINGS.model_copy(update={"max_minutes": 1e-6}))
    assert stopped.manifest.status == "interrupted" and stopped.outcome.result.steps == 1
    assert load(out).lora_adapter is not None  # what it has is saved and loads
    bar = io.StringIO()
    resumed = run_finetune(tiny_base, out, progress=bar)
    result = resumed.outcome.result
    # The bar shows the loss and the process's peak memory, in GB (at least what it holds now)
    postfix = bar.getvalue().rsplit("\r", 1)[-1]
    assert "loss=" in postfix and f"{result.total_steps}/{result.total_steps}" in postfix
    if sys.platform == "linux":
        from benchmark_scripts import load_script

        peak = float(postfix.split("peak=", 1)[1].split("GB", 1)[0])
        resident_mb = load_script("harness").rss_mb(os.getpid())
        assert resident_mb is not None and resident_mb / 1024 - 0.1 <= peak < 1024
    assert result.resumed_from == 1 and result.complete and resumed.manifest.status == "complete"
    assert result.losses[0] == stopped.outcome.result.losses[0]
    read = lambda folder: {
        t.name: np.array(t.data, dtype=np.float32)
        for t in gguf.GGUFReader(str(folder / "adapter.gguf")).tensors
    }
    straight, after_resume = read(trained.out_dir), read(out)
    assert straight.keys() == after_resume.keys()
    for name, values in straight.items():
        assert np.allclose(values, after_resume[name], atol=1e-3), name
    with pytest.raises(FinetuneError, match="another run"):
        run_finetune(tiny_base, out, SETTINGS.model_copy(update={"rank": 2}))
    fresh = run_finetune(tiny_base, out, SETTINGS.model_copy(update={"rank": 2, "epochs": 1}), fresh=True)
    assert fresh.outcome.result.resumed_from == 0 and fresh.manifest.adapter.rank == 2


def test_bootstrap_finetune_trains_through_the_provider(tiny_base, tmp_path):
    from dspy.clients.utils_finetune import TrainDataFormat
    from dspy.teleprompt.bootstrap_finetune import BootstrapFinetune

    from edgewise.optimize.finetune.provider import LocalLoraProvider

    provider = LocalLoraProvider(tmp_path / "state", base_file=tiny_base, progress=None)
    lm = dspy.LM("local/qwen2.5-coder-0.5b", provider=provider)
    examples = training_data(training_program(EdgeExtractor(), "compact"), smoke_episodes()[:2]).examples
    settings = SETTINGS.model_copy(update={"epochs": 1})
    tuned = BootstrapFinetune.finetune_lms(
        {(lm, None): {"lm": lm, "train_data": examples, "train_data_format": TrainDataFormat.CHAT,
                      "train_kwargs": settings.model_dump()}}
    )  # fmt: skip
    assert tuned[(lm, None)].model == "local/qwen2.5-coder-0.5b"
    assert (tmp_path / "state" / "adapter.gguf").is_file()


# -- serving: llama-server runs the base with the adapter ------------------------------------------


def test_llama_server_serves_the_base_with_the_adapter(trained, tiny_base, tmp_path):
    """llama-server loads the adapter against the base's tensors, and the adapter changes its answer.

    The server's base is the tiny model with F16 matrices: the prebuilt llama-server dies of an illegal
    instruction on Q8_0 matrices on CPUs without AMX, and the adapter fits any type of the same shapes.
    """
    from edgewise.local.local_models import LocalModelSpec, file_sha256
    from edgewise.local.local_server import LocalServer, LocalServerError, find_server_binary

    try:
        find_server_binary()
    except LocalServerError as error:
        pytest.skip(f"no llama-server: {error}")
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    served = cache / "models" / "tiny-f16.gguf"
    write_tiny_base(served, tiny_texts(), matrices="F16")
    spec = LocalModelSpec(
        name="tiny-qwen2", title="tiny", file_name=served.name, sha256=file_sha256(served),
        size_bytes=served.stat().st_size, ctx_size=4096, parts=(), license="Apache-2.0",
    )  # fmt: skip
    adapter = load(trained.out_dir).lora_adapter.path
    with LocalServer(spec, cache_dir=cache, lora=adapter, build=False, threads=1) as server:
        loaded = call(f"{server.base_url}/lora-adapters")
        assert [Path(entry["path"]).resolve() for entry in loaded] == [adapter.resolve()]
        assert loaded[0]["scale"] == 1.0
        with_adapter = first_token_logprobs(server)
        call(f"{server.base_url}/lora-adapters", [{"id": loaded[0]["id"], "scale": 0.0}])
        without = first_token_logprobs(server)
    assert with_adapter != without


def call(url: str, body: Any = None) -> Any:
    """GET (or POST `body` as JSON to) a llama-server endpoint on this machine; its JSON answer."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=60) as response:
        return json.loads(response.read())


def first_token_logprobs(server: Any) -> list[tuple[str, float]]:
    """The server's top first tokens and their log-probabilities for one chat message."""
    reply = call(
        f"{server.api_base}/chat/completions",
        {"model": server.model_name, "max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 5,
         "messages": [{"role": "user", "content": "Marcus here. Had lunch with Jamal today."}]},
    )  # fmt: skip
    top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    return [(entry["token"], round(entry["logprob"], 4)) for entry in top]
