#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness for Qwen3-VL, Qwen3-VL-MoE, Qwen3-MoE and Qwen2.5-VL checkpoints against vLLM.

From a vLLM source checkout (vllm_source.py) it runs, per case, the quant config's own
from_config (compressed-tensors W4A16 pack-quantized, FP8 block, or AWQ) and
maybe_update_config over the headers (AWQ's list derived when empty), configure_quant_config's
mapping for the model class (model_loader/utils.py: neither class is SupportsQuant, so the
class's hf_to_vllm_mapper, unstacked, renames the config's lists and its packed_modules_mapping
becomes the config's), both read from the class bodies in qwen3_vl.py and qwen3_vl_moe.py, and
get_quant_method for every linear Qwen3VLForConditionalGeneration,
Qwen3VLMoeForConditionalGeneration, Qwen3MoeForCausalLM or Qwen2_5_VLForConditionalGeneration
(the last two SupportsQuant: the mapper and mapping added to the config's; Qwen2.5-VL over
checkpoints in transformers' names from 4.52 and in the older ones) builds, under the names it builds them as (traced by hand at
017e9f4 and cited in src/engine/vllm/naming.cpp qwen3_vl_row: that table is what this harness
does not execute). Routed experts under compressed-tensors are asked as
CompressedTensorsMoEMethod.get_moe_method asks (get_scheme_dict for .0.gate_proj, .0.up_proj,
.0.down_proj, which must agree). A module stored BF16 under a layer built quantized, or stored
quantized under one built dense, is broken; so is a config vLLM's code raises for. The measures
are arch_driver.py's: detection, fix-then-clean, confined (only the skip list edited),
idempotent.

  VLLM_SRC=/path/to/vllm tools/vllm_diff/qwen3_vl_diff.py --qpatch build/qpatch --cases 300
"""
from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arch_driver  # noqa: E402
import layout  # noqa: E402
from vllm_model import (_RAISES, ColumnParallelLinear, MergedColumnParallelLinear,  # noqa: E402
                        ParallelLMHead, QKVParallelLinear, ReplicatedLinear, RoutedExperts,
                        RowParallelLinear, VllmEngine, storage_problems)

DENSE = "Qwen3VLForConditionalGeneration"
MOE = "Qwen3VLMoeForConditionalGeneration"
TEXT_MOE = "Qwen3MoeForCausalLM"  # the same router, text only, SupportsQuant
QWEN25 = "Qwen2_5_VLForConditionalGeneration"  # SupportsQuant; transformers >= 4.52 names
QWEN25_OLD = QWEN25 + ":old"  # the same class over older checkpoints: model.layers.N, visual.*
QWEN2 = "Qwen2VLForConditionalGeneration"  # not SupportsQuant; its Qwen2ForCausalLM is
GEMMA3 = "Gemma3ForConditionalGeneration"  # not SupportsQuant; transformers >= 4.52 names
GEMMA3_OLD = GEMMA3 + ":old"  # language_model.model.layers.N, vision_tower.vision_model.*
FILES = {DENSE: "vllm/model_executor/models/qwen3_vl.py",
         MOE: "vllm/model_executor/models/qwen3_vl_moe.py",
         TEXT_MOE: "vllm/model_executor/models/qwen3_moe.py",
         QWEN25: "vllm/model_executor/models/qwen2_5_vl.py",
         QWEN2: "vllm/model_executor/models/qwen2_vl.py",
         GEMMA3: "vllm/model_executor/models/gemma3_mm.py"}
QWEN2_LM = "vllm/model_executor/models/qwen2.py"
SUPPORTS_QUANT = (TEXT_MOE, QWEN25)
LAYERS = 2
EXPERTS = 2
HIDDEN = 64
ATTN = [("self_attn.q_proj", "self_attn.qkv_proj", QKVParallelLinear),
        ("self_attn.k_proj", "self_attn.qkv_proj", QKVParallelLinear),
        ("self_attn.v_proj", "self_attn.qkv_proj", QKVParallelLinear),
        ("self_attn.o_proj", "self_attn.o_proj", RowParallelLinear)]
MLP = [("mlp.gate_proj", "mlp.gate_up_proj", MergedColumnParallelLinear),
       ("mlp.up_proj", "mlp.gate_up_proj", MergedColumnParallelLinear),
       ("mlp.down_proj", "mlp.down_proj", RowParallelLinear)]
MOE_MLP = [("mlp.gate", "mlp.gate", ReplicatedLinear),
           ("mlp.experts", "mlp.experts", RoutedExperts)]
# Qwen3_VisionTransformer (qwen3_vl.py; its attention is qwen2_5_vl.py Qwen2_5_VisionAttention):
# every linear with the model's quant config, at visual.*.
VISION = [("blocks.0.attn.qkv", QKVParallelLinear), ("blocks.0.attn.proj", RowParallelLinear),
          ("blocks.0.mlp.linear_fc1", ColumnParallelLinear),
          ("blocks.0.mlp.linear_fc2", RowParallelLinear),
          ("merger.linear_fc1", ColumnParallelLinear), ("merger.linear_fc2", RowParallelLinear),
          ("deepstack_merger_list.0.linear_fc1", ColumnParallelLinear),
          ("deepstack_merger_list.0.linear_fc2", RowParallelLinear)]
# Qwen2_5_VisionTransformer (qwen2_5_vl.py): attn.qkv, attn.proj, the MLP's gate/up fused into
# gate_up_proj, down_proj, the merger's mlp.0 and mlp.2; every one with the quant config.
VISION25 = [("blocks.0.attn.qkv", "blocks.0.attn.qkv", QKVParallelLinear),
            ("blocks.0.attn.proj", "blocks.0.attn.proj", RowParallelLinear),
            ("blocks.0.mlp.gate_proj", "blocks.0.mlp.gate_up_proj", MergedColumnParallelLinear),
            ("blocks.0.mlp.up_proj", "blocks.0.mlp.gate_up_proj", MergedColumnParallelLinear),
            ("blocks.0.mlp.down_proj", "blocks.0.mlp.down_proj", RowParallelLinear),
            ("merger.mlp.0", "merger.mlp.0", ColumnParallelLinear),
            ("merger.mlp.2", "merger.mlp.2", RowParallelLinear)]


# Qwen2VisionTransformer (qwen2_vl.py): attn.qkv, attn.proj, mlp.fc1, mlp.fc2, merger.mlp.0
# and mlp.2, every one with the quant config.
VISION2 = [("blocks.0.attn.qkv", "blocks.0.attn.qkv", QKVParallelLinear),
           ("blocks.0.attn.proj", "blocks.0.attn.proj", RowParallelLinear),
           ("blocks.0.mlp.fc1", "blocks.0.mlp.fc1", ColumnParallelLinear),
           ("blocks.0.mlp.fc2", "blocks.0.mlp.fc2", RowParallelLinear),
           ("merger.mlp.0", "merger.mlp.0", ColumnParallelLinear),
           ("merger.mlp.2", "merger.mlp.2", RowParallelLinear)]
QWEN2_FAMILY = (QWEN25, QWEN2)
# SiglipVisionModel (siglip.py) at vision_tower.vision_model: q/k/v into qkv_proj and out_proj
# with the quant config; SiglipMLP's fc1/fc2 with none (class None) unless hidden and
# intermediate sizes are multiples of 64 or the method is bitsandbytes/torchao: Gemma 3's
# (1152, 4304) are not.
SIGLIP = [("encoder.layers.0.self_attn.q_proj", "encoder.layers.0.self_attn.qkv_proj",
           QKVParallelLinear),
          ("encoder.layers.0.self_attn.k_proj", "encoder.layers.0.self_attn.qkv_proj",
           QKVParallelLinear),
          ("encoder.layers.0.self_attn.v_proj", "encoder.layers.0.self_attn.qkv_proj",
           QKVParallelLinear),
          ("encoder.layers.0.self_attn.out_proj", "encoder.layers.0.self_attn.out_proj",
           RowParallelLinear),
          ("encoder.layers.0.mlp.fc1", "encoder.layers.0.mlp.fc1", None),
          ("encoder.layers.0.mlp.fc2", "encoder.layers.0.mlp.fc2", None)]


def architecture(arch: str) -> str:
    return arch.split(":")[0]


def checkpoint_layers(arch: str) -> str:
    if arch == GEMMA3_OLD:
        return "language_model.model.layers."
    return "model.layers." if arch in (TEXT_MOE, QWEN25_OLD) else "model.language_model.layers."


def vision_prefix(arch: str) -> str:
    if architecture(arch) == GEMMA3:
        return "vision_tower.vision_model." if arch == GEMMA3_OLD else \
            "model.vision_tower.vision_model."
    return "visual." if arch == QWEN25_OLD else "model.visual."


def modules(arch: str):
    """(checkpoint module, vLLM layer, class) of every linear the class builds. The dense
    class's Qwen3LLMForCausalLM builds its ParallelLMHead with prefix="lm_head" (written in);
    the MoE class's Qwen3MoeLLMForCausalLM with maybe_prefix(prefix, "lm_head"). Qwen3-MoE
    builds everything under the checkpoint's names."""
    if arch == TEXT_MOE:
        head, ck, built = "lm_head", "model.layers.", "model.layers."
        out = [("lm_head", head, ParallelLMHead)]
    elif architecture(arch) == GEMMA3:
        # Gemma3ForCausalLM at language_model; its head is tied to embed_tokens (no tensor).
        ck, built = checkpoint_layers(arch), "language_model.model.layers."
        out = [(vision_prefix(arch) + m, "vision_tower.vision_model." + b, c)
               for m, b, c in SIGLIP]
    elif architecture(arch) in QWEN2_FAMILY:
        # Qwen2ForCausalLM at language_model: its head at language_model.lm_head.
        ck, built = checkpoint_layers(arch), "language_model.model.layers."
        out = [("lm_head", "language_model.lm_head", ParallelLMHead)]
        vision = VISION25 if architecture(arch) == QWEN25 else VISION2
        out += [(vision_prefix(arch) + m, "visual." + b, c) for m, b, c in vision]
    else:
        head = "lm_head" if arch == DENSE else "language_model.lm_head"
        ck, built = "model.language_model.layers.", "language_model.model.layers."
        out = [("lm_head", head, ParallelLMHead)]
        out += [(f"model.visual.{m}", f"visual.{m}", c) for m, c in VISION]
    for n in range(LAYERS):
        for m, b, c in ATTN + (MOE_MLP if arch in (MOE, TEXT_MOE) else MLP):
            out.append((f"{ck}{n}.{m}", f"{built}{n}.{b}", c))
    return out


def make_case(rng: random.Random, arch: str, method: str, built_modules=None):
    """Storage of every module (True: quantized) and the quantization_config. `built_modules`
    (modules()'s shape) names the layers as another engine builds them (SGLang's harness)."""
    built_modules = built_modules or modules(arch)
    storage = {}
    # An export that left a whole layer (every shard of a fused one) the other way, and, more
    # rarely, one shard of a fused layer (which no config can make loadable).
    flipped = {built for _, built, _ in built_modules if rng.random() < 0.05}
    for name, built, _ in built_modules:
        quantized = name.startswith(checkpoint_layers(arch)) and not name.endswith("mlp.gate")
        if (built in flipped) != (rng.random() < 0.01):
            quantized = not quantized
        storage[name] = quantized
    pool = ["lm_head", "language_model.lm_head", "re:.*visual.*", "re:^model\\.visual\\..*",
            "re:visual.*", "re:.*mlp.gate$", "re:.*merger.*", "re:.*lm_head", "model.visual",
            "re:^model\\..*", "re:.*vision_tower.*", "vision_tower", "re:.*fc1$",
            "visual", "re:.*attn\\.qkv$", "model.visual.blocks.0.attn.qkv_proj"]
    for name, built, _ in built_modules:
        pool += [name, built]
    for n in range(LAYERS):
        ck = checkpoint_layers(arch)
        pool += [f"{ck}{n}.self_attn.qkv_proj", f"{ck}{n}.mlp.experts.0.gate_proj",
                 f"{ck}{n}.mlp.experts.1.down_proj", f"model.layers.{n}.self_attn.o_proj",
                 f"language_model.model.layers.{n}.mlp.gate"]
    entries = rng.sample(pool, rng.randint(0, 3)) if rng.random() < 0.7 else []
    if rng.random() < 0.6:
        # A list written for the dense modules: the checkpoint's names (what exporters write),
        # vLLM's, or both.
        style = rng.choice(["checkpoint"] * 2 + ["vllm", "both"])
        for name, built, _ in built_modules:
            if not storage[name]:
                if style in ("vllm", "both"):
                    entries.append(built)
                if style in ("checkpoint", "both"):
                    entries.append(name)
    entries = list(dict.fromkeys(entries))
    if method == "compressed-tensors":
        targets = rng.choice([["Linear"]] * 4 + [["re:.*proj.*", "re:.*experts.*"]])
        weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                   "group_size": 32}
        return storage, {"config_groups": {"group_0": {"targets": targets, "weights": weights}},
                         "format": "pack-quantized", "ignore": entries,
                         "quant_method": "compressed-tensors"}
    if method == "awq":
        # AutoAWQ's list: vLLM's is_layer_skipped_awq tests substrings.
        return storage, {"bits": 4, "group_size": 32, "zero_point": True, "version": "gemm",
                         "modules_to_not_convert": entries, "quant_method": "awq"}
    quant = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
             "weight_block_size": [128, 128]}
    quant[rng.choice(["ignored_layers", "modules_to_not_convert"])] = entries
    return storage, quant


