# SPDX-License-Identifier: Apache-2.0
"""Seeded random (layout, config) pairs per method: heads stored dense, packed or partly
packed, single fused shards stored differently, and config entries drawn from what real
exports write, what people write by hand, and near misses of both."""
from __future__ import annotations

import copy
import dataclasses
import json
import random

from layout import LAYER_TYPES, main_linears, mtp_linears, vision_linears

ARCHS = ["Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"]
FORMATS = {"compressed-tensors": "ct-pack", "gptq": "gptq", "auto-round": "gptq", "awq": "awq",
           "fp8": "fp8-block", "modelopt": "modelopt-nvfp4", "modelopt-mixed": "modelopt-nvfp4",
           "bitsandbytes": "bnb-4bit", "quark": "modelopt-fp8"}
SIDE_CARS = {"compressed-tensors": "quantization_config.json", "gptq": "quantize_config.json",
             "auto-round": "quantization_config.json", "awq": "quantization_config.json",
             "fp8": "quantization_config.json", "modelopt": "hf_quant_config.json",
             "modelopt-mixed": "hf_quant_config.json", "bitsandbytes": None, "quark": None}


@dataclasses.dataclass
class Case:
    method: str
    arch: str
    prefix: str                  # checkpoint prefix of the text model
    storage: dict[str, bool]     # linear module -> stored quantized
    quant: dict                  # config.json's quantization_config
    sidecar: dict | None         # the method's sidecar file, or None
    fmt: str

    def config_json(self) -> dict:
        text = {"model_type": "qwen3_5_text", "num_hidden_layers": len(LAYER_TYPES),
                "layer_types": LAYER_TYPES, "mtp_num_hidden_layers": 1,
                "hidden_size": 128, "vocab_size": 256}
        cfg = {"architectures": [self.arch], "model_type": "qwen3_5"}
        if self.arch == "Qwen3_5ForConditionalGeneration":
            cfg["text_config"] = text
        else:
            cfg.update(text)
        cfg["quantization_config"] = self.quant
        return cfg

    def files(self) -> dict[str, str]:
        out = {"config.json": json.dumps(self.config_json(), indent=2) + "\n"}
        if self.sidecar is not None:
            out[SIDE_CARS[self.method]] = json.dumps(self.sidecar, indent=2) + "\n"
        return out

    def linears(self) -> list[str]:
        return [m for m in vision_linears() if m in self.storage] + main_linears(
            self.prefix) + mtp_linears() + ["lm_head"]

    def default_storage(self) -> dict[str, bool]:
        """Main linears quantized; vision tower, MTP head and lm_head dense."""
        return {m: not (m.startswith(("mtp.", "model.visual.")) or m == "lm_head")
                for m in self.storage}

    def copy(self) -> "Case":
        return copy.deepcopy(self)


def _storage(rng: random.Random, prefix: str, vision: bool) -> dict[str, bool]:
    storage = {m: True for m in main_linears(prefix)}
    if vision:
        quantized = rng.random() < 0.15
        storage.update({m: quantized for m in vision_linears()})
    head = rng.choice(["dense", "dense", "packed", "fc-dense", "fc-packed", "random"])
    for m in mtp_linears():
        storage[m] = {"dense": False, "packed": True, "fc-dense": m != "mtp.fc",
                      "fc-packed": m == "mtp.fc", "random": rng.random() < 0.5}[head]
    storage["lm_head"] = rng.random() < 0.15
    # One shard of a fused layer stored differently from its sibling.
    if rng.random() < 0.2:
        storage[rng.choice([m for m in storage if m.endswith(
            ("in_proj_a", "in_proj_b", "in_proj_z", "q_proj", "v_proj", "gate_proj"))])] ^= True
    if rng.random() < 0.15:
        storage[rng.choice(list(storage))] ^= True
    return storage


def _names(case_prefix: str, arch: str) -> dict[str, list[str]]:
    """Entry vocabularies: checkpoint names, vLLM names, fused names, parents."""
    vlm = arch == "Qwen3_5ForConditionalGeneration"
    ck = (vision_linears() if vlm else []) + main_linears(case_prefix) + mtp_linears() + [
        "lm_head"]
    vl_model = "language_model.model." if vlm else "model."
    vl = [n.replace(case_prefix, vl_model, 1) if n.startswith(case_prefix) else
          n.replace("model.visual.", "visual.", 1) for n in ck]
    if vlm:
        vl.append("language_model.lm_head")
    fused = []
    for n in ck + vl:
        for shard, f in (("in_proj_qkv", "in_proj_qkvz"), ("in_proj_b", "in_proj_ba"),
                         ("q_proj", "qkv_proj"), ("gate_proj", "gate_up_proj")):
            if n.endswith("." + shard):
                fused.append(n[: -len(shard)] + f)
    parents = sorted({n.rsplit(".", 1)[0] for n in ck})
    return {"ck": ck, "vl": vl, "fused": fused, "parents": parents}


