#!/usr/bin/env python3
"""Build an fp32 ONNX graph of all-MiniLM-L6-v2 straight from its safetensors weights.

Why this exists
---------------
knowledge-db embeds text with fastembed on ONNX Runtime, which needs the model as
one self-contained ONNX file. The only registry packages we can reach ship the
model as PyTorch-style ``model.safetensors`` weights (or as an int8-quantised ONNX
that we reject: quantisation changes the vectors). The usual export path,
``torch.onnx.export``, would pull in PyTorch (gigabytes) just to trace a graph that
is small and well known. So this script writes that graph by hand.

The concept
-----------
all-MiniLM-L6-v2 is a plain BERT encoder (Hugging Face ``BertModel`` in eval mode,
so no dropout). Its forward pass, written out op by op with ``onnx.helper``::

    x = LayerNorm(word_emb[input_ids] + pos_emb[0..seq) + type_emb[token_type_ids])
    for each of the num_hidden_layers layers:
        per head: a = softmax(Q K^T / sqrt(head_dim) + mask) V
        x = LayerNorm(x + concat_heads(a) W_o + b_o)
        x = LayerNorm(x + gelu(x W_i + b_i) W_out + b_out)
    last_hidden_state = x

where ``mask`` adds -10000 to the scores of padding keys, so padding never changes
the real tokens' outputs. Mean pooling and L2 normalisation are not in the graph:
fastembed does them from the first output and the attention mask.

The graph's interface is exactly what fastembed feeds and reads:

    inputs   input_ids, attention_mask, token_type_ids   int64   [batch, sequence]
    output   last_hidden_state                           float32 [batch, sequence, hidden]

with ``batch`` and ``sequence`` dynamic. Only standard opset-17 operators are used
(Gather, MatMul, Add, Softmax, LayerNormalization, Erf, ...), all of which ONNX
Runtime runs on CPU. Every weight stays float32.

Usage::

    python convert_minilm_to_onnx.py --model-dir DIR [--output DIR/model.onnx]

DIR holds ``config.json`` and ``model.safetensors``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

# Opset 17 is the first with a LayerNormalization operator; IR version 8 is the
# one that goes with it, so the file loads in any ONNX Runtime from 1.12 on.
OPSET = 17
IR_VERSION = 8

# Added to the attention scores of padding keys. It is what BERT originally used:
# large enough that exp() of it underflows to exactly 0 in float32 (so padding
# has no effect at all), yet finite, so a row whose keys are *all* padding (the
# rows of padding queries) gives a uniform softmax instead of NaN. A NaN there
# would leak into the pooled vector, since NaN * 0 is still NaN.
MASK_VALUE = -10000.0


class GraphBuilder:
    """Collects nodes and initializers, naming every intermediate value uniquely."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._constants: dict[str, np.ndarray] = {}
        self._counter = 0

    def weight(self, name: str, array: np.ndarray) -> str:
        """Adds a constant tensor (a weight or a small constant) and returns its name.

        Small constants shared by all layers (shapes, 1.0, sqrt(2)) are asked for
        again by every layer; they are stored once.
        """
        if name in self._constants:
            if not np.array_equal(self._constants[name], array):
                raise ValueError(f"two different constants named {name}")
            return name
        self._constants[name] = array
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def scalar(self, name: str, value: float) -> str:
        return self.weight(name, np.array(value, dtype=np.float32))

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs) -> str:
        """Adds one node with a single output and returns that output's name."""
        self._counter += 1
        output = out or f"{op_type.lower()}_{self._counter}"
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [output], name=f"{op_type}_{self._counter}", **attrs)
        )
        return output


def read_config(model_dir: Path) -> dict:
    """Reads the BERT hyper-parameters and refuses any variant this graph does not implement."""
    config = json.loads((model_dir / "config.json").read_text())
    expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in expected.items():
        if config.get(key, value) != value:
            sys.exit(
                f"convert: config.json has {key}={config.get(key)!r}; this converter builds {key}={value!r} only"
            )
    if config["hidden_size"] % config["num_attention_heads"] != 0:
        sys.exit("convert: hidden_size is not a multiple of num_attention_heads")
    return config


