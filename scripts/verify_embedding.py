#!/usr/bin/env python3
"""Check that a converted all-MiniLM-L6-v2 ONNX graph gives the model's real vectors.

Why this exists
---------------
``convert_minilm_to_onnx.py`` writes the BERT forward pass by hand. A graph can
load and run and still be wrong (a transposed weight, a wrong epsilon, the tanh
GELU instead of erf), which would silently make every search worse. So before the
setup script installs the model, this script embeds text exactly the way
knowledge-db does (src/embed/onnx.rs) and compares with known answers:

1. Reference vector: "This is an example sentence", tokenised with the shipped
   tokenizer.json (truncated at 256 tokens), run through the graph, mean-pooled
   over the attention mask and L2-normalised, must start with the values that
   sentence-transformers publishes for this model (within 1e-4).
2. Padding: in a batch, shorter texts are padded to the longest. Each text's
   vector in a batch must equal its vector alone (within 1e-5), which tests the
   attention mask.
3. Truncation: a text longer than 256 tokens runs at exactly 256 tokens and gives
   a finite unit vector (tests the position embeddings up to the limit).
4. Runtime library (with --runtime-lib): the libonnxruntime.so copied out of the
   wheel loads on its own and offers the C API of its version, as the Rust
   ``ort`` crate will ask for it.
5. ORT format (with --write-ort): once model.onnx passed, it is saved as
   model.ort, ONNX Runtime's own format with the graph optimisations already
   applied ("extended" level: fusions only, no CPU-specific layouts), which
   knowledge-db memory-maps and runs in place (a session in ~15 ms instead of
   ~250 ms). model.ort is loaded the way knowledge-db loads it (weights used in
   place) and must give model.onnx's vectors on every check text (within 1e-5).

6. Draft model (with --write-draft): model.onnx is quantized to int8
   (ONNX Runtime's dynamic quantization, per-channel int8 weights) as
   model-int8.onnx and saved as model-int8.ort. knowledge-db drafts a large
   backlog's vectors with it (about twice as fast) and replaces them with
   model.onnx's in the background. Its vectors must stay close to the full
   model's: cosine at least 0.95 on every check text (about 0.99 measured on
   real transcript messages), and model-int8.ort must give model-int8.onnx's
   vectors (within 1e-5).

Any failure exits non-zero with a message that says what differed. With
``--stamp FILE`` a passing run writes FILE: the first values and the sha256 of
the exact model.onnx (and model.ort) that passed, which the setup script uses to
know the install is complete and intact.

Usage::

    python verify_embedding.py --model-dir DIR [--runtime-lib LIB] [--write-ort] [--write-draft] [--stamp FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import hashlib
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

MAX_TOKENS = 256  # knowledge-db's max length (src/embed/mod.rs)
REFERENCE_TEXT = "This is an example sentence"
# sentence-transformers/all-MiniLM-L6-v2's embedding of REFERENCE_TEXT, first five dims.
REFERENCE_START = [0.06766, 0.06350, 0.04871, 0.07930, 0.03745]
REFERENCE_TOLERANCE = 1e-4
PADDING_TOLERANCE = 1e-5
ORT_FORMAT_TOLERANCE = 1e-5
# Lowest cosine between a draft (int8) vector and the full model's on the check
# texts; on 600 real transcript messages the median was 0.993 and the minimum 0.966.
DRAFT_MIN_COSINE = 0.95
DRAFT_ONNX = "model-int8.onnx"
DRAFT_ORT = "model-int8.ort"
# Well over MAX_TOKENS tokens: runs truncated, at every position embedding.
LONG_TEXT = " ".join(f"word{i} of a long text" for i in range(300))
PADDING_TEXTS = [
    "A short one.",
    "This second sentence is deliberately a good deal longer than the first, so that "
    "in a batch the first one is padded with many [PAD] tokens that must not matter.",
]


class Failed(Exception):
    """A check did not pass; the message says which and by how much."""


class Embedder:
    """Tokenise, run the graph, mean-pool, normalise: what knowledge-db does."""

    def __init__(self, model_dir: Path, model_file: str = "model.onnx") -> None:
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads every text to a fixed 128 and truncates at
        # 128; knowledge-db replaces both: truncation at its max length and padding to
        # the longest text of the batch.
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initializers etc. are noise here
        if model_file.endswith(".ort"):
            # As knowledge-db runs it: weights read in place, optimisations already applied.
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.add_session_config_entry("session.use_ort_model_bytes_directly", "1")
            options.add_session_config_entry("session.use_ort_model_bytes_for_initializers", "1")
        self.model_file = model_file
        try:
            self.session = ort.InferenceSession(
                str(model_dir / model_file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as e:
            raise Failed(f"ONNX Runtime could not load {model_file}: {e}") from e

    def token_states(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """last_hidden_state [batch, seq, hidden] and the attention mask [batch, seq]."""
        encodings = self.tokenizer.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        try:
            (states,) = self.session.run(["last_hidden_state"], feed)
        except Exception as e:  # onnxruntime raises its own exception types
            raise Failed(f"ONNX Runtime could not run {self.model_file}: {e}") from e
        return states, feed["attention_mask"]

    def embed(self, texts: list[str]) -> np.ndarray:
        states, mask = self.token_states(texts)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def fmt(values) -> str:
    return "[" + ", ".join(f"{v:.5f}" for v in values) + "]"


def check_reference(embedder: Embedder) -> list[float]:
    vector = embedder.embed([REFERENCE_TEXT])[0]
    start = [float(v) for v in vector[: len(REFERENCE_START)]]
    diff = max(abs(a - b) for a, b in zip(start, REFERENCE_START))
    print(f'verify: "{REFERENCE_TEXT}" -> {fmt(start)}, expected {fmt(REFERENCE_START)}, max diff {diff:.1e}')
    if vector.shape != (384,) or not diff <= REFERENCE_TOLERANCE:
        raise Failed(
            f"the reference sentence's vector differs from all-MiniLM-L6-v2's by {diff:.2e} (limit {REFERENCE_TOLERANCE})"
        )
    return start


def check_padding(embedder: Embedder) -> None:
    batch = embedder.embed(PADDING_TEXTS)
    alone = np.stack([embedder.embed([t])[0] for t in PADDING_TEXTS])
    diff = float(np.abs(batch - alone).max())
    lengths = [len(e.ids) for e in (embedder.tokenizer.encode(t) for t in PADDING_TEXTS)]
    print(
        f"verify: batch of 2 texts ({lengths[0]} and {lengths[1]} tokens) vs each alone: max diff {diff:.1e} (limit {PADDING_TOLERANCE:.0e})"
    )
    if not diff <= PADDING_TOLERANCE:
        raise Failed(
            f"padding changes the vectors by {diff:.2e} (limit {PADDING_TOLERANCE}); the attention mask is not applied right"
        )


def check_truncation(embedder: Embedder) -> None:
    states, _ = embedder.token_states([LONG_TEXT])
    vector = embedder.embed([LONG_TEXT])[0]
    print(f"verify: long text truncated to {states.shape[1]} tokens -> output {list(states.shape)}")
    if (
        states.shape != (1, MAX_TOKENS, 384)
        or not np.isfinite(vector).all()
        or abs(np.linalg.norm(vector) - 1) > 1e-4
    ):
        raise Failed(f"a {MAX_TOKENS}-token input gave output shape {states.shape} or a non-finite vector")


def write_ort_model(model_dir: Path, source: str = "model.onnx", target: str = "model.ort") -> None:
    """Saves SOURCE as TARGET in ORT format with the portable ("extended") optimisations applied."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(model_dir / target)
    options.add_session_config_entry("session.save_model_format", "ORT")
    try:
        ort.InferenceSession(str(model_dir / source), options, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise Failed(f"ONNX Runtime could not write {target}: {e}") from e


CHECK_TEXTS = [REFERENCE_TEXT, *PADDING_TEXTS, LONG_TEXT]


def check_ort_format(reference: Embedder, model_dir: Path, target: str = "model.ort") -> None:
    converted = Embedder(model_dir, target)
    diff = float(np.abs(converted.embed(CHECK_TEXTS) - reference.embed(CHECK_TEXTS)).max())
    print(
        f"verify: {target} vs {reference.model_file} on {len(CHECK_TEXTS)} texts: "
        f"max diff {diff:.1e} (limit {ORT_FORMAT_TOLERANCE:.0e})"
    )
    if not diff <= ORT_FORMAT_TOLERANCE:
        raise Failed(
            f"{target}'s vectors differ from {reference.model_file}'s by {diff:.2e} (limit {ORT_FORMAT_TOLERANCE})"
        )


def write_draft_model(full: Embedder, model_dir: Path) -> None:
    """Quantizes model.onnx to int8 (model-int8.onnx, model-int8.ort) and checks it stays close."""
    # Imported here: only this step needs the quantization tools.
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    # It advises a pre-processing step that changes nothing for this graph.
    logging.getLogger().setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            str(model_dir / "model.onnx"),
            str(model_dir / DRAFT_ONNX),
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
    except Exception as e:
        raise Failed(f"ONNX Runtime could not quantize model.onnx: {e}") from e
    draft = Embedder(model_dir, DRAFT_ONNX)
    cosines = (draft.embed(CHECK_TEXTS) * full.embed(CHECK_TEXTS)).sum(axis=1)
    lowest = float(cosines.min())
    print(f"verify: {DRAFT_ONNX} vs model.onnx on {len(CHECK_TEXTS)} texts: lowest cosine {lowest:.4f} (limit {DRAFT_MIN_COSINE})")
    if not lowest >= DRAFT_MIN_COSINE:
        raise Failed(f"{DRAFT_ONNX}'s vectors are too far from model.onnx's (cosine {lowest:.4f} < {DRAFT_MIN_COSINE})")
    write_ort_model(model_dir, DRAFT_ONNX, DRAFT_ORT)
    check_ort_format(draft, model_dir, DRAFT_ORT)


class OrtApiBase(ctypes.Structure):
    """The C struct returned by OrtGetApiBase(): GetApi(version) and GetVersionString()."""

    _fields_ = [
        ("GetApi", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)),
        ("GetVersionString", ctypes.CFUNCTYPE(ctypes.c_char_p)),
    ]


