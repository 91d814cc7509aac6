# SPDX-License-Identifier: Apache-2.0
"""What Hugging Face transformers builds from a Qwen3.5 checkpoint (`from_pretrained`), and how its own
quantization code decides each module.

Only the module tree is modelled by hand (below, each point cited). Every decision is transformers' code, read
from a source tree (--transformers-src, laid out like the repository, see SOURCES and fetch_sources.sh) and run
by vllm_source's loader with torch-only names replaced by inert stand-ins:

  get_hf_quantizer, AutoQuantizationConfig, AutoHfQuantizer   quantizers/auto.py
  the config classes' __init__/post_init/from_dict           utils/quantization_config.py
  HfQuantizer.preprocess_model / get_modules_to_not_convert,
  get_keys_to_not_convert                                    quantizers/base.py
  should_convert_module                                      quantizers/quantizers_utils.py
  GptqHfQuantizer -> optimum GPTQQuantizer.from_dict/convert_model, get_block_name_with_pattern,
                     get_layers, BLOCK_PATTERNS              quantizers/quantizer_gptq.py, optimum/gptq/*
  AwqQuantizer -> replace_with_awq_linear                    quantizers/quantizer_awq.py, integrations/awq.py
  FineGrainedFP8HfQuantizer -> replace_with_fp8_linear       quantizers/quantizer_finegrained_fp8.py,
                                                             integrations/finegrained_fp8.py
  Bnb4BitHfQuantizer -> replace_with_bnb_linear              quantizers/quantizer_bnb_4bit.py,
                                                             integrations/bitsandbytes.py
  CompressedTensorsHfQuantizer -> compressed-tensors' apply_quantization_config, match_named_modules,
                     is_match, match_name, _match_class      quantizers/quantizer_compressed_tensors.py,
                                                             compressed_tensors/quantization/lifecycle/apply.py,
                                                             compressed_tensors/utils/match.py
  AutoRoundQuantizer -> auto_round's convert_hf_model, get_layer_config, _expand_regex_config,
                     skip_not_convert_modules, _replace_by_quant_layers, get_layer_backend,
                     check_compatible, BackendInfos              quantizers/quantizer_auto_round.py,
                                                             auto_round/inference/{convert_model,backend,utils}.py,
                                                             auto_round/utils/{model,common}.py, auto_round/schemes.py
  QuarkConfig (-> amd-quark Config.from_dict: modelled)      utils/quantization_config.py,
  QuarkHfQuantizer -> amd-quark _map_to_quark,              quantizers/quantizer_quark.py (10cc83c, --quark-src),
                     get_layer_quant_config                  quark/torch/export/api.py (1d27b55, excerpt),
                                                             quark/torch/export/main_export/
                                                             quant_config_parser.py (0.12, excerpt)

A module is "quantized" when transformers' code replaced it (a quantized Linear class: FP8Linear, the gptqmodel
QuantLinear, bnb Linear4bit/Linear8bitLt, auto_round's QuantLinear, Quark's QParamsLinear) or gave it a
compressed-tensors `quantization_scheme`; "dense" when it is
still the model's nn.Linear; "not_loaded" when from_pretrained drops its checkpoint keys
(`_keys_to_ignore_on_load_unexpected`).
"""
from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import pathlib
import re
import sys
import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "vllm_diff"))

import vllm_source  # noqa: E402
from layout import main_linears, mtp_linears, vision_linears  # noqa: E402
from vllm_source import Marker, VllmSource  # noqa: E402

# Import roots the executed code imports from inside functions (`from optimum.gptq import GPTQQuantizer`,
# `from gptqmodel.utils.importer import hf_select_quant_linear_v2`, `from accelerate import init_empty_weights`):
# they resolve to stand-ins. transformers and compressed_tensors stay fake roots too: their files are read one
# by one by VllmSource, never imported as packages.
vllm_source.FAKE_ROOTS.update({"optimum", "gptqmodel", "accelerate", "bitsandbytes", "auto_round", "awq",
                               "loguru", "tqdm", "safetensors"})

Q = "src/transformers/quantizers/"
I = "src/transformers/integrations/"  # noqa: E741
U = "src/transformers/utils/"


# -- torch stand-ins: nn.Module with torch's traversal semantics ------------------------------------------------
class _Device:
    type = "meta"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class dtype:  # noqa: N801 - torch.dtype
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


class Parameter:
    def __init__(self, dtype_=None):
        self.dtype = dtype_
        self.device = _Device()


class Module:
    """torch.nn.Module as the quantizers use it: _modules/_parameters, attribute access to children,
    named_children / named_modules / named_parameters / get_submodule / set_submodule with torch's order and
    prefixes, dir() listing the children (optimum's _replace_by_quant_layers walks dir())."""

    def __init__(self):
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_parameters", {})

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module) or name in self._modules:
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_modules", {}):
            return d["_modules"][name]
        if name in d.get("_parameters", {}):
            return d["_parameters"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._modules:
            del self._modules[name]
        elif name in self._parameters:
            del self._parameters[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._modules) | set(self._parameters))

    def add(self, name, module):
        self._modules[name] = module
        return module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) not in memo:
            if remove_duplicate:
                memo.add(id(self))
            yield prefix, self
            for name, module in self._modules.items():
                if module is None or not isinstance(module, Module):
                    continue
                sub = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_parameters(self, prefix="", recurse=True):
        for mod_prefix, module in (self.named_modules(prefix=prefix) if recurse else [(prefix, self)]):
            for name, p in module._parameters.items():
                if p is not None:
                    yield mod_prefix + ("." if mod_prefix else "") + name, p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not isinstance(mod, Module) or item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def set_submodule(self, target, module, strict=False):
        parent, _, name = target.rpartition(".")
        owner = self.get_submodule(parent)
        if name not in owner._modules:
            raise AttributeError(f"{type(owner).__name__} has no attribute `{name}`")
        owner._modules[name] = module

    def requires_grad_(self, *args, **kwargs):
        return self

    def to(self, *args, **kwargs):
        return self

    def tie_weights(self):
        pass

    def forward(self, *args, **kwargs):
        raise NotImplementedError