_REGEX = [r"re:.*mtp.*", r"re:^mtp\..*", r"re:mtp.*", r"re:.*\.mtp\..*", r"re:.*lm_head$",
          r"re:.*lm_head", r"re:.*linear_attn\.in_proj_(a|b)$", r"re:.*in_proj_b$",
          r"re:.*in_proj_a$", r"re:.*in_proj_ba$", r"re:.*embed_tokens", r"re:.*mlp\.down_proj$",
          r"re:.*layers\.0\..*", r"re:.*self_attn.*", r"re:.*qkv.*", r"re:.*mtp\.fc$",
          r"re:.*conv1d.*", r"re:.*\.fc$", r"re:^lm_head$", r"re:.*visual.*",
          r"re:.*attn\.qkv$", r"re:.*merger.*", r"re:^model\.visual\..*"]
_NEAR = ["mtp", ".mtp.", "mtp.fc", "mtp.layers.0", "model.mtp.fc", "lm_head",
         "language_model.lm_head", "Linear", "mtp.layers.0*", "mtp*", "*mtp*", "self_attn",
         "linear_attn", "in_proj_b", "in_proj_ba", "fc", "mlp.down_proj", "qkv_proj",
         "embed_tokens", "layers.0", "mtp.layers.0.mlp", "visual", "model.visual",
         "model.visual*", "visual.blocks.0.attn.qkv", "merger", "qkv"]


def _entries(rng, names, k_max, plain_share=0.6):
    out = []
    for _ in range(rng.randint(0, k_max)):
        r = rng.random()
        if r < plain_share:
            pool = rng.choice([names["ck"], names["ck"], names["vl"], names["fused"],
                               names["parents"]])
        elif r < 0.8:
            pool = _REGEX
        else:
            pool = _NEAR
        out.append(rng.choice(pool))
    return list(dict.fromkeys(out))


def _mtp_exact(case_prefix, storage, with_dense=True):
    return [m for m in mtp_linears() if storage[m] is (not with_dense)]


def _vision(rng, case: Case, style: str) -> list[str]:
    """What exports write for a dense vision tower: its checkpoint names (llm-compressor),
    a regex, or a parent/component name (substring and component rules)."""
    if not any(m.startswith("model.visual.") for m in case.storage) or rng.random() < 0.2:
        return []
    if style == "exact":
        return vision_linears() if rng.random() < 0.85 else [r"re:.*visual.*"]
    if style == "glob":
        return rng.choice([["model.visual*"], ["visual*"], vision_linears(), ["*visual*"]])
    return [rng.choice(["visual", "model.visual", "visual.blocks", "merger"])]


def compressed_tensors(rng, case: Case, names):
    targets = rng.choice([["Linear"]] * 6 + [[r"re:.*proj$"], ["re:.*mlp.*", "re:.*attn.*"],
                          ["Linear", r"re:.*lm_head$"], [r"re:.*embed_tokens", "Linear"]])
    ignore = _vision(rng, case, "exact") + _entries(rng, names, 8)
    if rng.random() < 0.4:  # the flagship export: lm_head plus part of the head
        ignore = ["lm_head"] + ignore
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
               "group_size": 32}
    groups = {"group_0": {"targets": targets, "weights": weights, "format": "pack-quantized",
                          "input_activations": None}}
    if rng.random() < 0.1:
        groups["group_1"] = {"targets": [r"re:.*lm_head$"], "weights": weights,
                             "input_activations": None}
    q = {"config_groups": groups, "format": "pack-quantized", "ignore": ignore,
         "quant_method": "compressed-tensors", "quantization_status": "compressed"}
    return q


