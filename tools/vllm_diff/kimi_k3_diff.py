#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness for Kimi-K3 compressed-tensors checkpoints: qpatch against vLLM's code.

From a vLLM source checkout (vllm_source.py) it runs CompressedTensorsConfig.from_config, the
model's SupportsQuant mapping (KimiK3ForConditionalGeneration.hf_to_vllm_mapper, unstacked,
and KimiLinearModel.packed_modules_mapping, both read from vllm/models/kimi_k3/nvidia/model.py)
and get_quant_method for every linear KimiK3ForConditionalGeneration and KimiK3MTP build,
under the names they build them as (traced by hand at 017e9f4, src/engine/vllm/naming.cpp
kimi_k3_row: that table is what this harness does not execute). Routed experts are asked as
CompressedTensorsMoEMethod.get_moe_method asks (compressed_tensors_moe.py): get_scheme_dict for
the layer's .0.gate_proj, .0.up_proj, .0.down_proj, which must agree; None is dense. A module
stored BF16 under a layer built quantized, or stored NVFP4 under one built dense, is broken; so
is a config vLLM's code raises for. The measures are arch_driver.py's: detection,
fix-then-clean, confined (only `ignore` edited), idempotent.

  VLLM_SRC=/path/to/vllm tools/vllm_diff/kimi_k3_diff.py --qpatch build/qpatch --cases 300
"""
from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arch_driver  # noqa: E402
import layout  # noqa: E402
from vllm_model import (_RAISES, ColumnParallelLinear, MergedColumnParallelLinear,  # noqa: E402
                        ParallelLMHead, RoutedExperts, RowParallelLinear, VllmEngine,
                        storage_problems)

layout._BITS.update({"F8_E4M3": 8, "U8": 8})
KimiGDN = type("_KimiGDNMergedColumnParallelLinear", (MergedColumnParallelLinear,), {})
MODEL = "vllm/models/kimi_k3/nvidia/model.py"
P = "language_model.model.layers."
# (checkpoint module under the layer, vLLM layer under the layer's built prefix, class)
KDA = [("self_attn." + s, "self_attn.in_proj_qkvgfab", KimiGDN)
       for s in ("q_proj", "k_proj", "v_proj", "g_proj", "b_proj", "f_a_proj")] + [
    ("self_attn.f_b_proj", "self_attn.f_b_proj", ColumnParallelLinear),
    ("self_attn.o_proj", "self_attn.o_proj", RowParallelLinear),
    ("mlp.gate_proj", "mlp.gate_up_proj", MergedColumnParallelLinear),
    ("mlp.up_proj", "mlp.gate_up_proj", MergedColumnParallelLinear),
    ("mlp.down_proj", "mlp.down_proj", RowParallelLinear)]
MLA = [("self_attn.q_a_proj", "self_attn.fused_qkv_a_proj", MergedColumnParallelLinear),
       ("self_attn.kv_a_proj_with_mqa", "self_attn.fused_qkv_a_proj", MergedColumnParallelLinear),
       ("self_attn.q_b_proj", "self_attn.q_b_proj", ColumnParallelLinear),
       ("self_attn.kv_b_proj", "self_attn.kv_b_proj", ColumnParallelLinear),
       ("self_attn.g_proj", "self_attn.g_proj", ColumnParallelLinear),
       ("self_attn.o_proj", "self_attn.o_proj", RowParallelLinear),
       ("block_sparse_moe.shared_experts.gate_proj", "block_sparse_moe.shared_experts.gate_up_proj",
        MergedColumnParallelLinear),
       ("block_sparse_moe.shared_experts.up_proj", "block_sparse_moe.shared_experts.gate_up_proj",
        MergedColumnParallelLinear),
       ("block_sparse_moe.shared_experts.down_proj", "block_sparse_moe.shared_experts.down_proj",
        RowParallelLinear),
       ("block_sparse_moe.experts", "block_sparse_moe.experts", RoutedExperts)]
LAYERS = 2  # layer 0 KDA, layer 1 MLA + MoE; the draft is layer 2 (MLA + MoE)


def built_prefix(layer: int) -> str:
    return f"model.layers.{layer}." if layer == LAYERS else f"{P}{layer}."


def modules():
    """(checkpoint module, built layer, class) of every quantizable linear, and the head
    (KimiLinearForCausalLM's ParallelLMHead at language_model.lm_head, with the quant config)."""
    out = [("language_model.lm_head", "language_model.lm_head", ParallelLMHead)]
    out += [(f"{P}0.{m}", built_prefix(0) + b, c) for m, b, c in KDA]
    for layer in (1, 2):
        out += [(f"{P}{layer}.{m}", built_prefix(layer) + b, c) for m, b, c in MLA]
    return out


def make_case(rng: random.Random):
    storage = {}
    dense_draft = rng.random() < 0.5
    for name, _, _ in modules():
        quantized = not (dense_draft and name.startswith(f"{P}{LAYERS}.")) and \
            name != "language_model.lm_head"
        if rng.random() < 0.03:
            quantized = not quantized
        storage[name] = quantized
    pool = ["lm_head", "language_model.lm_head", "re:vision_tower.*", "re:.*mm_projector.*",
            "re:.*layers\\.2\\..*", "re:^model\\..*", "re:.*shared_experts.*", "re:.*g_proj$",
            "re:.*in_proj_qkvgfab", "re:.*experts.*"]
    for name, built, _ in modules():
        pool += [name, built, name.replace("language_model.model.layers.", "language_model.layers.")]
    for layer in (1, 2):
        for b in (f"{P}{layer}", built_prefix(layer).rstrip(".")):
            pool += [f"{b}.block_sparse_moe.experts.0.gate_proj",
                     f"{b}.block_sparse_moe.experts.0.w1", f"{b}.self_attn.fused_qkv_a_proj"]
    ignore = rng.sample(pool, rng.randint(0, 3)) if rng.random() < 0.7 else []
    if rng.random() < 0.6:
        style = rng.choice(["vllm", "checkpoint", "both"])
        for name, built, _ in modules():
            if not storage[name]:
                if style in ("vllm", "both"):
                    ignore.append(built)
                if style in ("checkpoint", "both"):
                    ignore.append(name)
    ignore = list(dict.fromkeys(ignore))
    targets = rng.choice([["Linear"]] * 4 + [["re:.*proj.*", "re:.*experts.*"], ["Linear", "re:.*"]])
    scheme = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}
    quant = {"config_groups": {"group_0": {"targets": targets, "weights": dict(scheme),
                                           "input_activations": dict(scheme, dynamic="local")}},
             "format": "nvfp4-pack-quantized", "ignore": ignore,
             "quant_method": "compressed-tensors"}
    return storage, quant


