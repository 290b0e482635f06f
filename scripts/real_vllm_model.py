#!/usr/bin/env python3
"""Builds the tiny random Llama that the real-vLLM tests serve, without any model hub.

Deterministic: the same pinned packages give the same bytes on every build. The tokenizer is a
byte-level BPE trained by the `tokenizers` package on a fixed, sorted list of source files of
the pinned `transformers` install (English docstrings and code), and every weight is drawn from
NumPy's PCG64 generator with a fixed seed (bit-identical on every platform), not from torch's
initialisers. Writes config.json, generation_config.json, model.safetensors and the tokenizer
files into the output folder, then prints the SHA-256 of each file.

Usage: python real_vllm_model.py OUT_DIR
"""

import hashlib
import json
import os
import sys

SEED = 20261130
VOCAB = 4096
CONFIG = dict(
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=2048,
    vocab_size=VOCAB,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)
SPECIAL = ["<pad>", "<s>", "</s>", "<unk>"]
# A plain role-tagged template: vLLM's chat endpoint renders it, `vllm bench serve` is told
# --skip-chat-template so both clients send the same tokens.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def corpus_files():
    """Sorted source files of the pinned transformers package: the tokenizer's training text."""
    import transformers

    root = os.path.dirname(transformers.__file__)
    picked = []
    for sub in ("models/llama", "generation", "utils"):
        folder = os.path.join(root, sub)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                picked.append(os.path.join(folder, name))
    if not picked:
        sys.exit("real_vllm_model.py: no training text found in the transformers install")
    return picked


def build_tokenizer(out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train(corpus_files(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        model_max_length=CONFIG["max_position_embeddings"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)


def build_model(out_dir):
    import numpy as np
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(**CONFIG)
    model = LlamaForCausalLM(config).to(torch.float32)
    rng = np.random.Generator(np.random.PCG64(SEED))
    state = model.state_dict()
    with torch.no_grad():
        for name in sorted(state):
            tensor = state[name]
            if name.endswith("norm.weight"):
                values = np.ones(tuple(tensor.shape), dtype=np.float32)
            else:
                values = rng.normal(0.0, 0.02, size=tuple(tensor.shape)).astype(np.float32)
            tensor.copy_(torch.from_numpy(values))
    model.generation_config.do_sample = False
    model.save_pretrained(out_dir, safe_serialization=True)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: real_vllm_model.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    build_tokenizer(out_dir)
    build_model(out_dir)
    digests = {}
    for name in sorted(os.listdir(out_dir)):
        with open(os.path.join(out_dir, name), "rb") as f:
            digests[name] = hashlib.sha256(f.read()).hexdigest()
    print(json.dumps(digests, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
