#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness for DeepSeek-V4 "fp8" checkpoints: qpatch against vLLM's own code.

vLLM loads an "fp8" DeepSeek-V4 checkpoint through DeepseekV4FP8Config, which is Fp8Config
with its own RoutedExperts dispatch (vllm/models/deepseek_v4/quant_config.py). This harness
runs, from a vLLM source checkout (vllm_source.py), the code that decides which layer is built
quantized: Fp8Config.from_config, Fp8Config.apply_vllm_mapper with the model's own
_make_deepseek_v4_weights_mapper("fp4") (nvidia/model.py, the class attribute
configure_quant_config applies), and Fp8Config.get_quant_method (is_layer_skipped) for every
layer DeepseekV4ForCausalLM and DeepSeekV4MTP build, under the names they build them as
(traced by hand at 017e9f4 and cited in src/engine/vllm/naming.cpp deepseek_v4_row: that
table is the one thing this harness does not execute). A case is broken for vLLM when a module
stored BF16 is built quantized (its weight is cast, its scale never loaded), a module stored
FP8/MXFP4 is built dense (its `.scale` has no parameter: KeyError), or a wo_a is built dense
(the NVIDIA o_proj kernel reads its scale). The measures are arch_driver.py's: detection,
fix-then-clean, confined (only the skip lists edited), idempotent.

  VLLM_SRC=/path/to/vllm tools/vllm_diff/dsv4_diff.py --qpatch build/qpatch --cases 300
"""
from __future__ import annotations

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arch_driver  # noqa: E402
import layout  # noqa: E402
from vllm_model import (M, ColumnParallelLinear, MergedColumnParallelLinear,  # noqa: E402
                        ReplicatedLinear, RoutedExperts, RowParallelLinear, Unquantized,
                        VllmEngine)

layout._BITS.update({"I8": 8, "F8_E8M0": 8})
HIDDEN = 64
# Linears of one decoder block: checkpoint module -> (vLLM layer it is built into, class).
BLOCK = {
    "attn.wq_a": ("attn.fused_wqa_wkv", MergedColumnParallelLinear),
    "attn.wkv": ("attn.fused_wqa_wkv", MergedColumnParallelLinear),
    "attn.wq_b": ("attn.wq_b", ColumnParallelLinear),
    "attn.wo_a": ("attn.wo_a", ColumnParallelLinear),
    "attn.wo_b": ("attn.wo_b", RowParallelLinear),
    "ffn.shared_experts.w1": ("ffn.shared_experts.gate_up_proj", MergedColumnParallelLinear),
    "ffn.shared_experts.w3": ("ffn.shared_experts.gate_up_proj", MergedColumnParallelLinear),
    "ffn.shared_experts.w2": ("ffn.shared_experts.down_proj", RowParallelLinear),
}
DRAFT_ONLY = {"e_proj": ("e_proj", ReplicatedLinear), "h_proj": ("h_proj", ReplicatedLinear)}
EXPERTS = 2


def make_case(rng: random.Random, layers: int):
    """Storage of every module (True: FP8 / MXFP4) and the config's skip lists."""
    storage = {}
    for n in range(layers + 1):
        draft = n == layers
        ck = f"mtp.0." if draft else f"layers.{n}."
        dense_block = draft and rng.random() < 0.5  # an export that left the draft BF16
        modules = list(BLOCK) + (list(DRAFT_ONLY) if draft else [])
        for m in modules:
            quantized = not dense_block
            if rng.random() < 0.03:
                quantized = not quantized
            if m == "attn.wo_a" and rng.random() < 0.7:
                quantized = True
            storage[ck + m] = quantized
        experts_quantized = not (dense_block and rng.random() < 0.5)
        storage[ck + "ffn.experts"] = experts_quantized
    pool = []
    for name in storage:
        pool += [name, "model." + name if name.startswith("layers.") else name]
        if name.startswith("mtp.0."):
            rest = name[len("mtp.0."):]
            pool += [f"layers.{layers}.{rest}", f"model.layers.{layers}.{rest}"]
    for n in range(layers + 1):
        pool += [f"layers.{n}.attn.fused_wqa_wkv", f"model.layers.{n}.attn.fused_wqa_wkv",
                 f"layers.{n}.ffn.shared_experts.gate_up_proj",
                 f"layers.{n}.ffn.experts.0.w1", f"model.layers.{n}.ffn.experts.1.w2.weight",
                 f"layers.{n}.attn.wq_b.weight", f"layers.{n}.ffn.shared_experts"]
    pool += ["mtp.0.ffn.experts", "lm_head", "head", "embed"]
    entries = rng.sample(pool, rng.randint(0, 3)) if rng.random() < 0.6 else []
    if rng.random() < 0.6:
        # A list written for the dense modules: by their vLLM names, their checkpoint names or
        # both (a careful exporter, or one that wrote checkpoint names vLLM never matches).
        style = rng.choice(["vllm", "checkpoint", "both"])
        for name, quantized in storage.items():
            if quantized:
                continue
            rest = name[len("mtp.0."):] if name.startswith("mtp.0.") else name.split(".", 2)[2]
            n = layers if name.startswith("mtp.0.") else int(name.split(".")[1])
            built = {**BLOCK, **DRAFT_ONLY, "ffn.experts": ("ffn.experts", None)}[rest][0]
            if style in ("vllm", "both"):
                entries.append(f"model.layers.{n}.{built}")
            if style in ("checkpoint", "both"):
                entries.append(name)
        entries = list(dict.fromkeys(entries))
    config = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
              "scale_fmt": "ue8m0", "weight_block_size": [128, 128]}
    key = rng.choice(["ignored_layers"] * 6 + ["modules_to_not_convert"] * 2 + ["both", "none"])
    if key in ("ignored_layers", "both"):
        config["ignored_layers"] = entries
    if key in ("modules_to_not_convert", "both"):
        config["modules_to_not_convert"] = entries if key != "both" else rng.sample(
            pool, rng.randint(0, 4))
    return storage, config