def check_runtime_library(path: Path) -> str:
    """Loads the shared library alone, as ort's load-dynamic does, and asks its version."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise Failed(f"{path.name} does not load on its own: {e}") from e
    lib.OrtGetApiBase.restype = ctypes.POINTER(OrtApiBase)
    base = lib.OrtGetApiBase().contents
    version = base.GetVersionString().decode()
    # ORT's C API version number is its minor version (1.24 -> 24); a NULL answer
    # would mean the library cannot serve the API its own headers promise.
    api_version = int(version.split(".")[1])
    if not base.GetApi(api_version):
        raise Failed(f"{path.name} (version {version}) does not provide C API version {api_version}")
    expected = path.name.removeprefix("libonnxruntime.so.")
    print(f"verify: {path.name} loads on its own: ONNX Runtime {version}, C API {api_version}")
    if expected != path.name and version != expected:
        raise Failed(f"{path.name} reports version {version}")
    return version


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_stamp(stamp: Path, model_dir: Path, start: list[float], runtime_version: str | None) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        "# all-MiniLM-L6-v2 fp32 ONNX (and its int8 draft copy), checked by scripts/verify_embedding.py",
        f"model_onnx_sha256={sha256(model_dir / 'model.onnx')}",
        *(
            f"{key}_sha256={sha256(model_dir / name)}"
            for key, name in [
                ("model_ort", "model.ort"),
                ("model_int8_onnx", DRAFT_ONNX),
                ("model_int8_ort", DRAFT_ORT),
            ]
            if (model_dir / name).is_file()
        ),
        f"first_values={' '.join(f'{v:.6f}' for v in start)}",
        f"onnxruntime={runtime_version or ort.__version__}",
        f"verified_at={now}",
    ]
    stamp.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model-dir", type=Path, required=True, help="folder with model.onnx and tokenizer.json"
    )
    parser.add_argument("--runtime-lib", type=Path, help="libonnxruntime.so.X.Y.Z to check loads on its own")
    parser.add_argument(
        "--write-ort", action="store_true", help="save and check model.ort once model.onnx passed"
    )
    parser.add_argument(
        "--write-draft",
        action="store_true",
        help=f"quantize model.onnx to {DRAFT_ONNX} and {DRAFT_ORT} (the draft model) and check them",
    )
    parser.add_argument(
        "--stamp", type=Path, help="write this file (VERIFIED contents) if every check passes"
    )
    args = parser.parse_args()
    try:
        # The library first, before the Python package has brought its own copy of ORT in.
        runtime_version = check_runtime_library(args.runtime_lib) if args.runtime_lib else None
        embedder = Embedder(args.model_dir)
        start = check_reference(embedder)
        check_padding(embedder)
        check_truncation(embedder)
        if args.write_ort:
            write_ort_model(args.model_dir)
            check_ort_format(embedder, args.model_dir)
        if args.write_draft:
            write_draft_model(embedder, args.model_dir)
    except Failed as e:
        print(f"verify: FAILED: {e}", file=sys.stderr)
        return 1
    if args.stamp:
        write_stamp(args.stamp, args.model_dir, start, runtime_version)
    print("verify: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
