// SPDX-License-Identifier: Apache-2.0
// Disagreements between qpatch and SGLang's own code (tools/sglang_diff executes it; issue 22),
// each as its minimal case.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;

void awq(std::vector<TensorSpec>& out, const std::string& module) {
  out.push_back({module + ".qweight", "I32", {64, 8}});
  out.push_back({module + ".qzeros", "I32", {2, 8}});
  out.push_back({module + ".scales", "F16", {2, 64}});
}

std::string awq_config(const std::string& extra) {
  return "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
         "  \"quantization_config\": {\n    \"quant_method\": \"awq\",\n    \"bits\": 4,\n"
         "    \"group_size\": " +
         extra +
         ",\n    \"zero_point\": true,\n    \"lm_head\": true,\n"
         "    \"modules_to_not_convert\": [\"model.visual\"]\n  }\n}\n";
}

class SglangDiffRegressionTest : public test::CheckpointCliTest {
public:
  SglangDiffRegressionTest() { m_engine = "sglang@main"; }

protected:
  void write(const std::string& config_json) {
    std::vector<TensorSpec> tensors = {{"lm_head.weight", "BF16", {256, 64}}};
    awq(tensors, "model.language_model.layers.0.mlp.down_proj");
    synth::CheckpointSpec spec;
    spec.config_json = config_json;
    spec.shards.push_back({"model.safetensors", tensors, true});
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
};

// AWQMarlinConfig.get_quant_method (awq/awq.py @01f67c3) quantizes a ParallelLMHead when
// `lm_head` is true: a BF16 head is built AWQ and its stored weight is dropped. Listing the
// head in modules_to_not_convert (a substring test) makes it dense again.
TEST_F(SglangDiffRegressionTest, AwqLmHeadTrueQuantizesTheHeadUnderMarlin) {
  write(awq_config("128"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: awq, judged for SGLang\n"
            "  fixable     lm_head: 1 module stored BF16 but quantized by awq (not in "
            "modules_to_not_convert)\n"
            "  breaks      SGLang: loads, and drops the stored weights silently\n"
            "  would patch config.json +1: lm_head\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(nlohmann::ordered_json::parse(
                read("config.json"))["quantization_config"]["modules_to_not_convert"]
                .dump(),
            R"(["model.visual","lm_head"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// A group size Marlin cannot serve gets the plain AWQConfig, which answers LinearBase only: the
// head stays dense whatever `lm_head` says.
TEST_F(SglangDiffRegressionTest, AwqLmHeadIsIgnoredWithoutMarlin) {
  write(awq_config("96"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
}

// A config the Marlin classes cannot take is read by the plain ones, whose from_config needs
// keys Marlin's compatibility test only skips: GPTQConfig reads desc_act, AWQConfig reads
// zero_point, and AWQConfig takes 4 bits only, while AWQ Marlin takes 4 bits only too
// (gptq/gptq.py @0cdfa2f, awq/awq.py @01f67c3, marlin_utils.py @653d854; base_config.py
// get_from_keys).
TEST_F(SglangDiffRegressionTest, PlainClassesRefuseConfigsWithoutTheirKeys) {
  write(
      "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
      "  \"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, "
      "\"group_size\": 32, \"version\": \"gemm\", \"modules_to_not_convert\": [\"lm_head\"]}\n}\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: awq, judged for SGLang\n"
            "  not fixable config.json /quantization_config: SGLang refuses this quantization "
            "config before it builds any layer: ValueError: Cannot find any of ['zero_point'] in "
            "the model's quantization config.\n"
            "  breaks      SGLang: start-up fails: it refuses the quantization config: "
            "\"ValueError: Cannot find any of ['zero_point'] in the model's quantization "
            "config.\"\n"
            "  status      unfixable\n");
  write(
      "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
      "  \"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 8, "
      "\"group_size\": 128, \"zero_point\": true, \"modules_to_not_convert\": [\"lm_head\"]}\n}\n");
  EXPECT_NE(run_qpatch({"--check"})
                .second.find(
                    "\"ValueError: Currently, only 4-bit weight quantization is supported for AWQ, "
                    "but got 8 bits.\""),
            std::string::npos);
  write(
      "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
      "  \"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, "
      "\"group_size\": 128, \"zero_point\": true, \"modules_to_not_convert\": [\"lm_head\"]}\n}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

} // namespace
} // namespace qpatch::cli
