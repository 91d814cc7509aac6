# SPDX-License-Identifier: Apache-2.0
"""A small Qwen3.5 checkpoint: two decoder layers (one Gated-DeltaNet, one full attention), an
MTP head, lm_head; each linear stored dense or in the method's quantized format. Written as
real safetensors files whose data are sparse holes (only headers are ever read)."""
from __future__ import annotations

import json
import os
import struct

HIDDEN = 128
VOCAB = 256

# Linear modules of the layout, checkpoint naming below the text-model prefix.
_LINEAR_ATTN = ["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"]
_SELF_ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
_MLP = ["gate_proj", "up_proj", "down_proj"]
LAYER_TYPES = ["linear_attention", "full_attention"]


def main_linears(prefix: str) -> list[str]:
    out = []
    for i, kind in enumerate(LAYER_TYPES):
        base = f"{prefix}layers.{i}"
        if kind == "linear_attention":
            out += [f"{base}.linear_attn.{p}" for p in _LINEAR_ATTN]
        else:
            out += [f"{base}.self_attn.{p}" for p in _SELF_ATTN]
        out += [f"{base}.mlp.{p}" for p in _MLP]
    return out


def vision_linears() -> list[str]:
    """The vision tower of the VLM checkpoints (one block and the merger)."""
    return [f"model.visual.blocks.0.{p}" for p in
            ("attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2")] + [
        "model.visual.merger.linear_fc1", "model.visual.merger.linear_fc2"]


def mtp_linears() -> list[str]:
    return (["mtp.fc"] + [f"mtp.layers.0.self_attn.{p}" for p in _SELF_ATTN]
            + [f"mtp.layers.0.mlp.{p}" for p in _MLP])


# The 16-bit companions every layout carries (norms, GDN state, conv1d, embeddings).
def _other_tensors(prefix: str) -> list[tuple[str, str, list[int]]]:
    out = [(f"{prefix}embed_tokens.weight", "BF16", [VOCAB, HIDDEN]),
           (f"{prefix}norm.weight", "BF16", [HIDDEN])]
    for i, kind in enumerate(LAYER_TYPES):
        base = f"{prefix}layers.{i}"
        out += [(f"{base}.input_layernorm.weight", "BF16", [HIDDEN]),
                (f"{base}.post_attention_layernorm.weight", "BF16", [HIDDEN])]
        if kind == "linear_attention":
            out += [(f"{base}.linear_attn.conv1d.weight", "BF16", [HIDDEN, 1, 4]),
                    (f"{base}.linear_attn.A_log", "F32", [4]),
                    (f"{base}.linear_attn.dt_bias", "BF16", [4]),
                    (f"{base}.linear_attn.norm.weight", "F32", [32])]
        else:
            out += [(f"{base}.self_attn.q_norm.weight", "BF16", [32]),
                    (f"{base}.self_attn.k_norm.weight", "BF16", [32])]
    return out


def _mtp_norms() -> list[tuple[str, str, list[int]]]:
    return [(f"mtp.{n}.weight", "BF16", [HIDDEN]) for n in
            ("pre_fc_norm_hidden", "pre_fc_norm_embedding", "norm",
             "layers.0.input_layernorm", "layers.0.post_attention_layernorm",
             "layers.0.self_attn.q_norm", "layers.0.self_attn.k_norm")]


