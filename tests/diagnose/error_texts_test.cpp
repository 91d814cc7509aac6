// SPDX-License-Identifier: Apache-2.0
// The error texts users post (issue 23 item 7), each as it appears in a log or a tracker issue,
// recognised as its row with the module it names.
#include <qpatch/diagnose/error_texts.hpp>

#include <gtest/gtest.h>

namespace qpatch::diagnose {
namespace {

struct Case {
  const char* name;
  const char* text;
  const char* id;     // "" when no row may match
  const char* module; // the module hint
};

class ErrorTextTable : public testing::TestWithParam<Case> {};

TEST_P(ErrorTextTable, Recognised) {
  const Case& c = GetParam();
  const auto match = match_error_text(c.text);
  if (std::string(c.id).empty()) {
    EXPECT_FALSE(match.has_value()) << match->id;
    return;
  }
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->id, c.id);
  EXPECT_EQ(match->module_hint, c.module);
}

INSTANTIATE_TEST_SUITE_P(
    Texts,
    ErrorTextTable,
    testing::Values(
        // vLLM #53387, the README's flagship.
        Case{"FlagshipFc",
             "ValueError: There is no module or parameter named 'fc.weight' in "
             "Qwen3_5MultiTokenPredictor",
             "vllm-no-parameter",
             "fc"},
        Case{"PackedTensorOfADenseLayer",
             "ValueError: There is no module or parameter named "
             "'model.language_model.layers.0.self_attn.q_proj.weight_packed' in Qwen3_5Model",
             "vllm-no-parameter",
             "model.language_model.layers.0.self_attn.q_proj"},
        // SGLang #44817: the prefix is empty for a layer built with prefix "".
        Case{"UntargetedEmptyPrefix",
             "ValueError: Unable to find matching target for  in the compressed-tensors config.",
             "untargeted-raises",
             ""},
        Case{"UntargetedNamed",
             "ValueError: Unable to find matching target for model.layers.0.mlp.gate_up_proj in "
             "the compressed-tensors config.",
             "untargeted-raises",
             "model.layers.0.mlp.gate_up_proj"},
        // Kimi-K3 (issue 23): a fused layer whose shards disagree.
        Case{"ShardsDisagree",
             "ValueError: Found a different quantization schemes for ['in_proj_qkv', 'in_proj_g', "
             "'in_proj_f', 'in_proj_a', 'in_proj_b'] in "
             "model.layers.3.linear_attn.in_proj_qkvgfab. vLLM requires all to use the same "
             "scheme.",
             "shards-disagree",
             "model.layers.3.linear_attn.in_proj_qkvgfab"},
        // SGLang before #23467: an FP8 "mlp.gate" entry hit the gate_proj shard alone.
        Case{"ShardsNotAllSkipped",
             "ValueError: Detected some but not all shards of "
             "model.language_model.layers.0.mlp.gate_up_proj are quantized. All shards of fused "
             "layers to have the same precision.",
             "shards-not-all-skipped",
             "model.language_model.layers.0.mlp.gate_up_proj"},
        Case{"MoeProjections",
             "ValueError: All MoE projections need to have same quantization scheme but found "
             "multiple",
             "moe-projections-disagree",
             ""},
        // SGLang #38574.
        Case{"NoCompatibleScheme",
             "NotImplementedError: No compressed-tensors compatible scheme was found.",
             "no-compatible-scheme",
             ""},
        // SGLang #40597: a Quark MXFP4 draft expert loaded into the BF16 experts the draft
        // gate (#23146) built.
        Case{"MoeWidthMismatch",
             "RuntimeError: The size of tensor a (4096) must match the size of tensor b (2048) at "
             "non-singleton dimension 1",
             "moe-width-mismatch",
             ""},
        Case{"NoQuarkScheme",
             "NotImplementedError: No quark compatible scheme was found. Weight config: {'dtype': "
             "'fp4'}, Input config: None",
             "no-quark-scheme",
             ""},
        Case{"QuarkConfigMissingKey",
             "KeyError: 'layer_type_quant_config'",
             "quark-config-refused",
             ""},
        Case{"QuarkConfigLayerType",
             "NotImplementedError: Quark does not support reloading a quantization `Config` from a "
             "dictionary using custom `layer_type_quantization_config`. Found `'Embedding'` in "
             "`layer_type_quantization_config`, which is not among the supported",
             "quark-config-refused",
             ""},
        // vLLM #35548.
        Case{"MtpLayerMissing",
             "ValueError: MTP speculative decoding layer 78 weights missing from checkpoint. The "
             "checkpoint may have been quantized without including the MTP layers.",
             "mtp-layer-missing",
             ""},
        Case{"NotInitialized",
             "ValueError: Following weights were not initialized from checkpoint: "
             "{'model.layers.0.fc.weight'}",
             "weights-not-initialized",
             ""},
        // vLLM #57532, GLM's MTP shared_head.
        Case{"NanScale",
             "RuntimeError: NVFP4 weight_scale for layer 'parallel_lm_head' was never loaded "
             "(still NaN)",
             "never-loaded-nan",
             "parallel_lm_head"},
        // SGLang #41994.
        Case{"ExpertKeyError",
             "KeyError: 'layers.0.mlp.experts.w2_weight'",
             "expert-key-error",
             "layers.0.mlp.experts"},
        // SGLang #35797: the draft never accepted.
        Case{"AcceptLenOne",
             "Decode batch. #running-req: 1, #token: 1130, accept len: 1.00, gen throughput "
             "(token/s): 31.2",
             "accept-len-1",
             ""},
        Case{"AcceptLenTwoIsFine", "accept len: 2.31, gen throughput", "", ""},
        Case{"TransformersUnused",
             "Some weights of the model checkpoint at ./ck were not used when initializing "
             "Qwen3_5ForCausalLM: ['mtp.fc.weight_packed']",
             "transformers-unused-weights",
             ""},
        Case{"UnsupportedConfig",
             "ValueError: Unsupported quantization config: bits=3, sym=True",
             "unsupported-config",
             ""},
        Case{"Unknown", "CUDA out of memory. Tried to allocate 2.00 GiB", "", ""}),
    [](const testing::TestParamInfo<Case>& param) { return std::string(param.param.name); });

TEST(ErrorTexts, ModuleHintsNameCheckpointModules) {
  EXPECT_TRUE(names_module("fc", "mtp.fc"));
  EXPECT_FALSE(names_module("fc", "mtp.pre_fc_norm"));
  EXPECT_TRUE(names_module("model.layers.0.self_attn.qkv_proj",
                           "model.language_model.layers.0.self_attn.q_proj"));
  EXPECT_TRUE(names_module("layers.0.mlp.experts", "model.layers.0.mlp.experts.7.down_proj"));
  EXPECT_FALSE(names_module("layers.0.mlp.experts", "model.layers.10.mlp.experts.7.down_proj"));
  EXPECT_TRUE(names_module("", "anything"));
}

} // namespace
} // namespace qpatch::diagnose