class Weights:
    """The safetensors tensors, checked for presence and shape as they are taken."""

    def __init__(self, path: Path) -> None:
        self._tensors = load_file(str(path))

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name not in self._tensors:
            sys.exit(f"convert: model.safetensors has no tensor {name}")
        tensor = self._tensors[name]
        if tensor.shape != shape:
            sys.exit(f"convert: {name} has shape {tensor.shape}, config.json implies {shape}")
        if tensor.dtype != np.float32:
            sys.exit(f"convert: {name} is {tensor.dtype}, expected float32 weights")
        return tensor


def linear(g: GraphBuilder, w: Weights, x: str, prefix: str, n_in: int, n_out: int) -> str:
    """x W^T + b. PyTorch stores W as [out, in]; storing W^T lets a plain MatMul do it."""
    weight_t = w.get(f"{prefix}.weight", (n_out, n_in)).T
    y = g.op("MatMul", x, g.weight(f"{prefix}.weight_t", weight_t))
    return g.op("Add", y, g.weight(f"{prefix}.bias", w.get(f"{prefix}.bias", (n_out,))))


def layer_norm(
    g: GraphBuilder, w: Weights, x: str, prefix: str, hidden: int, eps: float, out: str | None = None
) -> str:
    scale = g.weight(f"{prefix}.weight", w.get(f"{prefix}.weight", (hidden,)))
    bias = g.weight(f"{prefix}.bias", w.get(f"{prefix}.bias", (hidden,)))
    return g.op("LayerNormalization", x, scale, bias, out=out, axis=-1, epsilon=eps)


def embeddings(g: GraphBuilder, w: Weights, cfg: dict) -> str:
    """Sum of the word, position and token-type embeddings, then LayerNorm."""
    hidden = cfg["hidden_size"]
    word_table = w.get("embeddings.word_embeddings.weight", (cfg["vocab_size"], hidden))
    type_table = w.get("embeddings.token_type_embeddings.weight", (cfg["type_vocab_size"], hidden))
    pos_table = w.get("embeddings.position_embeddings.weight", (cfg["max_position_embeddings"], hidden))

    words = g.op("Gather", g.weight("word_embeddings", word_table), "input_ids", axis=0)
    types = g.op("Gather", g.weight("token_type_embeddings", type_table), "token_type_ids", axis=0)

    # Positions are 0..seq_len-1, the same for every row of the batch: the first
    # seq_len rows of the table, [seq, hidden], broadcast over the batch in the Add.
    # (A Slice, not Gather(table, Range(0, seq_len)): ONNX Runtime 1.24's optimiser
    # rewrites that Gather into a Slice with scalar starts, which then fails to run.)
    seq_len = g.op("Shape", "input_ids", start=1, end=2)  # 1-D [seq_len]
    zero = g.weight("const_i64_0_1d", np.array([0], dtype=np.int64))
    positions = g.op("Slice", g.weight("position_embeddings", pos_table), zero, seq_len, zero)  # axes=[0]

    summed = g.op("Add", g.op("Add", words, types), positions)
    return layer_norm(g, w, summed, "embeddings.LayerNorm", hidden, cfg["layer_norm_eps"])


def additive_attention_mask(g: GraphBuilder) -> str:
    """[batch, seq] 1/0 mask -> [batch, 1, 1, seq] of 0 (keep) or MASK_VALUE (padding key)."""
    keep = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    masked = g.op("Sub", g.scalar("const_f32_1", 1.0), keep)
    additive = g.op("Mul", masked, g.scalar("mask_value", MASK_VALUE))
    return g.op("Unsqueeze", additive, g.weight("mask_axes", np.array([1, 2], dtype=np.int64)))


