// SPDX-License-Identifier: Apache-2.0
// Disagreements between qpatch and SGLang's own code (tools/sglang_diff executes it; issue 22),
// each as its minimal case.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
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
            "  lint        modules_to_not_convert: 1 entry; 1 dead (no verdict changes without "
            "them, in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is "
            "built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n"
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

void fp8(std::vector<TensorSpec>& out, const std::string& module) {
  out.push_back({module + ".weight", "F8_E4M3", {64, 64}});
  out.push_back({module + ".weight_scale_inv", "F32", {1, 1}});
}

class SglangFp8RegressionTest : public SglangDiffRegressionTest {
protected:
  // An FP8 self_attn.o_proj, a BF16 mlp.down_proj and lm_head, and the MTP draft's q/k/v BF16;
  // `quant`: the quantization_config after its quant_method.
  void write_fp8(const std::string& quant) {
    std::vector<TensorSpec> tensors = {
        {"lm_head.weight", "BF16", {256, 64}},
        {"model.language_model.layers.0.mlp.down_proj.weight", "BF16", {64, 64}}};
    fp8(tensors, "model.language_model.layers.0.self_attn.o_proj");
    for (const char* shard : {"q_proj", "k_proj", "v_proj"}) {
      tensors.push_back(
          {std::string("mtp.layers.0.self_attn.") + shard + ".weight", "BF16", {64, 64}});
    }
    synth::CheckpointSpec spec;
    spec.config_json = "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
                       "  \"text_config\": {\"mtp_num_hidden_layers\": 1},\n"
                       "  \"quantization_config\": {\"quant_method\": \"fp8\"" +
                       quant + "}\n}\n";
    spec.shards.push_back({"model.safetensors", tensors, true});
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
};

constexpr const char* k_block = ", \"activation_scheme\": \"dynamic\", "
                                "\"weight_block_size\": [128, 128]";

// fp8.py @00563d3 Fp8Config.from_config: get_from_keys_or(["ignored_layers",
// "modules_to_not_convert"]) returns the first key present, so an empty ignored_layers is the
// list SGLang reads (vLLM falls back past it): the fix writes ignored_layers. The draft's
// mapping is {} (qwen3_5_mtp.py @008b79d), so is_layer_skipped tests its qkv_proj by that name.
TEST_F(SglangFp8RegressionTest, EmptyIgnoredLayersIsTheListRead) {
  write_fp8(std::string(k_block) + ", \"ignored_layers\": [], \"modules_to_not_convert\": "
                                   "[\"model.language_model.layers.0.mlp.down_proj\"]");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: fp8, judged for SGLang\n  mtp head    3 linears BF16 in model.safetensors "
      "(mtp_num_hidden_layers: 1)\n  fixable     m: 4 modules stored BF16 but quantized by fp8 "
      "(not in ignored_layers)\n  breaks      SGLang: loads, and drops the stored weights "
      "silently\n  would patch config.json +4: model.language_model.layers.0.mlp.down_proj, "
      "mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj\n  status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n  \"text_config\": "
            "{\"mtp_num_hidden_layers\": 1},\n  \"quantization_config\": {\"quant_method\": "
            "\"fp8\", \"activation_scheme\": \"dynamic\", \"weight_block_size\": [128, 128], "
            "\"ignored_layers\": [\n    \"model.language_model.layers.0.mlp.down_proj\",\n    "
            "\"mtp.layers.0.self_attn.q_proj\",\n    \"mtp.layers.0.self_attn.k_proj\",\n    "
            "\"mtp.layers.0.self_attn.v_proj\"\n  ], \"modules_to_not_convert\": "
            "[\"model.language_model.layers.0.mlp.down_proj\"]}\n}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// Every engine at once: vLLM reads modules_to_not_convert past the empty ignored_layers,
// SGLang ignored_layers, transformers modules_to_not_convert; the two lists are made one.
TEST_F(SglangFp8RegressionTest, OnePatchSatisfiesEveryEngine) {
  m_engine = "all";
  write_fp8(std::string(k_block) +
            ", \"ignored_layers\": [], \"modules_to_not_convert\": [\"lm_head\", "
            "\"model.language_model.layers.0.mlp.down_proj\"]");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto config = nlohmann::ordered_json::parse(read("config.json"))["quantization_config"];
  EXPECT_EQ(config["ignored_layers"].dump(), config["modules_to_not_convert"].dump());
  EXPECT_EQ(config["ignored_layers"].dump(),
            // model.layers.0...: SGLang before #18926 builds the text model at model.
            R"(["lm_head","model.language_model.layers.0.mlp.down_proj",)"
            R"("model.layers.0.mlp.down_proj",)"
            R"("mtp.layers.0.self_attn.q_proj","mtp.layers.0.self_attn.k_proj",)"
            R"("mtp.layers.0.self_attn.v_proj","mtp.layers.0.self_attn.qkv_proj"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// transformers refuses a glob in modules_to_not_convert (re.error), and the patch, which makes
// the two lists one, drops it. The run that writes that patch used to exit 1 ("not fixable")
// and the next run 0 (SGLang harness, fp8 idempotence): the status is the patched checkpoint's.
TEST_F(SglangFp8RegressionTest, ARefusalThePatchRemovesIsFixedByIt) {
  m_engine = "all";
  write_fp8(std::string(k_block) + ", \"ignored_layers\": [\"lm_head\"], "
                                   "\"modules_to_not_convert\": [\"*mtp*\"]");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: fp8, judged for vLLM (main 2026-02-28..2026-08-17), SGLang (main "
      "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n  mtp "
      "head    3 linears BF16 in model.safetensors (mtp_num_hidden_layers: 1)\n" +
          std::string(test::k_sglang_qwen35_assumed_note) +
          "  note        SGLang main 2026-04-03..2026-04-27: judged with the CUDA build: from "
          "2026-03-30 (#21234) on gfx95 and from 2026-04-08 (#21692) on NPU too, the Qwen3.5 "
          "classes have no mapper and declare the packed mapping, as #23471 (2026-04-28) made "
          "them everywhere\n  fixable     config.json /quantization_config: "
          "transformers refuses this quantization config before it builds any layer: re.error: "
          "modules_to_not_convert entry \"*mtp*\" is not a Python regex (cannot compile at "
          "character "
          "0: quantifier does not follow a repeatable item) [transformers]\n  fixable     2 "
          "modules "
          "stored BF16 but quantized by fp8 (not in modules_to_not_convert) [transformers]\n  "
          "breaks   "
          "   transformers: loads with \"Some weights ... were not used\" and initialises the "
          "layer at "
          "random\n  fixable     m: 4 modules stored BF16 but quantized by fp8 (not in "
          "ignored_layers) "
          "[vllm, sglang]\n  breaks      vLLM: loads without an error: the stored BF16 weight of "
          "model.language_model.layers.0.mlp.down_proj is cast into its FP8 `weight` parameter and "
          "the "
          "weight scale is never loaded, so the layer computes garbage; SGLang: loads, and drops "
          "the "
          "stored weights silently\n  would patch config.json +13: lm_head, "
          "model.language_model.layers.0.mlp.down_proj, model.layers.0.mlp.down_proj, "
          "mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
          "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.qkv_proj, "
          "model.language_model.layers.0.mlp.down_proj, model.layers.0.mlp.down_proj, "
          "mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
          "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.qkv_proj; -1: *mtp*\n  status     "
          " "
          "needs-patch\n  apply       qpatch DIR\n");
  const auto [fixed, fix_out] = run_qpatch({});
  EXPECT_EQ(fixed, 0) << fix_out;
  const std::string list = R"(["lm_head", "model.language_model.layers.0.mlp.down_proj", )"
                           R"("model.layers.0.mlp.down_proj", "mtp.layers.0.self_attn.q_proj", )"
                           R"("mtp.layers.0.self_attn.k_proj", "mtp.layers.0.self_attn.v_proj", )"
                           R"("mtp.layers.0.self_attn.qkv_proj"])";
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
            "  \"text_config\": {\"mtp_num_hidden_layers\": 1},\n"
            "  \"quantization_config\": {\"quant_method\": \"fp8\", \"activation_scheme\": "
            "\"dynamic\", \"weight_block_size\": [128, 128], \"ignored_layers\": " +
                list + ", \"modules_to_not_convert\": " + list + "}\n}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// The same glob beside an empty ignored_layers (SGLang harness seed 76,003,670): the list SGLang
// reads is the empty one, so the first patch keeps the glob there for vLLM and SGLang; a fix
// that called the refusal fixable before the re-judge stopped here with an internal error
// (706951e). The status is the patched checkpoint's: the run's exit is the next run's, and
// the second run writes nothing.
TEST_F(SglangFp8RegressionTest, AGlobBesideAnEmptyIgnoredLayersNeverStopsThePatch) {
  m_engine = "all";
  write_fp8(std::string(k_block) + ", \"ignored_layers\": [], "
                                   "\"modules_to_not_convert\": [\"*mtp*\"]");
  const auto [fixed, fix_out] = run_qpatch({});
  // The glob stays for the engines that read ignored_layers' fallback, so transformers still
  // refuses: not fixable, said once, and the same on every later run.
  EXPECT_EQ(fixed, 1) << fix_out;
  const std::string patched = read("config.json");
  const auto [again, again_out] = run_qpatch({});
  EXPECT_EQ(again, fixed) << fix_out << again_out;
  EXPECT_EQ(read("config.json"), patched);
  EXPECT_EQ(run_qpatch({"--check"}).first, fixed);
}

// Entries are held with and without one leading "model." (Fp8Config.from_config). The draft's
// qkv_proj, which its quant config's mapping lacks, is judged through is_layer_skipped's fallback
// shards (#23467).
TEST_F(SglangFp8RegressionTest, EntriesMatchWithAndWithoutModelPrefix) {
  write_fp8(std::string(k_block) +
            ", \"ignored_layers\": [\"language_model.layers.0.mlp.down_proj\", "
            "\"model.mtp.layers.0.self_attn.q_proj\", \"model.mtp.layers.0.self_attn.k_proj\", "
            "\"model.mtp.layers.0.self_attn.v_proj\"]");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// Fp8Config.from_config and __init__ refuse before any layer is built.
TEST_F(SglangFp8RegressionTest, ConfigRefusals) {
  write_fp8(", \"weight_block_size\": [128, 128]");
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: fp8, judged for SGLang\n  mtp head    3 linears BF16 in model.safetensors "
      "(mtp_num_hidden_layers: 1)\n  not fixable config.json /quantization_config: SGLang refuses "
      "this quantization config before it builds any layer: ValueError: Cannot find any of "
      "['activation_scheme'] in the model's quantization config.\n  breaks      SGLang: start-up "
      "fails: it refuses the quantization config: \"ValueError: Cannot find any of "
      "['activation_scheme'] in the model's quantization config.\"\n  fixable     m: 4 modules "
      "stored BF16 but quantized by fp8 (not in modules_to_not_convert)\n  breaks      SGLang: "
      "loads, and drops the stored weights silently\n  would patch config.json +4: "
      "model.language_model.layers.0.mlp.down_proj, mtp.layers.0.self_attn.q_proj, "
      "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj\n  status      unfixable\n");
  write_fp8(", \"activation_scheme\": \"dynamic\", \"weight_block_size\": [128]");
  EXPECT_NE(run_qpatch({"--check"})
                .second.find("\"ValueError: The quantization block size of weight must have 2 "
                             "dimensions, but got 1 dimensions.\""),
            std::string::npos);
  write_fp8(", \"activation_scheme\": \"static\", \"weight_block_size\": [128, 128]");
  EXPECT_NE(run_qpatch({"--check"})
                .second.find("\"ValueError: The block-wise quantization only supports dynamic "
                             "activation scheme for now, but got static activation scheme.\""),
            std::string::npos);
}

// bitsandbytes.py @b53daee BitsAndBytesConfig.__init__: only "uint8" storage.
TEST_F(SglangDiffRegressionTest, BitsandbytesRefusesOtherStorage) {
  write("{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
        "  \"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, "
        "\"bnb_4bit_quant_storage\": \"bfloat16\", \"llm_int8_skip_modules\": [\"lm_head\"]}\n}\n");
  EXPECT_NE(run_qpatch({"--check"})
                .second.find("\"ValueError: Unsupported bnb_4bit_quant_storage: bfloat16\""),
            std::string::npos);
}

} // namespace
} // namespace qpatch::cli
