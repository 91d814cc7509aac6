// SPDX-License-Identifier: Apache-2.0
// What each finding does to each engine at load time, word for word, and how reports name the
// engines judged.
#include <qpatch/diagnose/built_weight.hpp>
#include <qpatch/report/consequence.hpp>

#include <gtest/gtest.h>

namespace qpatch::report {
namespace {

using diagnose::Finding;
using diagnose::FindingKind;

Finding
finding(FindingKind kind, std::vector<std::string> modules, std::vector<std::string> engines = {}) {
  Finding out;
  out.kind = kind;
  out.modules = std::move(modules);
  out.engines = std::move(engines);
  return out;
}

const std::vector<std::string> k_all{"vllm", "sglang", "transformers"};

TEST(ConsequenceTest, DenseMtpHeadQuantizedByTheConfig) {
  EXPECT_EQ(consequence(finding(FindingKind::dense_quantized_by_config,
                                {"mtp.fc", "mtp.layers.0.self_attn.q_proj"},
                                {"vllm", "sglang"}),
                        "compressed-tensors",
                        k_all),
            "vLLM: start-up fails once speculative decoding loads the MTP head: \"ValueError: "
            "There is no module or parameter named 'fc.weight' in ...\"; SGLang: loads, and drops "
            "the stored weights silently");
}

TEST(ConsequenceTest, AFindingThatNamesNoEngineAffectsEveryEngineJudged) {
  EXPECT_EQ(consequence(finding(FindingKind::quantized_made_dense, {"model.layers.0.mlp.up_proj"}),
                        "compressed-tensors",
                        k_all),
            "vLLM: start-up fails: \"ValueError: There is no module or parameter named "
            "'model.layers.0.mlp.up_proj.weight_packed' in ...\"; SGLang: loads, and drops the "
            "stored weights silently; transformers: loads with \"Some weights ... were not used\" "
            "and initialises the layer at random");
}

TEST(ConsequenceTest, ThePackedTensorIsTheMethods) {
  const Finding made_dense = finding(FindingKind::engine_builds_dense, {"x.q_proj"}, {"vllm"});
  const auto missing = [](const std::string& tensor) {
    return "vLLM: start-up fails: \"ValueError: There is no module or parameter named '" + tensor +
           "' in ...\"";
  };
  EXPECT_EQ(consequence(made_dense, "gptq", k_all), missing("x.q_proj.qweight"));
  EXPECT_EQ(consequence(made_dense, "auto-round", k_all), missing("x.q_proj.qweight"));
  EXPECT_EQ(consequence(made_dense, "awq", k_all), missing("x.q_proj.qweight"));
  EXPECT_EQ(consequence(made_dense, "fp8", k_all), missing("x.q_proj.weight_scale"));
  EXPECT_EQ(consequence(made_dense, "modelopt", k_all), missing("x.q_proj.weight_scale"));
  // vLLM reads "compressed_tensors" as "compressed-tensors": the same packed tensor is missing.
  EXPECT_EQ(consequence(made_dense, "compressed_tensors", k_all),
            missing("x.q_proj.weight_packed"));
  EXPECT_EQ(consequence(made_dense, "compressed-tensors", k_all),
            missing("x.q_proj.weight_packed"));
  EXPECT_EQ(consequence(made_dense, "awq_marlin", k_all), missing("x.q_proj.weight_scale"));
}

TEST(ConsequenceTest, FusedShardsAndTheHeadFile) {
  EXPECT_EQ(consequence(finding(FindingKind::fused_shards_disagree, {"mtp.layers.0.mlp.up_proj"}),
                        "compressed-tensors",
                        {"vllm", "sglang"}),
            "vLLM: start-up fails with speculative decoding while building the fused layer (its "
            "shards must agree); SGLang: start-up fails with speculative decoding while building "
            "the fused layer (its shards must agree)");
  Finding unindexed = finding(FindingKind::unindexed_tensors, {"mtp.fc.weight"});
  unindexed.label = "model_extra_tensors.safetensors";
  EXPECT_EQ(consequence(unindexed, "compressed-tensors", k_all),
            "vLLM: never opens the file, so its tensors are not loaded");
}

TEST(ConsequenceTest, ARejectedConfigQuotesTheEngine) {
  Finding rejected = finding(FindingKind::config_rejected, {}, {"vllm"});
  rejected.engine_error = "ValueError: Unsupported quantization config: bits=3, sym=True";
  EXPECT_EQ(consequence(rejected, "gptq", k_all),
            "vLLM: start-up fails: it refuses the quantization config: \"ValueError: Unsupported "
            "quantization config: bits=3, sym=True\"");
  rejected.engine_error.clear();
  EXPECT_EQ(consequence(rejected, "gptq", k_all),
            "vLLM: start-up fails: it refuses the quantization config");
}

TEST(ConsequenceTest, FindingsWithNoLoadTimeEffectSayNothing) {
  EXPECT_EQ(consequence(finding(FindingKind::configs_disagree, {}), "compressed-tensors", k_all),
            "");
  EXPECT_EQ(consequence(finding(FindingKind::unsupported_method, {}), "awq_marlin", {"vllm"}), "");
}

TEST(ConsequenceTest, PlainEnginesNameBranchAndDate) {
  EXPECT_EQ(plain_engines(k_all), "vLLM (main, 2026-08-17), SGLang and transformers");
  EXPECT_EQ(plain_engines({"vllm", "sglang"}, "awq"), "vLLM (main, 2026-08-17) and SGLang");
  EXPECT_EQ(plain_engines({"vllm"}, "bitsandbytes"),
            "vLLM (main, 2026-08-17) with vllm-bnb-plugin");
  EXPECT_EQ(plain_engines({"sglang"}), "SGLang");
  EXPECT_EQ(plain_engines({}), "");
}

// Where a dense checkpoint's `weight` goes when the config quantizes its layer depends on the
// scheme's weight parameter, read from the config (diagnose/built_weight.cpp): a packed scheme
// has no `weight`, an 8-bit one takes the BF16 values cast, an FP4 one fails the shape check.
TEST(ConsequenceTest, TheSchemesWeightParameterDecidesWhatADenseWeightDoes) {
  const Finding dense = finding(FindingKind::dense_quantized_by_config, {"mtp.fc"}, {"vllm"});
  const auto effect = [&](const std::string& method, const std::string& config) {
    const auto parsed = json::parse_strict(config, "config.json");
    EXPECT_TRUE(parsed.ok());
    return consequence(dense, method, k_all, diagnose::built_weight(method, *parsed));
  };
  const std::string missing = "vLLM: start-up fails once speculative decoding loads the MTP "
                              "head: \"ValueError: There is no module or parameter named "
                              "'fc.weight' in ...\"";
  const std::string cast = "vLLM: loads without an error: the stored BF16 weight of mtp.fc is "
                           "cast into its FP8 `weight` parameter and the weight scale is never "
                           "loaded, so the layer computes garbage and the draft's acceptance "
                           "collapses";
  const std::string fp4 = "vLLM: start-up fails once speculative decoding loads the MTP head: "
                          "AssertionError in the weight loader (the `weight` parameter holds "
                          "packed FP4, half the stored width)";
  EXPECT_EQ(effect("compressed-tensors", R"({"format": "pack-quantized"})"), missing);
  EXPECT_EQ(effect("compressed-tensors",
                   R"({"config_groups": {"group_0": {"format": "float-quantized"}}})"),
            cast);
  EXPECT_EQ(effect("compressed-tensors",
                   R"({"format": "float-quantized",
                       "config_groups": {"a": {}, "b": {"format": "pack-quantized"}}})"),
            missing); // groups that disagree: no one parameter to name
  EXPECT_EQ(effect("fp8", "{}"), cast);
  EXPECT_EQ(effect("modelopt", R"({"quant_algo": "FP8"})"), cast);
  EXPECT_EQ(effect("modelopt", R"({"quant_algo": "NVFP4"})"), fp4);
  EXPECT_EQ(effect("modelopt",
                   R"({"quant_algo": "MIXED_PRECISION",
                       "quantized_layers": {"a": {"quant_algo": "W4A16_NVFP4"},
                                            "b": {"quant_algo": "W4A16_NVFP4"}}})"),
            fp4);
  EXPECT_EQ(effect("modelopt",
                   R"({"quant_algo": "MIXED_PRECISION",
                       "quantized_layers": {"a": {"quant_algo": "NVFP4"},
                                            "b": {"quant_algo": "FP8"}}})"),
            missing); // algos that differ per layer: no one parameter to name
  EXPECT_EQ(effect("modelopt", R"({"quant_algo": "MXFP8"})"), cast);
  EXPECT_EQ(effect("quark", R"({"global_quant_config": {"weight": {"dtype": "fp8_e4m3"}}})"), cast);
  EXPECT_EQ(effect("quark", R"({"global_quant_config": {"weight": {"dtype": "fp4"}}})"), fp4);
  EXPECT_EQ(effect("gptq", "{}"),
            missing); // qweight
}

} // namespace
} // namespace qpatch::report