def split_heads(g: GraphBuilder, x: str, heads: int, head_dim: int, perm: list[int]) -> str:
    """[batch, seq, hidden] -> [batch, seq, heads, head_dim] -> transposed by perm."""
    shape = g.weight("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))  # 0 = keep that dim
    return g.op("Transpose", g.op("Reshape", x, shape), perm=perm)


def self_attention(g: GraphBuilder, w: Weights, x: str, mask: str, prefix: str, cfg: dict) -> str:
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = hidden // heads

    def project(name: str) -> str:
        return linear(g, w, x, f"{prefix}.self.{name}", hidden, hidden)

    q = split_heads(g, project("query"), heads, head_dim, [0, 2, 1, 3])  # [b, h, s, d]
    k = split_heads(g, project("key"), heads, head_dim, [0, 2, 3, 1])  # [b, h, d, s], ready for Q K^T
    v = split_heads(g, project("value"), heads, head_dim, [0, 2, 1, 3])  # [b, h, s, d]

    # Same order of operations as BertSelfAttention: (Q K^T) / sqrt(d) + mask.
    scores = g.op("Div", g.op("MatMul", q, k), g.scalar("sqrt_head_dim", math.sqrt(head_dim)))
    probs = g.op("Softmax", g.op("Add", scores, mask), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3])  # [b, s, h, d]
    merged = g.op("Reshape", context, g.weight("merge_shape", np.array([0, 0, hidden], dtype=np.int64)))

    projected = linear(g, w, merged, f"{prefix}.output.dense", hidden, hidden)
    return layer_norm(
        g, w, g.op("Add", projected, x), f"{prefix}.output.LayerNorm", hidden, cfg["layer_norm_eps"]
    )


def gelu(g: GraphBuilder, x: str) -> str:
    """BERT's exact "gelu": x * 0.5 * (1 + erf(x / sqrt(2))), not the tanh approximation."""
    erf = g.op("Erf", g.op("Div", x, g.scalar("const_f32_sqrt2", math.sqrt(2.0))))
    one_plus_erf = g.op("Add", erf, g.scalar("const_f32_1", 1.0))
    return g.op("Mul", g.op("Mul", x, one_plus_erf), g.scalar("const_f32_half", 0.5))


def feed_forward(g: GraphBuilder, w: Weights, x: str, prefix: str, cfg: dict, out: str | None) -> str:
    hidden, inner = cfg["hidden_size"], cfg["intermediate_size"]
    h = gelu(g, linear(g, w, x, f"{prefix}.intermediate.dense", hidden, inner))
    y = linear(g, w, h, f"{prefix}.output.dense", inner, hidden)
    return layer_norm(
        g, w, g.op("Add", y, x), f"{prefix}.output.LayerNorm", hidden, cfg["layer_norm_eps"], out=out
    )


def build_model(model_dir: Path) -> onnx.ModelProto:
    cfg = read_config(model_dir)
    w = Weights(model_dir / "model.safetensors")
    g = GraphBuilder()

    x = embeddings(g, w, cfg)
    mask = additive_attention_mask(g)
    layers = cfg["num_hidden_layers"]
    for i in range(layers):
        prefix = f"encoder.layer.{i}"
        x = self_attention(g, w, x, mask, f"{prefix}.attention", cfg)
        # The last LayerNorm writes straight into the graph output.
        x = feed_forward(g, w, x, prefix, cfg, out="last_hidden_state" if i == layers - 1 else None)

    # The pooler (pooler.dense) is not used: sentence-transformers mean-pools the
    # token states instead of taking BERT's [CLS] pooler output.
    dims = ["batch", "sequence"]
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, dims)
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [cfg["hidden_size"]])
    ]
    graph = helper.make_graph(g.nodes, "all-MiniLM-L6-v2", inputs, outputs, g.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="knowledge-db scripts/convert_minilm_to_onnx.py",
        doc_string="sentence-transformers/all-MiniLM-L6-v2 BERT encoder, fp32, built from model.safetensors",
    )
    model.ir_version = IR_VERSION
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model-dir", type=Path, required=True, help="folder with config.json and model.safetensors"
    )
    parser.add_argument("--output", type=Path, help="ONNX file to write (default: MODEL_DIR/model.onnx)")
    args = parser.parse_args()
    output = args.output or args.model_dir / "model.onnx"

    model = build_model(args.model_dir)
    onnx.checker.check_model(model, full_check=True)  # also runs shape inference
    # One file with the weights inside (about 90 MB, far below protobuf's 2 GB
    # limit): fastembed's user-defined model reads a single file's bytes.
    onnx.save_model(model, str(output))
    n_nodes = len(model.graph.node)
    n_params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(
        f"convert: wrote {output.name}: {n_nodes} nodes, {n_params / 1e6:.1f}M float32 parameters, opset {OPSET}"
    )


if __name__ == "__main__":
    main()
