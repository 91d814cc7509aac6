# SPDX-License-Identifier: Apache-2.0
"""What SGLang builds from a Qwen3.5 checkpoint, and how its own quantization code decides each
layer. The decisions are SGLang's functions, read from a source tree (see SOURCES and
fetch_sources.sh) by vllm_source.VllmSource and run unchanged: each method's
QuantizationConfig subclass (from_config, override_quantization_method, get_quant_method) and
the helpers they call (compressed_tensors/utils.py should_ignore_layer, find_matched_target;
quantization/utils/utils.py get_linear_quant_method, get_dynamic_override, override_config;
awq/awq.py is_layer_skipped_awq).

Only the naming around them is modelled by hand (the prefix each layer is built at, its class,
the packed_modules_mapping its quant config gets, which layers get quant_config=None, the MTP
draft); each point cites the SGLang file, class and commit it comes from. SGLang's repository
could not be read at one commit (the source index holds each path at scattered commits,
docs/research/sglang-harness.md), so the two naming eras are data here, not read from a tree.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vllm_diff"))

import vllm_source  # noqa: E402
from vllm_source import Marker, VllmSource  # noqa: E402
# compressed-tensors' QuantizationArgs, reduced as for vLLM (the same pydantic model).
from vllm_model import _QuantizationArgs  # noqa: E402

vllm_source.FAKE_ROOTS.update({"sglang", "sgl_kernel", "pydantic", "numpy"})

Q = "python/sglang/srt/layers/quantization/"


# -- stand-ins: layer classes for isinstance() and class-name targets --------------------------
# layers/linear.py: LinearBase and its subclasses (SGLang keeps vLLM's class names, which
# compressed-tensors' find_matched_target compares with `module.__class__.__name__`).
class LinearBase:
    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.scheme = None


class ColumnParallelLinear(LinearBase): ...
class MergedColumnParallelLinear(ColumnParallelLinear): ...
class QKVParallelLinear(ColumnParallelLinear): ...
class RowParallelLinear(LinearBase): ...
class ReplicatedLinear(LinearBase): ...


# layers/vocab_parallel_embedding.py: ParallelLMHead(VocabParallelEmbedding), not a LinearBase.
class VocabParallelEmbedding:
    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.scheme = None


class ParallelLMHead(VocabParallelEmbedding): ...


class FusedMoE:  # layers/moe/fused_moe_triton (no MoE in the generated layouts)
    def __init__(self, prefix: str = ""):
        self.prefix = prefix


class Unquantized:
    """Base of the stand-ins for SGLang's unquantized methods (quantization/unquant.py)."""

    def __init__(self, *args, **kwargs):
        pass


class UnquantizedLinearMethod(Unquantized): ...
class UnquantizedEmbeddingMethod(Unquantized): ...
class UnquantizedFusedMoEMethod(Unquantized): ...


class _ScalarTypes:
    """sgl_kernel.scalar_type.scalar_types: names compared by identity only."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return name


_SCALAR = _ScalarTypes()
# marlin_utils.py check_marlin_supported / verify_marlin_supported: the quant types and group
# sizes Marlin takes on a CUDA GPU of capability >= 8.0 (what qpatch assumes): with zero points
# uint4 (AWQ), without uint4b8 and uint8b128 (GPTQ); group sizes -1, 32, 64, 128. A stand-in
# for marlin_utils.py @653d854 (query_marlin_supported_quant_types, _check_marlin_supported,
# read: the sets are these), which imports sgl_kernel at module level.
_MARLIN_GROUPS = [-1, 32, 64, 128]


def _check_marlin_supported(quant_type, group_size, has_zp=False, *args, **kwargs):
    types = ["uint4"] if has_zp else ["uint4b8", "uint8b128"]
    return quant_type in types and group_size in _MARLIN_GROUPS


def _verify_marlin_supported(quant_type, group_size, has_zp=False):
    if not _check_marlin_supported(quant_type, group_size, has_zp):
        raise ValueError(f"Marlin does not support weight_bits = {quant_type}, "
                         f"group_size = {group_size}, has_zp = {has_zp}")


def _present(tensors):
    modules = {name.rsplit(".", 1)[0] for name in tensors}
    return modules.__contains__