def tensors(storage: dict[str, bool], layers: int):
    out = [("embed.weight", "BF16", [128, HIDDEN]), ("head.weight", "BF16", [128, HIDDEN]),
           ("norm.weight", "BF16", [HIDDEN])]
    for n in range(layers):
        out += [(f"layers.{n}.attn.compressor.wkv.weight", "BF16", [HIDDEN, HIDDEN]),
                (f"layers.{n}.attn.compressor.wgate.weight", "BF16", [HIDDEN, HIDDEN]),
                (f"layers.{n}.ffn.gate.weight", "BF16", [EXPERTS, HIDDEN]),
                (f"layers.{n}.attn_norm.weight", "BF16", [HIDDEN])]
    out += [("mtp.0.enorm.weight", "BF16", [HIDDEN]), ("mtp.0.hnorm.weight", "BF16", [HIDDEN])]
    for name, quantized in storage.items():
        if name.endswith("ffn.experts"):
            for e in range(EXPERTS):
                for w in ("w1", "w2", "w3"):
                    base = f"{name}.{e}.{w}"
                    if quantized:
                        out += [(base + ".weight", "I8", [HIDDEN, HIDDEN // 2]),
                                (base + ".scale", "F8_E8M0", [HIDDEN, HIDDEN // 32])]
                    else:
                        out.append((base + ".weight", "BF16", [HIDDEN, HIDDEN]))
        elif quantized:
            out += [(name + ".weight", "F8_E4M3", [HIDDEN, HIDDEN]),
                    (name + ".scale", "F8_E8M0", [1, 1])]
        else:
            out.append((name + ".weight", "BF16", [HIDDEN, HIDDEN]))
    return [(n, d, s, "model.safetensors") for n, d, s in out]


class Vllm:
    def __init__(self, root: str):
        self.engine = VllmEngine(root)
        self.fp8 = self.engine.classes["fp8"][0]
        ns = self.engine.src.namespace("vllm/models/deepseek_v4/nvidia/model.py")
        ns.update(self.engine.stand)
        ns["re"] = __import__("re")
        self.engine.src.load("vllm/models/deepseek_v4/nvidia/model.py",
                             "_make_deepseek_v4_weights_mapper", ns=ns)
        self.mapper = ns["_make_deepseek_v4_weights_mapper"]("fp4")

    def problems(self, storage: dict[str, bool], quant: dict, layers: int) -> list[str]:
        cfg = self.fp8.from_config(json.loads(json.dumps(quant)))
        cfg.apply_vllm_mapper(self.mapper.get_unstacked_mapper())
        built: dict[str, bool] = {}

        def build(prefix: str, cls) -> bool:
            if prefix not in built:
                method = cfg.get_quant_method(cls(prefix), prefix)
                built[prefix] = method is not None and not isinstance(method, Unquantized)
            return built[prefix]

        out = []
        for name, quantized in storage.items():
            draft = name.startswith("mtp.0.")
            rest = name[len("mtp.0."):] if draft else name.split(".", 2)[2]
            n = layers if draft else int(name.split(".")[1])
            table = {**BLOCK, **DRAFT_ONLY, "ffn.experts": ("ffn.experts", RoutedExperts)}
            layer, cls = table[rest]
            is_quantized = build(f"model.layers.{n}.{layer}", cls)
            if is_quantized != quantized:
                out.append(f"{name}: stored {'quantized' if quantized else 'BF16'}, built "
                           f"{'quantized' if is_quantized else 'dense'}")
            elif layer == "attn.wo_a" and not is_quantized:
                out.append(f"{name}: built dense, the FP8 o_proj reads its scale")
        return out


def make_build(root: str):
    vllm = Vllm(root)

    def build(rng: random.Random):
        layers = rng.randint(1, 2)
        storage, quant = make_case(rng, layers)
        config = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
                  "num_hidden_layers": layers, "num_nextn_predict_layers": 1,
                  "quantization_config": quant}
        return config, tensors(storage, layers), lambda q: vllm.problems(storage, q, layers)

    return build


if __name__ == "__main__":
    sys.exit(arch_driver.main("DeepSeek-V4 fp8", __doc__.splitlines()[0], make_build,
                              ("ignored_layers", "modules_to_not_convert")))