def tensors(storage: dict[str, bool]):
    def linear(name: str, quantized: bool):
        if quantized:
            return [(name + ".weight_packed", "U8", [64, 32]),
                    (name + ".weight_scale", "F8_E4M3", [64, 4]),
                    (name + ".weight_global_scale", "F32", [1]),
                    (name + ".input_global_scale", "F32", [1])]
        return [(name + ".weight", "BF16", [64, 64])]

    out = [("language_model.model.embed_tokens.weight", "BF16", [128, 64]),
           ("vision_tower.encoder.blocks.0.wqkv.weight", "BF16", [64, 64]),
           ("mm_projector.proj.0.weight", "BF16", [64, 64])]
    for c in ("q_conv1d", "k_conv1d", "v_conv1d"):
        out.append((f"{P}0.self_attn.{c}.weight", "BF16", [64, 1, 4]))
    for layer in (1, 2):
        out.append((f"{P}{layer}.block_sparse_moe.gate.weight", "BF16", [2, 64]))
    out += [(f"{P}2.eh_proj.weight", "BF16", [64, 128]), (f"{P}2.enorm.weight", "BF16", [64]),
            (f"{P}2.hnorm.weight", "BF16", [64])]
    for name, quantized in storage.items():
        if name.endswith(".experts"):
            for e in range(2):
                for w in ("w1", "w2", "w3"):
                    out += linear(f"{name}.{e}.{w}", quantized)
        else:
            out += linear(name, quantized)
    return [(n, d, s, "model.safetensors") for n, d, s in out]


class Vllm:
    def __init__(self, root: str):
        self.engine = VllmEngine(root)
        src = self.engine.src
        env = {"WeightsMapper": self.engine.WeightsMapper}
        self.mapper = src.literal_attr(MODEL, "KimiK3ForConditionalGeneration",
                                       "hf_to_vllm_mapper", env)
        self.packed = src.literal_attr(MODEL, "KimiLinearModel", "packed_modules_mapping", env)

    def problems(self, storage: dict[str, bool], quant: dict) -> list[str]:
        config = {"architectures": ["KimiK3ForConditionalGeneration"],
                  "quantization_config": quant}
        try:
            cfg, _ = self.engine.quant_config(config, {})
            # SupportsQuant.__new__ (interfaces.py): the class's mapper, unstacked, then
            # KimiLinearModel's packed_modules_mapping added to the config's.
            cfg.apply_vllm_mapper(self.mapper.get_unstacked_mapper())
            cfg.packed_modules_mapping.update(self.packed)
        except _RAISES as e:
            return [f"config raises: {e}"]
        return storage_problems(cfg, modules(), storage, quantized="NVFP4")


def make_build(root: str):
    vllm = Vllm(root)

    def build(rng: random.Random):
        storage, quant = make_case(rng)
        config = {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
                  "text_config": {"num_hidden_layers": LAYERS, "num_nextn_predict_layers": 1},
                  "quantization_config": quant}
        return config, tensors(storage), lambda q: vllm.problems(storage, q)

    return build


if __name__ == "__main__":
    sys.exit(arch_driver.main("Kimi-K3 compressed-tensors", __doc__.splitlines()[0], make_build,
                              ("ignore",)))