def tensors(arch: str, storage: dict[str, bool], method: str):
    fmt = {"compressed-tensors": "ct-pack", "awq": "awq", "fp8": "fp8-block"}[method]

    def linear(name: str, quantized: bool, rows: int = HIDDEN):
        if quantized:
            return layout.quantized_tensors(fmt, name, rows, HIDDEN)
        return [(name + ".weight", "BF16", [rows, HIDDEN])]

    text = checkpoint_layers(arch).removesuffix("layers.")
    out = [(text + "embed_tokens.weight", "BF16", [128, HIDDEN]),
           (text + "norm.weight", "BF16", [HIDDEN])]
    if arch != TEXT_MOE:
        out += [(vision_prefix(arch) + "patch_embed.proj.weight", "BF16", [HIDDEN, 3, 2, 16, 16]),
                (vision_prefix(arch) + "blocks.0.norm1.weight", "BF16", [HIDDEN])]
    for name, quantized in storage.items():
        if name.endswith(".experts"):
            for e in range(EXPERTS):
                for w in ("gate_proj", "up_proj", "down_proj"):
                    out += linear(f"{name}.{e}.{w}", quantized)
        elif name.endswith("mlp.gate"):
            out += linear(name, quantized, rows=EXPERTS * 8)
        else:
            out += linear(name, quantized, rows=128 if name == "lm_head" else HIDDEN)
    return [(n, d, s, "model.safetensors") for n, d, s in out]