def gptq(rng, case: Case, names):
    q = {"bits": 4, "group_size": 32, "desc_act": False, "sym": True, "quant_method": "gptq",
         "checkpoint_format": "gptq"}
    if rng.random() < 0.2:
        q["lm_head"] = rng.random() < 0.7
    r = rng.random()
    if r < 0.3:
        blocks = [["linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.in_proj_b",
                   "linear_attn.in_proj_a"], ["linear_attn.out_proj"],
                  ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
                  ["self_attn.o_proj"], ["mlp.gate_proj", "mlp.up_proj"], ["mlp.down_proj"]]
        for b in blocks:
            if rng.random() < 0.15 and len(b) > 1:
                b.pop(rng.randrange(len(b)))
        if rng.random() < 0.2:
            blocks.append([rng.choice(["mtp", "mtp.fc", "fc", "lm_head"])])
        q["modules_in_block_to_quantize"] = blocks
    elif r < 0.4:
        q["modules_in_block_to_quantize"] = []
    elif r < 0.5:
        q["modules_in_block_to_quantize"] = [[rng.choice(names["ck"] + names["vl"])]]
    if rng.random() < 0.6:
        keys = [r"-:.*mtp.*", r"-:^mtp\.", r"-:.mtp.", r"-:^mtp\.fc$", r"+:.*mlp.*",
                r".*mtp.*", r"-:^lm_head$", r"-:.*lm_head", r"-:.*in_proj_b$",
                r"-:.*linear_attn\.in_proj_ba$", r"-:.*in_proj_(a|b)$", r"+:.*layers\.1\..*",
                r"-:^m[t]p\.layers\.0\.mlp\.down_proj$", r"-:.*embed.*", r"-:.*qkv_proj$",
                r"-:^language_model\.lm_head$"]
        dyn = {}
        for k in rng.sample(keys, rng.randint(1, 3)):
            # Positive rules override fields; 3 bits and sym false are what GPTQ Marlin's
            # TYPE_MAP lacks (override_config raises for the layers they reach).
            overrides = [{"bits": 8}, {"bits": 8}, {"bits": 3}, {"sym": False}]
            dyn[k] = rng.choice(overrides) if k.startswith("+:") and rng.random() < 0.5 else {}
        q["dynamic"] = dyn
    return q


def auto_round(rng, case: Case, names):
    q = {"bits": 4, "group_size": 32, "sym": True, "data_type": "int",
         "packing_format": "auto_round:auto_gptq", "quant_method": "auto-round",
         "autoround_version": "0.13.0"}
    r = rng.random()
    blocks = rng.choice([case.prefix + "layers", [case.prefix + "layers"],
                         [case.prefix + "layers", "mtp.layers"], "mtp.layers"])
    if r < 0.4:
        q["block_name_to_quantize"] = blocks
    elif r < 0.55:
        q["to_quant_block_names"] = blocks
    elif r < 0.65:
        q["block_name_to_quantize"] = None
        q["to_quant_block_names"] = blocks
    if rng.random() < 0.75:
        extra = {}
        values = [{"bits": 16, "data_type": "fp"}, {"bits": 16, "data_type": "fp"}, {},
                  {"bits": 4}, {"bits": 4, "group_size": 64}, {"bits": 8}]
        for m in _vision(rng, case, "exact"):
            extra[m] = {"bits": 16, "data_type": "fp"}
        pool = names["ck"] + names["vl"] + names["fused"] + [
            ".mtp.", r"^mtp\.", r".*mtp.*", "lm_head", r".*qkv.*", r".*layers\.0\..*",
            r".*in_proj_b$", r"mtp\.fc", r".*lm_head", "mtp.fc"]
        for _ in range(rng.randint(1, 5)):
            extra[rng.choice(pool)] = copy.deepcopy(rng.choice(values))
        q["extra_config"] = extra
    if rng.random() < 0.1:
        q["dynamic"] = {r"-:.*mtp.*": {}}
    return q


def awq(rng, case: Case, names):
    q = {"bits": 4, "group_size": 32, "zero_point": True, "version": "gemm",
         "quant_method": "awq"}
    r = rng.random()
    if r < 0.7:
        q["modules_to_not_convert"] = (_vision(rng, case, "substring")
                                       + _entries(rng, names, 6, plain_share=0.5)) or None
    elif r < 0.8:
        q["modules_to_not_convert"] = []
    return q


def fp8(rng, case: Case, names):
    q = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
         "weight_block_size": [128, 128]}
    r = rng.random()
    if r < 0.6:
        q["ignored_layers"] = _vision(rng, case, "exact") + _entries(rng, names, 6,
                                                                      plain_share=0.8)
    elif r < 0.75:
        q["ignored_layers"] = []
    if rng.random() < 0.3:
        q["modules_to_not_convert"] = _entries(rng, names, 4, plain_share=0.8)
    return q


def modelopt(rng, case: Case, names):
    entries = _vision(rng, case, "glob") + _entries(rng, names, 6, plain_share=0.5)
    if rng.random() < 0.7:  # ModelOpt exports exclude lm_head
        entries = ["lm_head"] + entries
    q = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
         "ignore": entries, "producer": {"name": "modelopt", "version": "0.41.0"}}
    return q


