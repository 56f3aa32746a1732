"""Fine-tuning: a LoRA adapter for a local model, trained on labeled episodes, served by llama-server.

`edgewise optimize --optimizer finetune` renders each training episode as the request the program
sends for it (`data`), with the gold edges as the reply; trains a LoRA adapter on the local model's own
GGUF weights (`train`); writes the adapter as a GGUF file llama-server loads with `--lora`
(`gguf_adapter`); and saves the program folder with the adapter beside `program.json` (`run`). The
training goes through DSPy's fine-tuning interface: `provider.LocalLoraProvider` is a `dspy.Provider`
whose `finetune` does the work, so `dspy.BootstrapFinetune` can drive it too.

Only `settings` and `data` are imported without the `finetune` extra (torch, transformers, peft,
gguf, accelerate); the rest imports them when it runs.
"""