class ModuleList(Module):
    def __init__(self, modules=()):
        super().__init__()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m


class Linear(Module):
    def __init__(self, in_features=128, out_features=128, bias=False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_TORCH.bfloat16)
        object.__setattr__(self, "bias", Parameter(_TORCH.bfloat16) if bias else None)


class Embedding(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(_TORCH.bfloat16)


class Conv1d(Module): ...
class Conv2d(Module): ...
class ConvTranspose2d(Module): ...
class Conv3d(Module): ...
class LayerNorm(Module): ...
class Conv1D(Module):  # transformers.pytorch_utils.Conv1D (GPT-2): absent from Qwen3.5
    ...


class _QuantLinear(Module):
    """The class gptqmodel's hf_select_quant_linear_v2 returns (GPTQ and AWQ): constructed, never run."""

    def __init__(self, *args, **kwargs):
        super().__init__()


class _FakeTorch:
    """torch as the quantizers use it."""

    dtype = dtype
    Tensor = type("Tensor", (), {})

    def __init__(self):
        for n in ("float16", "bfloat16", "float32", "float64", "uint8", "int8", "int32", "float8_e4m3fn"):
            setattr(self, n, dtype(n))
        self.nn = types.SimpleNamespace(
            Module=Module, ModuleList=ModuleList, Linear=Linear, Embedding=Embedding, Conv1d=Conv1d,
            Conv2d=Conv2d, ConvTranspose2d=ConvTranspose2d, Conv3d=Conv3d, LayerNorm=LayerNorm, Parameter=Parameter,
            utils=types.SimpleNamespace(parametrizations=types.SimpleNamespace()))
        # A CUDA GPU of compute capability 9.0 (what qpatch assumes): FP8 is not dequantized.
        self.cuda = types.SimpleNamespace(is_available=lambda: True, get_device_capability=lambda *a: (9, 0),
                                          current_device=lambda: 0, empty_cache=lambda: None)
        self.xpu = types.SimpleNamespace(is_available=lambda: False)

    def device(self, *args, **kwargs):
        return _Device()

    def get_default_dtype(self):
        return self.bfloat16

    def ones(self, *args, **kwargs):
        return Marker("torch.ones()")

    def __getattr__(self, name):
        return Marker(f"torch.{name}")


_TORCH = _FakeTorch()


class _Logger:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class _Metadata:
    @staticmethod
    def version(name):
        return "99.0.0"  # every optional package installed and new enough


@contextlib.contextmanager
def _null_context(*args, **kwargs):
    yield


class _InternalModule(Module):
    """compressed_tensors.utils.internal.InternalModule: no model module is one."""


class _Version:
    """packaging.version as the quantizers use it (parse, then compare): release numbers as int tuples."""

    @staticmethod
    def parse(text):
        import re
        return tuple(int(x) for x in re.findall(r"\d+", str(text).split("+")[0])[:3])


def _stand_ins() -> dict:
    ns = dict(
        torch=_TORCH, nn=_TORCH.nn, Conv1D=Conv1D, Module=Module,
        logging=types.SimpleNamespace(get_logger=lambda *a: _Logger(), getLogger=lambda *a: _Logger(),
                                      Logger=_Logger),
        logger=_Logger(), _LOGGER=_Logger(), version=_Version,
        importlib=types.SimpleNamespace(metadata=_Metadata), find_tied_parameters=lambda model: [],
        init_empty_weights=_null_context, InternalModule=_InternalModule,
        hf_select_quant_linear_v2=lambda **kwargs: _QuantLinear,
        tqdm=lambda iterable, **kwargs: iterable,
        dist=types.SimpleNamespace(get_rank=lambda: 0), is_distributed=lambda: False,
        initialize_module_for_quantization=lambda *a, **k: None,
        initialize_hooked_attention=lambda *a, **k: None,
        validate_bnb_backend_availability=lambda *a, **k: True,
        MODULES_TO_PATCH_FOR_QUANTIZATION={},
        # conversion_mapping.get_model_conversion_mapping: no checkpoint renaming for Qwen3.5
        # (src/transformers/conversion_mapping.py at 44bcb9d lists no qwen3_5 model type; the VLM checkpoint's
        # names are the module tree's, Qwen3_5ForConditionalGeneration._checkpoint_conversion_mapping = {}).
        get_model_conversion_mapping=lambda model: [],
        PreTrainedModel=_PreTrainedModel, inspect=__import__("inspect"),
    )
    # Config and quantizer classes of other methods that auto.py's mappings and isinstance() tuples name: empty
    # classes (never instantiated by these cases; an isinstance() against them is simply False).
    for name in ("EetqConfig", "AqlmConfig", "QuantoConfig", "FourOverSixConfig", "FPQuantConfig",
                 "HqqConfig", "FbgemmFp8Config", "HiggsConfig", "TorchAoConfig", "BitNetQuantConfig",
                 "PrismQuantConfig", "VptqConfig", "SpQRConfig", "Mxfp4Config", "MetalConfig", "SinqConfig"):
        ns[name] = type(name, (), {})
    for name in ("is_torch_available", "is_accelerate_available", "is_optimum_available",
                 "is_gptqmodel_available", "is_bitsandbytes_available", "is_compressed_tensors_available",
                 "is_bitsandbytes_multi_backend_available", "is_auto_round_available", "is_quark_available"):
        ns[name] = lambda *a, **k: True
    for name in ("is_auto_gptq_available", "is_auto_awq_available", "is_torch_xpu_available",
                 "is_torch_npu_available", "is_torch_hpu_available", "is_hqq_available",
                 "is_torchao_available"):
        ns[name] = lambda *a, **k: False
    return ns


# -- the module tree --------------------------------------------------------------------------------------------
# All from src/transformers/models/qwen3_5/modeling_qwen3_5.py at huggingface/transformers d8c1e28 (the one
# version of that file the store holds). Submodules are registered in each __init__'s order.

def _cls(name, base=Module, **attrs):
    return type(name, (base,), attrs)


def _attention_forward(self, hidden_states, position_embeddings, attention_mask, past_key_values=None,
                       cache_position=None, **kwargs):
    """Qwen3_5Attention.forward's signature (compressed-tensors' is_cached_attention_module reads it)."""


Qwen3_5GatedDeltaNet = _cls("Qwen3_5GatedDeltaNet")
Qwen3_5Attention = _cls("Qwen3_5Attention", forward=_attention_forward)
Qwen3_5MLP = _cls("Qwen3_5MLP")
Qwen3_5RMSNorm = _cls("Qwen3_5RMSNorm")
Qwen3_5DecoderLayer = _cls("Qwen3_5DecoderLayer")
Qwen3_5TextModel = _cls("Qwen3_5TextModel")
Qwen3_5VisionModel = _cls("Qwen3_5VisionModel")
Qwen3_5VisionBlock = _cls("Qwen3_5VisionBlock")
Qwen3_5VisionAttention = _cls("Qwen3_5VisionAttention")
Qwen3_5VisionMLP = _cls("Qwen3_5VisionMLP")
Qwen3_5VisionPatchEmbed = _cls("Qwen3_5VisionPatchEmbed")
Qwen3_5VisionPatchMerger = _cls("Qwen3_5VisionPatchMerger")
Qwen3_5Model = _cls("Qwen3_5Model")


def _decoder_layer(layer_type: str) -> Module:
    """Qwen3_5DecoderLayer.__init__: `linear_attn` = Qwen3_5GatedDeltaNet (conv1d nn.Conv1d, norm, out_proj
    nn.Linear, then in_proj_qkv / in_proj_z / in_proj_b / in_proj_a, four separate nn.Linear: transformers does
    not fuse the GDN projections) for "linear_attention", `self_attn` = Qwen3_5Attention (q_proj, k_proj,
    v_proj, o_proj nn.Linear, q_norm, k_norm) for "full_attention"; then `mlp` = Qwen3_5MLP (gate_proj,
    up_proj, down_proj nn.Linear), input_layernorm, post_attention_layernorm."""
    layer = Qwen3_5DecoderLayer()
    if layer_type == "linear_attention":
        gdn = layer.add("linear_attn", Qwen3_5GatedDeltaNet())
        gdn.add("conv1d", Conv1d())
        gdn.dt_bias = Parameter()
        gdn.A_log = Parameter()
        gdn.add("norm", Qwen3_5RMSNorm())
        for p in ("out_proj", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"):
            gdn.add(p, Linear())
    else:
        attn = layer.add("self_attn", Qwen3_5Attention())
        for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
            attn.add(p, Linear())
        attn.add("q_norm", Qwen3_5RMSNorm())
        attn.add("k_norm", Qwen3_5RMSNorm())
    mlp = layer.add("mlp", Qwen3_5MLP())
    for p in ("gate_proj", "up_proj", "down_proj"):
        mlp.add(p, Linear())
    layer.add("input_layernorm", Qwen3_5RMSNorm())
    layer.add("post_attention_layernorm", Qwen3_5RMSNorm())
    return layer


def _text_model(layer_types) -> Module:
    """Qwen3_5TextModel.__init__: embed_tokens (nn.Embedding), layers (nn.ModuleList of Qwen3_5DecoderLayer),
    norm, rotary_emb."""
    text = Qwen3_5TextModel()
    text.add("embed_tokens", Embedding())
    text.add("layers", ModuleList([_decoder_layer(t) for t in layer_types]))
    text.add("norm", Qwen3_5RMSNorm())
    text.add("rotary_emb", Module())
    return text


def _vision_model() -> Module:
    """Qwen3_5VisionModel.__init__: patch_embed (Qwen3_5VisionPatchEmbed: proj nn.Conv3d), pos_embed
    (nn.Embedding), rotary_pos_emb, blocks (nn.ModuleList of Qwen3_5VisionBlock: norm1, norm2, attn =
    Qwen3_5VisionAttention with qkv and proj nn.Linear, mlp = Qwen3_5VisionMLP with linear_fc1 and linear_fc2
    nn.Linear), merger (Qwen3_5VisionPatchMerger: norm, linear_fc1, act_fn, linear_fc2 nn.Linear). One block: the
    layout's vision tower has one."""
    vis = Qwen3_5VisionModel()
    pe = vis.add("patch_embed", Qwen3_5VisionPatchEmbed())
    pe.add("proj", Conv3d())
    vis.add("pos_embed", Embedding())
    vis.add("rotary_pos_emb", Module())
    block = Qwen3_5VisionBlock()
    block.add("norm1", LayerNorm())
    block.add("norm2", LayerNorm())
    attn = block.add("attn", Qwen3_5VisionAttention())
    attn.add("qkv", Linear(bias=True))
    attn.add("proj", Linear(bias=True))
    mlp = block.add("mlp", Qwen3_5VisionMLP())
    mlp.add("linear_fc1", Linear(bias=True))
    mlp.add("linear_fc2", Linear(bias=True))
    vis.add("blocks", ModuleList([block]))
    merger = vis.add("merger", Qwen3_5VisionPatchMerger())
    merger.add("norm", LayerNorm())
    merger.add("linear_fc1", Linear(bias=True))
    merger.add("act_fn", Module())
    merger.add("linear_fc2", Linear(bias=True))
    return vis


class _PreTrainedModel(Module):
    """The PreTrainedModel attributes the quantizers read. Qwen3_5PreTrainedModel sets no _keep_in_fp32_modules
    (so it is None) and `_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]`; main_input_name is
    PreTrainedModel's "input_ids"."""

    main_input_name = "input_ids"
    _keep_in_fp32_modules = None
    _tp_plan = None
    _keys_to_ignore_on_load_unexpected = [r"^mtp.*"]

    def __init__(self, config):
        super().__init__()
        object.__setattr__(self, "config", config)

    def get_output_embeddings(self):
        return self.lm_head


class Qwen3_5ForConditionalGeneration(_PreTrainedModel):
    """Qwen3_5ForConditionalGeneration.__init__: model = Qwen3_5Model (visual = Qwen3_5VisionModel, then
    language_model = Qwen3_5TextModel), lm_head = nn.Linear. `_checkpoint_conversion_mapping = {}`: checkpoint
    `model.language_model.*` / `model.visual.*` / `lm_head` are the module names. `_tied_weights_keys =
    {"lm_head.weight": "model.language_model.embed_tokens.weight"}` (tied only when tie_word_embeddings)."""


class Qwen3_5ForCausalLM(_PreTrainedModel):
    """Qwen3_5ForCausalLM.__init__: model = Qwen3_5TextModel, lm_head = nn.Linear;
    `_keys_to_ignore_on_load_unexpected = [r"^mtp.*", r"^model.visual.*"]` (the vision tower of a VLM
    checkpoint is dropped, never built)."""

    _keys_to_ignore_on_load_unexpected = [r"^mtp.*", r"^model.visual.*"]


class _Config:
    """The PretrainedConfig attributes get_hf_quantizer and the quantizers read."""

    def __init__(self, config_json: dict):
        self.quantization_config = copy.deepcopy(config_json.get("quantization_config"))
        self.model_type = config_json.get("model_type")
        self.architectures = config_json.get("architectures")

    def get_text_config(self, *args, **kwargs):
        return self


def build_model(arch: str, layer_types, config) -> Module:
    if arch == "Qwen3_5ForConditionalGeneration":
        model = Qwen3_5ForConditionalGeneration(config)
        inner = model.add("model", Qwen3_5Model())
        inner.add("visual", _vision_model())
        inner.add("language_model", _text_model(layer_types))
    else:
        model = Qwen3_5ForCausalLM(config)
        model.add("model", _text_model(layer_types))
    model.add("lm_head", Linear())
    return model


@dataclasses.dataclass
class Layer:
    """One checkpoint module as transformers loads it: `path` is its module in the model tree."""
    modules: list[str]
    path: str | None       # None: from_pretrained never loads it


def layers_for(arch: str, ck_prefix: str, ck_modules: list[str]) -> list[Layer]:
    import re
    cls = Qwen3_5ForConditionalGeneration if arch == "Qwen3_5ForConditionalGeneration" else Qwen3_5ForCausalLM
    out = []
    for m in ck_modules:
        dropped = any(re.search(p, m) for p in cls._keys_to_ignore_on_load_unexpected)
        out.append(Layer([m], None if dropped else m))
    return out


# -- the engine -------------------------------------------------------------------------------------------------
class TransformersRaised(Exception):
    pass


class TransformersUnmodelled(Exception):
    """A case this harness cannot judge from the source it has (its verdict would be a guess)."""


# (definition, file) pairs, in load order. A file path under store/<id>/ is a version the search store holds
# without naming its repository or commit (SOURCES says which).
_DEFS = [
    (U + "quantization_config.py", ("QuantizationMethod", "AwqFormat", "AwqBackend", "QuantizationConfigMixin",
                                    "AutoRoundConfig", "BitsAndBytesConfig", "ExllamaVersion", "GPTQConfig",
                                    "AwqConfig", "CompressedTensorsConfig", "QuarkConfig")),
    ("store/66238778069/" + U + "quantization_config.py", ("FineGrainedFP8Config",)),
    (Q + "quantizers_utils.py", ("get_module_from_name", "should_convert_module")),
    (Q + "base.py", ("_assign_original_dtype", "get_keys_to_not_convert", "HfQuantizer")),
    (Q + "quantizer_gptq.py", ("GptqHfQuantizer",)),
    ("store/66392167571/" + Q + "quantizer_awq.py", ("AwqQuantizer",)),
    ("store/67004461055/" + I + "awq.py", ("AWQ_SCALES_MAPPINGS", "replace_quantization_scales",
                                           "replace_with_awq_linear")),
    ("store/54501236152/" + Q + "quantizer_finegrained_fp8.py", ("FineGrainedFP8HfQuantizer",)),
    ("store/53306702183/" + I + "finegrained_fp8.py", ("replace_with_fp8_linear",)),
    (Q + "quantizer_bnb_4bit.py", ("Bnb4BitHfQuantizer",)),
    (I + "bitsandbytes.py", ("_replace_with_bnb_linear", "replace_with_bnb_linear")),
    (Q + "quantizer_compressed_tensors.py", ("CompressedTensorsHfQuantizer",)),
    (Q + "quantizer_auto_round.py", ("AutoRoundQuantizer",)),
    (Q + "auto.py", ("AUTO_QUANTIZER_MAPPING", "AUTO_QUANTIZATION_CONFIG_MAPPING",
                     "LOADING_ATTRIBUTES_CONFIG_TYPES", "infer_legacy_quantization_config",
                     "AutoQuantizationConfig", "AutoHfQuantizer", "get_hf_quantizer")),
]
_OPTIMUM = [
    ("optimum/gptq/utils.py", ("get_layers", "get_block_name_with_pattern", "get_device")),
    ("optimum/gptq/quantizer.py", ("has_device_more_than_cpu", "GPTQQuantizer")),
]
_CT = [
    ("src/compressed_tensors/quantization/quant_config.py", ("QuantizationStatus", "LIFECYCLE_ORDER")),
    ("src/compressed_tensors/utils/match.py", ("match_named_modules", "match_targets", "is_match",
                                               "is_narrow_match", "match_name", "_match_class")),
    ("src/compressed_tensors/quantization/lifecycle/initialize.py", ("_is_attention_module",
                                                                     "is_cached_attention_module")),
    ("src/compressed_tensors/quantization/lifecycle/apply.py", ("apply_quantization_config",
                                                                "_scheme_from_targets")),
]

# auto-round (--auto-round-src, intel/auto-round v0.14.2 = e98f1c1): what convert_hf_model runs for a dense
# Qwen3.5, in load order. Kept in their own namespace (TransformersEngine.ar), apart from the transformers
# names: both define get_checkpoint_conversion_mapping and get_keys_to_not_convert.
_AR = [
    ("auto_round/utils/common.py", ("VISION_MM_KEYS", "AUDIO_MM_KEYS", "get_checkpoint_conversion_mapping",
                                    "apply_checkpoint_conversion_mapping")),
    ("auto_round/schemes.py", ("QuantizationScheme",)),
    ("auto_round/utils/model.py", ("ARCHITECTURE_MODEL_TYPE_MAP", "resolve_model_type",
                                   "check_start_with_block_name", "get_block_names", "is_pure_text_model",
                                   "check_to_quantized", "get_module", "set_module", "find_matching_blocks")),
    ("auto_round/special_model_handler.py", ("SPECIAL_MULTIMODAL_BLOCK",)),
    ("auto_round/export/export_to_autogptq/export.py", ("convert_from_autogptq_dynamic",)),
    ("auto_round/inference/utils.py", ("_expand_regex_config",)),
    ("auto_round/modeling/unfused_moe/__init__.py", ("MODEL_CONFIG", "pre_check_config", "apply_modeling_patch")),
    ("auto_round/inference/backend.py", (
        "BackendInfos", "BackendInfo", "BACKEND_ACT_ATTRS", "MX_TENSOR_DATA_TYPES", "feature_multiply_checker",
        "feature_multiply_checker_group_size", "feature_compatible_multiply_checker",
        "in_feature_checker_group_size", "feature_multiply_checker_32", "feature_multiply_checker_16",
        "in_output_feature_multiply_checker_32", "in_feature_multiply_checker_32", "exllamav2_feature_checker",
        "compatible_exllamav2_feature_checker", "gptqmodel_marlin_feature_checker", "mxfp_nvfp_feature_checker",
        "ark_feature_checker", "fp8_static_scheme_checker", "GPTQ_FORMAT", "GPTQ_FORMAT_NO_ZP", "AWQ_FORMAT",
        "LLM_COMPRESSOR_FORMAT", "WOQ_DEFAULT_ACT_BITS", "_NON_DARWIN_SYSTEMS", "check_compatible",
        "find_backend", "get_all_compatible_backend", "get_layer_backend", "get_highest_priority_backend",
        "process_requirement")),
    ("auto_round/inference/convert_model.py", (
        "flatten_list", "skip_not_convert_modules", "get_keys_to_not_convert", "_get_modules_to_not_convert",
        "get_available_devices", "_remap_paths_for_text_model", "get_layer_config", "_replace_by_quant_layers",
        "_get_layer_features", "_create_quant_layer", "infer_target_device", "disable_moe_conversion_mapping",
        "convert_hf_model")),
]

# The environment auto_round's backend requirements are checked against (transformers.utils.versions.
# require_version): transformers 5 (the quantizer files read are v5's), torch 2.9, every other package
# installed at a version new enough. "transformers<5.0.0" (the auto_gptq backends) and "torch<2.6.0" fail.
_AR_VERSIONS = {"transformers": (5, 0, 0), "torch": (2, 9, 0)}


def _require_version(requirement: str, hint=None):
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", requirement.strip())
    name, spec = m.group(1), m.group(2)
    have = _AR_VERSIONS.get(name, (99, 0, 0))
    for part in filter(None, (x.strip() for x in spec.split(","))):
        op, want = re.match(r"^(==|!=|>=|<=|>|<)\s*(.+)$", part).groups()
        want = _Version.parse(want)
        want = want + (0,) * (3 - len(want))
        ok = {"==": have == want, "!=": have != want, ">=": have >= want, "<=": have <= want,
              ">": have > want, "<": have < want}[op]
        if not ok:
            raise ImportError(f"{requirement} is required, but {name}=={'.'.join(map(str, have))} is installed")


class _ArQuantLinear(_QuantLinear):
    """What auto_round's dynamic_import_inference_linear returns (the backend's QuantLinear class)."""

    @classmethod
    def from_linear(cls, *args, **kwargs):
        return cls()

    @classmethod
    def from_original(cls, *args, **kwargs):
        return cls()


class _WeightRenaming:  # transformers.core_model_loading.WeightRenaming: isinstance() only
    pass


class _NamesModule(types.ModuleType):
    """A module whose attributes are read from a dict at import time (`from auto_round.schemes import
    QuantizationScheme` inside a function resolves to the definition loaded from the source tree)."""

    def __init__(self, name, names):
        super().__init__(name)
        self._names = names

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._names[attr] if attr in self._names else Marker(f"{self.__name__}.{attr}")


class _CTConfig:
    """compressed_tensors.quantization.QuantizationConfig.model_validate, reduced to the fields
    apply_quantization_config reads (config_groups[*].targets, ignore, quantization_status, kv_cache_scheme)."""

    status_enum = None

    @classmethod
    def model_validate(cls, value):
        self = cls()
        self.config_groups = {name: types.SimpleNamespace(targets=list(g.get("targets") or []), **{
            k: v for k, v in g.items() if k != "targets"}) for name, g in (value.get("config_groups") or {}).items()}
        self.ignore = list(value.get("ignore") or [])
        self.quantization_status = cls.status_enum(value.get("quantization_status") or "initialized")
        self.kv_cache_scheme = value.get("kv_cache_scheme")
        self.format = value.get("format")
        return self


class _ModelCompressor:
    """compressed_tensors.compressors.ModelCompressor.from_compression_config: the compressor's
    quantization_config is the parsed QuantizationConfig."""

    @classmethod
    def from_compression_config(cls, config):
        self = cls()
        self.quantization_config = config.quantization_config
        return self


# -- amd-quark (--quark-src) --------------------------------------------------------------------------------------
# transformers' QuarkHfQuantizer hands the whole model and the parsed Config to amd-quark's _map_to_quark, which
# asks get_layer_quant_config for every module. The tree --quark-src names is laid out as the research helper
# saved it: <owner>+<repo>@<commit>/<path>, excerpts keeping their saved suffix (SOURCES lists each file; the
# quant_config_parser.py excerpt was read through the index only, commit unknown).
_QUARK_QUANTIZER = ("huggingface+transformers@10cc83c08dac347596cc66ef85e7a666d80ffec9",
                    "src/transformers/quantizers/quantizer_quark.py")
_QUARK_API = ("amd+Quark@1d27b5582e4ecbb466fa1658e0bc91d01a5fbdd1",
              "quark/torch/export/api.py.EXCERPT_map_to_quark.py")
_QUARK_PARSER = ("amd+Quark@UNKNOWN-commit_index-id-44226354460",
                 "quark/torch/export/main_export/quant_config_parser.py.EXCERPT.py")
# The amd-quark installed: 0.12, the version whose quant_config_parser.py was read. QuarkConfig reads
# quark.__version__ only to drop export.min_kv_scale below 0.8.
_QUARK_VERSION = "0.12.0"


class _QLayerConfig:
    """quark QLayerConfig (QuantizationConfig in the parser's names): the fields get_layer_quant_config and
    _map_to_quark read. from_dict keeps the dict's values (QTensorConfig validation is not modelled: the
    generated specs are all valid FP8 per-tensor ones)."""

    def __init__(self, weight=None, bias=None, input_tensors=None, output_tensors=None, **rest):
        self.weight, self.bias = weight, bias
        self.input_tensors, self.output_tensors = input_tensors, output_tensors
        self.rest = rest

    @classmethod
    def from_dict(cls, value):
        if not isinstance(value, dict):
            raise TransformersUnmodelled(f"Quark QLayerConfig.from_dict({value!r}): not read")
        return cls(**value)


class _QuarkConfig:
    """amd-quark QConfig (quark/torch/quantization/config/config.py @1d27b55, from_dict read in full through
    the index, id 66722992121), modelled: from_dict indexes config_dict["global_quant_config"],
    ["layer_type_quant_config"], ["layer_quant_config"] and ["exclude"] directly (KeyError when missing; the
    last three may be null), maps layer_type_quant_config keys through QUARK_LAYER_TYPES and raises
    NotImplementedError for any other key, reads kv_cache_quant_config with .get (absent: {}). algo_config,
    softmax_quant_spec and quant_mode are kept as given (none is generated)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    @classmethod
    def from_dict(cls, config_dict):
        global_quant_config = _QLayerConfig.from_dict(config_dict["global_quant_config"])
        layer_type_quant_config = {}
        if config_dict["layer_type_quant_config"] is not None:
            for name, value in config_dict["layer_type_quant_config"].items():
                if name in _QUARK_LAYER_TYPES:
                    layer_type_quant_config[_QUARK_LAYER_TYPES[name]] = _QLayerConfig.from_dict(value)
                else:
                    raise NotImplementedError(
                        "Quark does not support reloading a quantization `Config` from a dictionary using custom "
                        f"`layer_type_quantization_config`. Found `'{name}'` in `layer_type_quantization_config`, "
                        f"which is not among the supported {_QUARK_LAYER_TYPES}.")
        layer_quant_config = {} if config_dict["layer_quant_config"] is None else {
            name: _QLayerConfig.from_dict(value) for name, value in config_dict["layer_quant_config"].items()}
        kv_cache_quant_config = {} if config_dict.get("kv_cache_quant_config") is None else {
            name: _QLayerConfig.from_dict(value) for name, value in config_dict["kv_cache_quant_config"].items()}
        exclude = [] if config_dict["exclude"] is None else config_dict["exclude"]
        return cls(global_quant_config=global_quant_config, layer_type_quant_config=layer_type_quant_config,
                   layer_quant_config=layer_quant_config, kv_cache_quant_config=kv_cache_quant_config,
                   exclude=exclude, algo_config=config_dict.get("algo_config"))

    def get_rotation_config(self):
        """The rotation algorithm of algo_config, if any: none without an algo_config."""
        if self.algo_config is None:
            return None
        raise TransformersUnmodelled("Quark algo_config: get_rotation_config not read")


# quark/torch/quantization/constants.py (index id 70543794490), as the config.py excerpt quotes it.
_QUARK_LAYER_TYPES = {"Conv2d": Conv2d, "Linear": Linear, "ConvTranspose2d": ConvTranspose2d}


class _JsonExporterConfig:
    """quark.torch.export.config.config.JsonExporterConfig: QuarkHfQuantizer reads pack_method only, which
    _map_to_quark hands to QParamsLinear.from_module (packing is not judged)."""

    def __init__(self, pack_method="reorder", **rest):
        self.pack_method = pack_method


class _QParamsLinear(Module):
    """quark QParamsLinear: what _map_to_quark puts in place of a quantized nn.Linear. Its ImportBuilder
    placeholders (packed weight, quantizer buffers) are not modelled: only that the module was replaced."""

    @classmethod
    def from_module(cls, linear=None, custom_mode=None, pack_method=None, algo_config=None, quant_config=None):
        m = cls()
        m.quant_config = quant_config
        return m


def _setattr_recursive(model, name, module):
    """quark.torch.utils.setattr_recursive: set the attribute at a dotted module path."""
    parent, _, attr = name.rpartition(".")
    setattr(model.get_submodule(parent), attr, module)


class TransformersEngine:
    name = "transformers"
    Unmodelled = TransformersUnmodelled
    Raised = TransformersRaised

    def __init__(self, root: str, optimum_root: str | None = None, ct_root: str | None = None,
                 auto_round_root: str | None = None, quark_root: str | None = None):
        self.root = pathlib.Path(root)
        self.stand = _stand_ins()
        # One stand-in dict for the three trees: FakeModules created for imports inside functions read it.
        self.src = VllmSource(self.root, self.stand, package="src/transformers")
        self.ns = {}
        self.quark = False
        for rel, names in _DEFS:
            # auto.py's AUTO_QUANTIZER_MAPPING names QuarkHfQuantizer: loaded (after base.py) before it
            if rel == Q + "auto.py" and quark_root:
                self._load_quark(quark_root)
            self._load(self.src, rel, names)
        self.optimum = VllmSource(optimum_root, self.stand, package="optimum/gptq") if optimum_root else None
        if self.optimum:
            for rel, names in _OPTIMUM:
                self._load(self.optimum, rel, names)
        self.ct = VllmSource(ct_root, self.stand, package="src/compressed_tensors") if ct_root else None
        if self.ct:
            for rel, names in _CT:
                self._load(self.ct, rel, names)
            _CTConfig.status_enum = self.stand["QuantizationStatus"]
        self.stand["QuantizationConfig"] = _CTConfig
        self.stand["ModelCompressor"] = _ModelCompressor
        self.ar = None
        if auto_round_root:
            self._load_auto_round(auto_round_root)

    def _load_quark(self, root: str) -> None:
        """transformers' QuarkHfQuantizer (quantizer_quark.py @10cc83c) into the stand-ins, and the amd-quark
        modules it and QuarkConfig import inside functions (quark, quark.torch.export.config.config,
        quark.torch.quantization.config.config, quark.torch.export.main_export.quant_config_parser,
        quark.torch.export.api) as sys.modules entries: _map_to_quark (api.py @1d27b55) and
        get_layer_quant_config (quant_config_parser.py 0.12) executed from their saved text, the rest stand-ins."""
        root = pathlib.Path(root)
        parser = VllmSource(root / _QUARK_PARSER[0], self.stand, package="quark/torch/export/main_export")
        pns = parser.namespace(_QUARK_PARSER[1])
        pns.update(self.stand)
        # the parser's nn is torch.nn (the model's Linear/Conv2d classes); QuantizationConfig: the kv-cache branch
        pns.update(QuantizationConfig=_QLayerConfig, Config=_QuarkConfig)
        parser.load(_QUARK_PARSER[1], "get_layer_quant_config", ns=pns)
        api = VllmSource(root / _QUARK_API[0], self.stand, package="quark/torch/export")
        ans = api.namespace(_QUARK_API[1])
        ans.update(self.stand)
        ans.update(
            QConfig=_QuarkConfig, get_layer_quant_config=pns["get_layer_quant_config"],
            # quark.torch.quantization.inverse_quantizer.is_prequantized_linear: FP8Linear, compressed-tensors'
            # linears... A model transformers built for quark has none (no other quantizer ran): False.
            is_prequantized_linear=lambda module: False,
            QParamsLinear=_QParamsLinear, QParamsLinearWithRotation=_QParamsLinear,
            setattr_recursive=_setattr_recursive)
        api.load(_QUARK_API[1], "_map_to_quark", ns=ans)
        modules = {
            "quark": {}, "quark.torch": {}, "quark.torch.export": {}, "quark.torch.export.config": {},
            "quark.torch.export.main_export": {}, "quark.torch.quantization": {},
            "quark.torch.quantization.config": {},
            "quark.torch.export.config.config": {"JsonExporterConfig": _JsonExporterConfig},
            "quark.torch.quantization.config.config": {"Config": _QuarkConfig},
            # QuantConfigParser.from_custom_config: only for quant_method "awq"/"fp8" (QuarkConfig's legacy
            # branch), which AUTO_QUANTIZATION_CONFIG_MAPPING never sends to QuarkConfig
            "quark.torch.export.main_export.quant_config_parser": {
                "get_layer_quant_config": pns["get_layer_quant_config"],
                "QuantConfigParser": Marker("QuantConfigParser")},
            "quark.torch.export.api": {"_map_to_quark": ans["_map_to_quark"]},
        }
        for name, names in modules.items():
            sys.modules[name] = _NamesModule(name, names)
        sys.modules["quark"].__version__ = _QUARK_VERSION
        quantizer = VllmSource(root / _QUARK_QUANTIZER[0], self.stand, package="src/transformers/quantizers")
        self._load(quantizer, _QUARK_QUANTIZER[1], ("QuarkHfQuantizer",))
        self.quark = True

    def _load_auto_round(self, root: str) -> None:
        """auto_round's definitions (_AR) in their own namespace `self.ar`, with stand-ins for what they reach
        outside the files read; the modules imported inside functions (auto_round.*, transformers.
        conversion_mapping, transformers.core_model_loading) resolve to them through sys.modules."""
        import platform
        # transformers' get_checkpoint_conversion_mapping, conversion_mapping.py at 44bcb9d (no qwen3_5 entry:
        # None). register_checkpoint_conversion_mapping (later v5) only re-registers what that returns.
        cm_rel = "src/transformers/conversion_mapping.py"
        cm = self.src.namespace(cm_rel)
        cm.update(self.stand)
        self.src.load(cm_rel, "_build_checkpoint_conversion_mapping", "_checkpoint_conversion_mapping_cache",
                      "get_checkpoint_conversion_mapping", ns=cm)
        sys.modules["transformers.conversion_mapping"] = _NamesModule("transformers.conversion_mapping", {
            "get_checkpoint_conversion_mapping": cm["get_checkpoint_conversion_mapping"],
            "register_checkpoint_conversion_mapping": lambda *a, **k: None})
        sys.modules["transformers.core_model_loading"] = _NamesModule(
            "transformers.core_model_loading", {"WeightRenaming": _WeightRenaming})
        self.ar = {
            "logger": _Logger(), "platform": platform, "require_version": _require_version,
            # common.py: SUPPORTED_LAYER_TYPES = (torch.nn.Linear, transformers.pytorch_utils.Conv1D) (no
            # deepspeed); is_transformers_version_greater_or_equal_5: transformers 5.
            "SUPPORTED_LAYER_TYPES": (Linear, Conv1D), "is_transformers_version_greater_or_equal_5": lambda: True,
            "is_hpex_available": lambda: False,
            # special_model_handler.update_module -> modeling/fused_moe/replace_modules.apply_replacements:
            # "qwen3_5" is not in BUILTIN_MODULES (is_custom_model False) and _handle_moe_modules only
            # rewrites MoE experts, which a dense Qwen3.5 has none of: the model comes back unchanged.
            "update_module": lambda model, *a, **k: model,
            # backend.dynamic_import_inference_linear: the backend's QuantLinear class (kernels not read)
            "dynamic_import_inference_linear": lambda *a, **k: _ArQuantLinear,
            # convert_model.py's module-level `try: from transformers.quantizers.base import HfQuantizer;
            # get_modules_to_not_convert = HfQuantizer.get_modules_to_not_convert`: transformers' own.
            "get_modules_to_not_convert": self.stand["HfQuantizer"].get_modules_to_not_convert,
        }
        src = VllmSource(root, self.stand, package="auto_round/inference")
        for rel, names in _AR:
            ns = src.namespace(rel)
            ns.update(self.stand)
            ns.update(self.ar)
            src.load(rel, *names, ns=ns)
            if rel.endswith("backend.py"):
                # the module-level `BackendInfos["..."] = BackendInfo(...)` statements, in file order
                body = [n for n in src.tree(rel).body if isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == "BackendInfos"
                    for t in n.targets)]
                exec(compile(ast.Module(body=body, type_ignores=[]), str(src.root / rel), "exec"), ns)  # noqa: S102
            for n in names:
                self.ar[n] = ns[n]
        for mod in ("auto_round.inference.convert_model", "auto_round.schemes", "auto_round.special_model_handler",
                    "auto_round.export.export_to_autogptq.export", "auto_round.algorithms.transforms",
                    "auto_round.utils.common"):
            sys.modules[mod] = _NamesModule(mod, self.ar)

    def _load(self, src: VllmSource, rel: str, names):
        ns = src.namespace(rel)
        ns.update(self.stand)
        src.load(rel, *names, ns=ns)
        for n in names:
            self.stand[n] = ns[n]
        # optimum reads BLOCK_PATTERNS from constants.py through `from .constants import BLOCK_PATTERNS`
        if rel == "optimum/gptq/utils.py":
            ns["BLOCK_PATTERNS"] = src.namespace("optimum/gptq/constants.py")["BLOCK_PATTERNS"]

    def judge(self, arch, ck_prefix, layer_types, mtp_layers, config_json, files, tensors):
        if arch == "Qwen3_5ForCausalLM" and ck_prefix == "model.language_model.":
            raise TransformersUnmodelled(
                "Qwen3_5ForCausalLM over model.language_model.* keys: the pinned conversion_mapping.py has no "
                "qwen3_5 renaming, so which module each key loads into is not in the source read")
        qc = config_json.get("quantization_config")
        method = str(qc.get("quant_method", "")).lower() if isinstance(qc, dict) else ""
        if method == "auto-round" and self.ar is None:
            raise TransformersUnmodelled("auto-round: AutoRoundQuantizer converts the model with the auto_round "
                                         "library (convert_hf_model): give its source (--auto-round-src)")
        if method == "gptq" and self.optimum is None:
            raise TransformersUnmodelled("gptq needs optimum's source (--optimum-src)")
        if method == "quark" and not self.quark:
            raise TransformersUnmodelled("quark: QuarkHfQuantizer converts the model with amd-quark's _map_to_quark "
                                         "(get_layer_quant_config): give their source (--quark-src)")
        if method == "compressed-tensors" and self.ct is None:
            raise TransformersUnmodelled("compressed-tensors needs its source (--ct-src)")
        vision = [m for m in vision_linears() if f"{m}.weight" in tensors or f"{m}.qweight" in tensors
                  or f"{m}.weight_packed" in tensors]
        linears = vision + main_linears(ck_prefix) + mtp_linears() + ["lm_head"]
        layers = layers_for(arch, ck_prefix, linears)
        config = _Config(config_json)
        try:
            hf_quantizer, config, _ = self.stand["get_hf_quantizer"](config, None, None, True, {})
        except _RAISES as e:
            return [(None, TransformersRaised(f"{type(e).__name__}: {e}"))]
        if hf_quantizer is None and method:
            # AutoHfQuantizer.supports_quant_method (quantizers/auto.py) answered False: the whole
            # config is skipped ("Unknown quantization type ... Hence, we will skip the
            # quantization") and no module is quantized. One decision for the checkpoint, so it is
            # the case-level outcome, as a refusal would be.
            return [(None, TransformersRaised(f"Unknown quantization type, got {method}: the "
                                              "quantization is skipped"))]
        model = build_model(arch, layer_types, config)
        if hf_quantizer is not None:
            try:
                hf_quantizer.preprocess_model(model=model, config=config, dtype=None, checkpoint_files=None,
                                              device_map=None,
                                              keep_in_fp32_modules=model._keep_in_fp32_modules or [])
            except _RAISES + (SystemExit,) as e:  # SystemExit: auto_round's process_requirement exit(-1)
                return [(None, TransformersRaised(f"{type(e).__name__}: {e}"))]
        out = []
        for layer in layers:
            if layer.path is None:
                out.append((layer, "not_loaded"))
                continue
            try:
                mod = model.get_submodule(layer.path)
            except AttributeError:
                out.append((layer, "not_loaded"))  # a checkpoint key with no module: unexpected, dropped
                continue
            quantized = type(mod) is not Linear or getattr(mod, "quantization_scheme", None) is not None
            out.append((layer, "quantized" if quantized else "dense"))
        return out

# What transformers' config and quantizer code raises for a config or model it refuses.
# re.error: should_convert_module hands skip entries to re.match, so a glob such as "*mtp*" raises there.
_RAISES = (ValueError, TypeError, KeyError, AttributeError, RuntimeError, NotImplementedError, ImportError,
           AssertionError, re.error)
