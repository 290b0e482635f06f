#!/usr/bin/env python3
"""A word-level Hugging Face tokenizer folder for `aiperf profile --tokenizer DIR`, built from the
corpus AIPerf ships (no hub, no tiktoken download: this machine reaches only package registries). Word-level vocabulary over aiperf's bundled shakespeare.txt
corpus (the one synthetic prompts are cut from) + whitespace/punctuation pre-tokenizer,
so 1 word/punctuation mark == 1 token and decode->encode round-trips exactly."""
import collections, string, sys
from pathlib import Path
import aiperf
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerFast

out = Path(sys.argv[1])
corpus = Path(aiperf.__file__).parent / "dataset/generator/assets/shakespeare.txt"
pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
words = collections.Counter()
for line in corpus.read_text(encoding="utf-8").splitlines():
    words.update(w for w, _ in pre.pre_tokenize_str(line))
vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2}
for w in list(string.punctuation) + sorted(words):
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre
tok.decoder = decoders.WordPiece(prefix="##")  # joins tokens with single spaces
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                               bos_token="<s>", eos_token="</s>")
out.mkdir(parents=True, exist_ok=True)
fast.save_pretrained(str(out))
print(f"saved {len(vocab)}-word tokenizer to {out}")