def quantized_tensors(fmt: str, module: str, rows: int, cols: int):
    """The tensors of one quantized linear (quant-formats.md layouts, group size 32)."""
    if fmt == "ct-pack":
        return [(f"{module}.weight_packed", "I32", [rows, cols // 8]),
                (f"{module}.weight_scale", "BF16", [rows, cols // 32]),
                (f"{module}.weight_shape", "I64", [2])]
    if fmt == "gptq":
        return [(f"{module}.qweight", "I32", [cols // 8, rows]),
                (f"{module}.qzeros", "I32", [cols // 32, rows // 8]),
                (f"{module}.scales", "F16", [cols // 32, rows]),
                (f"{module}.g_idx", "I32", [cols])]
    if fmt == "awq":
        return [(f"{module}.qweight", "I32", [cols, rows // 8]),
                (f"{module}.qzeros", "I32", [cols // 32, rows // 8]),
                (f"{module}.scales", "F16", [cols // 32, rows])]
    if fmt == "fp8-block":
        return [(f"{module}.weight", "F8_E4M3", [rows, cols]),
                (f"{module}.weight_scale_inv", "F32", [(rows + 127) // 128, (cols + 127) // 128])]
    if fmt == "modelopt-nvfp4":
        return [(f"{module}.weight", "U8", [rows, cols // 2]),
                (f"{module}.weight_scale", "F8_E4M3", [rows, cols // 16]),
                (f"{module}.weight_scale_2", "F32", []),
                (f"{module}.input_scale", "F32", [])]
    if fmt == "modelopt-fp8":
        return [(f"{module}.weight", "F8_E4M3", [rows, cols]),
                (f"{module}.weight_scale", "F32", []),
                (f"{module}.input_scale", "F32", [])]
    if fmt == "bnb-4bit":
        return [(f"{module}.weight", "U8", [rows * cols // 2, 1]),
                (f"{module}.weight.absmax", "F32", [rows * cols // 64]),
                (f"{module}.weight.quant_map", "F32", [16]),
                (f"{module}.weight.quant_state.bitsandbytes__nf4", "U8", [64])]
    raise ValueError(fmt)


_BITS = {"BF16": 16, "F16": 16, "F32": 32, "I32": 32, "I64": 64, "U8": 8, "F8_E4M3": 8}


def _nbytes(dtype: str, shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * _BITS[dtype] // 8


def tensors_for(prefix: str, storage: dict[str, bool], fmt: str):
    """All tensors, as (name, dtype, shape, file). `storage[module]` is True when quantized;
    the vision tower is there when `storage` names it."""
    out = []
    vision = [m for m in vision_linears() if m in storage]
    if vision:
        out += [("model.visual.patch_embed.proj.weight", "BF16", [HIDDEN, 3, 2, 4, 4],
                 "model-00001-of-00002.safetensors"),
                ("model.visual.blocks.0.norm1.weight", "BF16", [HIDDEN],
                 "model-00001-of-00002.safetensors"),
                ("model.visual.merger.norm.weight", "BF16", [HIDDEN],
                 "model-00001-of-00002.safetensors")]
    for module in vision + main_linears(prefix) + mtp_linears() + ["lm_head"]:
        rows = VOCAB if module == "lm_head" else HIDDEN
        file = "model-00002-of-00002.safetensors" if module.startswith("mtp.") else \
            "model-00001-of-00002.safetensors"
        if storage[module]:
            out += [(n, d, s, file) for n, d, s in quantized_tensors(fmt, module, rows, HIDDEN)]
        else:
            out.append((f"{module}.weight", "BF16", [rows, HIDDEN], file))
    out += [(n, d, s, "model-00001-of-00002.safetensors") for n, d, s in _other_tensors(prefix)]
    out += [(n, d, s, "model-00002-of-00002.safetensors") for n, d, s in _mtp_norms()]
    return out


def write_checkpoint(directory: str, tensors, files: dict[str, str]) -> None:
    """Write the shards (header, then a sparse data region), the index and the JSON files."""
    os.makedirs(directory, exist_ok=True)
    shards: dict[str, list] = {}
    for name, dtype, shape, file in tensors:
        shards.setdefault(file, []).append((name, dtype, shape))
    weight_map, total = {}, 0
    for file, entries in sorted(shards.items()):
        header, offset = {}, 0
        for name, dtype, shape in sorted(entries):
            size = _nbytes(dtype, shape)
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
            weight_map[name] = file
        total += offset
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(directory, file), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            f.truncate(8 + len(text) + offset)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    for name, text in files.items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