def modelopt_mixed(rng, case: Case, names):
    """ModelOpt MIXED_PRECISION (what ModelOpt 0.41+ exports for per-layer recipes): the
    ignore list of `modelopt`, plus `quantized_layers` naming most modules stored quantized
    (NVFP4, as stored), and near misses: a module stored dense listed, a quantized one left out,
    another algo (FP8, or one neither engine builds), a fused or a parent name as the key."""
    q = modelopt(rng, case, names)
    q["quant_algo"] = "MIXED_PRECISION"
    layers = {}
    for m in case.linears():
        if m not in case.storage:
            continue
        listed = rng.random() < (0.9 if case.storage[m] else 0.06)
        if not listed:
            continue
        r = rng.random()
        algo = "NVFP4" if r < 0.88 else "FP8" if r < 0.94 else "W4A16_AWQ"
        key = m
        if rng.random() < 0.05:
            key = rng.choice(names["fused"] + names["parents"])
        layers[key] = {"quant_algo": algo} if algo != "NVFP4" else {"quant_algo": algo,
                                                                    "group_size": 16}
    q["quantized_layers"] = layers
    return q


def modelopt_sidecar(q: dict) -> dict:
    quantization = {"quant_algo": q["quant_algo"], "group_size": q["group_size"],
                    "exclude_modules": list(q.get("ignore", []))}
    if "quantized_layers" in q:
        quantization["quantized_layers"] = copy.deepcopy(q["quantized_layers"])
    return {"producer": {"name": "modelopt", "version": "0.41.0"}, "quantization": quantization}


def bitsandbytes(rng, case: Case, names):
    skip = _vision(rng, case, "substring") + _entries(rng, names, 5, plain_share=0.5)
    return {"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": False,
            "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16",
            "bnb_4bit_use_double_quant": False, "llm_int8_skip_modules": skip}


def quark(rng, case: Case, names):
    """AMD Quark's export (FP8 per tensor, stored as weight F8_E4M3 + weight_scale +
    input_scale): `exclude` with lm_head (the exporter's default), exact checkpoint names,
    fused and parent names, and regexes written with Quark's "re:" prefix."""
    entries = _vision(rng, case, "exact") + _entries(rng, names, 6, plain_share=0.6)
    if rng.random() < 0.8:
        entries = ["lm_head"] + entries
    fp8 = {"dtype": "fp8_e4m3", "is_dynamic": False, "qscheme": "per_tensor",
           "symmetric": True}
    return {"quant_method": "quark", "exclude": entries,
            "export": {"kv_cache_group": [], "pack_method": "reorder",
                       "weight_format": "real_quantized"},
            "global_quant_config": {"input_tensors": dict(fp8), "weight": dict(fp8),
                                    "output_tensors": None, "bias": None},
            "layer_quant_config": {}, "layer_type_quant_config": {}}


GENERATORS = {"compressed-tensors": compressed_tensors, "gptq": gptq, "auto-round": auto_round,
              "awq": awq, "fp8": fp8, "modelopt": modelopt, "modelopt-mixed": modelopt_mixed,
              "bitsandbytes": bitsandbytes, "quark": quark}


# Whole-config mistakes vLLM refuses before building a layer (each method's from_config).
_REJECT = {
    "gptq": [("bits", 3), ("sym", False), ("desc_act", None)],
    "auto-round": [("bits", 5), ("packing_format", "auto_round:gguf"), ("data_type", "fp")],
    "awq": [("bits", 8), ("zero_point", None)],
    "fp8": [("activation_scheme", "static"), ("weight_block_size", [128])],
    "modelopt": [("quant_algo", "INT4_AWQ")],
}


def make_case(method: str, seed: int) -> Case:
    rng = random.Random(f"{method}:{seed}")
    arch = rng.choice(ARCHS)
    prefix = "model.language_model." if arch != "Qwen3_5ForCausalLM" or rng.random() < 0.5 \
        else "model."
    case = Case(method, arch, prefix,
                _storage(rng, prefix, arch == "Qwen3_5ForConditionalGeneration"), {}, None,
                FORMATS[method])
    case.quant = GENERATORS[method](rng, case, _names(prefix, arch))
    if method in _REJECT and rng.random() < 0.04:
        key, value = rng.choice(_REJECT[method])
        if value is None:
            case.quant.pop(key, None)
        else:
            case.quant[key] = value
    if method in ("modelopt", "modelopt-mixed"):
        case.sidecar = modelopt_sidecar(case.quant)
    elif SIDE_CARS[method] and rng.random() < 0.3:
        case.sidecar = copy.deepcopy(case.quant)
    return case