def config_json(arch: str, quant: dict) -> dict:
    text = {"num_hidden_layers": LAYERS, "tie_word_embeddings": False}
    if arch in (MOE, TEXT_MOE):
        text.update(num_experts=EXPERTS, num_experts_per_tok=1)
    if arch == TEXT_MOE:
        return {"architectures": [arch], "model_type": "qwen3_moe", **text,
                "quantization_config": quant}
    if architecture(arch) == GEMMA3:
        return {"architectures": [GEMMA3], "model_type": "gemma3", "text_config": text,
                "vision_config": {"hidden_size": 1152, "intermediate_size": 4304},
                "quantization_config": quant}
    if architecture(arch) in QWEN2_FAMILY:
        return {"architectures": [architecture(arch)],
                "model_type": "qwen2_5_vl" if architecture(arch) == QWEN25 else "qwen2_vl",
                **text, "vision_config": {"depth": 1}, "quantization_config": quant}
    return {"architectures": [arch], "model_type": "qwen3_vl" if arch == DENSE else "qwen3_vl_moe",
            "text_config": text, "vision_config": {"depth": 1, "deepstack_visual_indexes": [0]},
            "quantization_config": quant}


class Vllm:
    def __init__(self, root: str):
        self.engine = VllmEngine(root)
        src = self.engine.src
        env = {"WeightsMapper": self.engine.WeightsMapper}
        # Qwen3VLMoeForConditionalGeneration defines no hf_to_vllm_mapper: it inherits
        # Qwen3VLForConditionalGeneration's. Qwen3MoeForCausalLM's is Qwen3MoeModel's.
        vl = src.literal_attr(FILES[DENSE], DENSE, "hf_to_vllm_mapper", env)
        self.mapper = {DENSE: vl, MOE: vl, TEXT_MOE: src.literal_attr(
            FILES[TEXT_MOE], "Qwen3MoeModel", "hf_to_vllm_mapper", env),
            QWEN25: src.literal_attr(FILES[QWEN25], QWEN25, "hf_to_vllm_mapper", env),
            QWEN2: src.literal_attr(FILES[QWEN2], QWEN2, "hf_to_vllm_mapper", env),
            GEMMA3: src.literal_attr(FILES[GEMMA3], GEMMA3, "hf_to_vllm_mapper", env)}
        self.packed = {arch: src.literal_attr(FILES[arch], arch, "packed_modules_mapping", env)
                       for arch in (DENSE, MOE, TEXT_MOE, QWEN25, QWEN2, GEMMA3)}
        # Qwen2ForCausalLM (SupportsQuant), the VL classes' text model: its __new__ adds its
        # mapping to the config's (its mapper, Qwen2Model's, renames nothing once unstacked).
        self.text_packed = src.literal_attr(QWEN2_LM, "Qwen2ForCausalLM",
                                            "packed_modules_mapping", env)
        # The experts' class name, which compressed-tensors' _add_fused_moe_to_target_scheme_map
        # copies "Linear" to: RoutedExperts on main, FusedMoE before the MoE refactor (#44941).
        ct = "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py"
        self.experts = RoutedExperts if '"RoutedExperts"' in src.text(ct) else \
            type("FusedMoE", (RoutedExperts,), {})

    def problems(self, arch: str, storage: dict[str, bool], quant: dict,
                 dtypes: dict[str, str]) -> list[str]:
        try:
            cfg, _ = self.engine.quant_config({"quantization_config": quant}, {})
            self.engine.update_from_headers(cfg, dtypes)
            mapper = self.mapper[architecture(arch)]
            if mapper is not None:  # Qwen3MoeModel's arrived after 2026-05-01
                # Before get_unstacked_mapper existed the mapper is passed as it is.
                cfg.apply_vllm_mapper(mapper.get_unstacked_mapper()
                                      if hasattr(mapper, "get_unstacked_mapper") else mapper)
            if architecture(arch) in SUPPORTS_QUANT:
                # SupportsQuant.__new__ (interfaces.py): the mapping added to the config's.
                cfg.packed_modules_mapping.update(self.packed[architecture(arch)])
            elif self.packed[architecture(arch)] is not None:
                # configure_quant_config: the class dict becomes the config's.
                cfg.packed_modules_mapping = self.packed[architecture(arch)]
            if architecture(arch) in QWEN2_FAMILY:
                cfg.packed_modules_mapping.update(self.text_packed)
        except _RAISES as e:
            return [f"config raises: {e}"]
        return storage_problems(cfg, modules(arch), storage, experts=self.experts)


def make_build(root: str):
    vllm = Vllm(root)

    def build(rng: random.Random):
        arch = rng.choice([DENSE, MOE, TEXT_MOE, QWEN25, QWEN25_OLD, QWEN2, GEMMA3, GEMMA3_OLD])
        method = rng.choice(["compressed-tensors", "fp8", "awq"])
        storage, quant = make_case(rng, arch, method)
        stored = tensors(arch, storage, method)
        dtypes = {name: dtype for name, dtype, _, _ in stored}
        return (config_json(arch, quant), stored,
                lambda q: vllm.problems(arch, storage, q, dtypes))

    return build


if __name__ == "__main__":
    sys.exit(arch_driver.main("Qwen3-VL / Qwen3-MoE / Qwen2-VL / Qwen2.5-VL", __doc__.splitlines()[0], make_build,
                              ("ignore", "ignored_layers", "modules_to_not_convert")))
