// SPDX-License-Identifier: Apache-2.0
// What differs between engine versions, each case on both sides of the change that moved it:
// the default run judges every version and says which a finding holds for; --engine
// ENGINE@REF judges one (main, a day, a release). The rules of each change are cited where they
// are implemented (src/engine/<engine>/history.cpp names the PR, commit and day).
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;

class EngineVersionsTest : public test::CheckpointCliTest {
protected:
  std::string ignore() const {
    return nlohmann::ordered_json::parse(read_file("config.json"))["quantization_config"]["ignore"]
        .dump();
  }
  std::string read_file(const std::string& name) const;
};

std::string EngineVersionsTest::read_file(const std::string& name) const {
  return test::read_bytes(dir() / name);
}

// A Qwen3.5 VLM config whose one target names the text layers only: the MTP head (stored BF16)
// is untargeted. Since #41965 vLLM builds it dense; before, find_matched_target raised.
std::string text_layers_only() {
  return test::ct_config_json(
      R"(["lm_head"])", R"(["re:^language_model\\.model\\."])", "Qwen3_5ForConditionalGeneration");
}

constexpr const char* k_untargeted_mtp =
    "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors "
    "(mtp_num_hidden_layers: 1)\n"
    "  fixable     mtp: 8 modules stored BF16 and no target matches them, and vLLM raises for "
    "that while it builds the model (\"ValueError: Unable to find matching target for ... in the "
    "compressed-tensors config.\")";
constexpr const char* k_untargeted_fix =
    "  breaks      vLLM: start-up fails while it builds the model: \"ValueError: Unable to find "
    "matching target for ... in the compressed-tensors config.\"\n"
    "  would patch config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, "
    "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, "
    "mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj\n"
    "  status      needs-patch\n"
    "  apply       qpatch DIR\n";

TEST_F(EngineVersionsTest, UntargetedLinearRaisedBefore41965) {
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, text_layers_only()});
  // One version pinned by a day: the era it falls in (#37291 opened it, #41965 closed it).
  const auto [old_code, old_out] = run_qpatch({"--check", "--engine", "vllm@2026-05-06"});
  EXPECT_EQ(old_code, 1);
  // The Qwen3.5 VLM's head is built as language_model.lm_head and the entry "lm_head" is never
  // renamed: in this era it reaches nothing (the lint's dead entry).
  const std::string mtp_line(k_untargeted_mtp);
  const size_t after_head = mtp_line.find('\n') + 1;
  EXPECT_EQ(
      old_out,
      std::string("DIR: compressed-tensors, judged for vLLM (main 2026-03-30..2026-05-06)\n") +
          mtp_line.substr(0, after_head) +
          "  lint        ignore: 1 entry; 1 dead (no verdict changes without them, in any version "
          "judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense by them); "
          "qpatch --prune DIR removes the dead and duplicate ones\n" +
          mtp_line.substr(after_head) + "\n" + k_untargeted_fix);
  // A release is the day main was cut for it: 0.20 (2026-04-28) raises, 0.21 does not.
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@0.20"}).first, 1);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@0.21.1"}).first, 0);
  const auto [new_code, new_out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(new_code, 0);
  EXPECT_EQ(new_out,
            "DIR: compressed-tensors, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors "
            "(mtp_num_hidden_layers: 1)\n"
            "  status      clean\n");
  // Every version by default: the finding says which it holds for, and the one patch (the
  // exact names, which today's vLLM reads as it reads the file) satisfies all of them.
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: compressed-tensors, judged for " +
                test::judged_for(engine::Engine::vllm, "Qwen3_5ForConditionalGeneration") + "\n" +
                k_untargeted_mtp + " (vLLM before 2026-05-07 (0.20 and older) only)\n" +
                k_untargeted_fix);
  EXPECT_EQ(run_qpatch({"-q", "--engine", "vllm"}).first, 0);
  EXPECT_EQ(
      ignore(),
      R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.q_proj","mtp.layers.0.self_attn.k_proj",)"
      R"("mtp.layers.0.self_attn.v_proj","mtp.layers.0.self_attn.o_proj",)"
      R"("mtp.layers.0.mlp.gate_proj","mtp.layers.0.mlp.up_proj","mtp.layers.0.mlp.down_proj"])");
  for (const char* engine : {"vllm", "vllm@2026-03-01", "vllm@2026-05-06", "vllm@main"}) {
    EXPECT_EQ(run_qpatch({"--check", "--engine", engine}).first, 0) << engine;
  }
}

// auto-round: since #48589 an extra_config key K reaches every layer whose name ends in ".K",
// so {"fc": 16 bits} keeps mtp.fc dense; before it a key applied by its exact name only.
TEST_F(EngineVersionsTest, AutoRoundSuffixKeyReachesMtpFcFrom48589) {
  const std::string config =
      "{\n  \"architectures\": [\n    \"Qwen3_5ForConditionalGeneration\"\n  ],\n"
      "  \"quantization_config\": {\n    \"bits\": 4,\n    \"data_type\": \"int\",\n"
      "    \"extra_config\": {\n      \"fc\": {\n        \"bits\": 16,\n"
      "        \"data_type\": \"fp\"\n      }\n    },\n    \"group_size\": 128,\n"
      "    \"packing_format\": \"auto_round:auto_gptq\",\n    \"quant_method\": \"auto-round\",\n"
      "    \"sym\": true\n  }\n}\n";
  test::write_mini(dir(), {Head::packed_fc_dense, HeadFile::indexed_shard, config, Packing::gptq});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
  const std::string head =
      "  mtp head    1 linear BF16, 4 norms, 7 linears gptq in model_extra_tensors.safetensors\n";
  const std::string finding =
      "  fixable     mtp.fc: 1 module stored BF16 but quantized (4 bits) by the global bits (no "
      "block list); no extra_config key of 16 bits names them";
  const std::string fix =
      "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n"
      "  would patch config.json +1: mtp.fc\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n";
  const auto [old_code, old_out] = run_qpatch({"--check", "--engine", "vllm@2026-07-20"});
  EXPECT_EQ(old_code, 1);
  EXPECT_EQ(old_out,
            "DIR: auto-round, judged for vLLM (main 2026-06-17..2026-07-22)\n" + head +
                // Before #48589 the key reaches no layer.
                "  lint        extra_config: 1 entry; 1 dead (no verdict changes without them, in "
                "any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is "
                "built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n" +
                finding + "\n" + fix);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for " +
          test::judged_for(engine::Engine::vllm, "Qwen3_5ForConditionalGeneration", "auto-round") +
          ", " +
          test::judged_for(
              engine::Engine::sglang, "Qwen3_5ForConditionalGeneration", "auto-round") +
          " and transformers (no one release: files of several commits)\n" + head +
          test::k_sglang_qwen35_assumed_note + finding +
          " (vLLM before 2026-07-28 (0.26 and older) only) [vllm]\n" + fix);
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@2026-07-20"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

// Before #23471 (2026-04-28) SGLang's Qwen3.5 classes inherit Qwen3-VL's hf_to_sglang_mapper on
// CUDA, not on gfx95 (from #21234) or NPU (from #21692) (sglang/naming.cpp
// qwen3_vl_config_mapper): a version judged in that span says which build it judges; main does
// not.
TEST_F(EngineVersionsTest, AnSglangSpanJudgedForOneBuildSaysWhich) {
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, text_layers_only()});
  const auto [old_code, old_out] = run_qpatch({"--check", "--engine", "sglang@2026-03-01"});
  EXPECT_EQ(old_code, 1);
  EXPECT_EQ(
      old_out,
      "DIR: compressed-tensors, judged for SGLang (main 2026-02-17..2026-03-22)\n  mtp head    8 "
      "linears BF16, 4 norms in model_extra_tensors.safetensors (mtp_num_hidden_layers: 1)\n  note "
      "       SGLang main 2026-02-17..2026-03-22: judged with the CUDA build: from 2026-03-30 "
      "(#21234) on gfx95 and from 2026-04-08 (#21692) on NPU too, the Qwen3.5 classes have no "
      "mapper and declare the packed mapping, as #23471 (2026-04-28) made them everywhere\n"
      "  lint        ignore: 1 entry; 1 dead (no verdict changes without them, in any "
      "version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense by "
      "them); qpatch --prune DIR removes the dead and duplicate ones\n  not fixable "
      "model.language_model.layers.0: 7 modules stored ct-pack-quantized but no target matches "
      "them, and SGLang raises for that while it builds the model (\"ValueError: Unable to find "
      "matching target for ... in the compressed-tensors config.\")\n  breaks      SGLang: "
      "start-up fails while it builds the model: \"ValueError: Unable to find matching target for "
      "... in the compressed-tensors config.\"\n  fixable     mtp.layers.0: 7 modules stored BF16 "
      "and no target matches them, and SGLang raises for that while it builds the model "
      "(\"ValueError: Unable to find matching target for ... in the compressed-tensors "
      "config.\")\n  breaks      SGLang: start-up fails while it builds the model: \"ValueError: "
      "Unable to find matching target for ... in the compressed-tensors config.\"\n  would patch "
      "config.json +9: mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.qkv_proj, "
      "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
      "mtp.layers.0.mlp.gate_up_proj, mtp.layers.0.mlp.down_proj\n  status      unfixable\n  why   "
      "      qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
  const auto [code, out] = run_qpatch({"--check", "--engine", "sglang@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for SGLang\n  mtp head    8 linears BF16, 4 norms in "
      "model_extra_tensors.safetensors (mtp_num_hidden_layers: 1)\n  lint        ignore: 1 entry; "
      "1 dead (no verdict changes without them, in any version judged), 0 duplicates, 0 over-broad "
      "(a layer stored quantized is built dense by them); qpatch --prune DIR removes the dead and "
      "duplicate ones\n  not fixable model.language_model.layers.0: 7 modules stored "
      "ct-pack-quantized but no target matches them, and SGLang raises for that while it builds "
      "the model (\"ValueError: Unable to find matching target for ... in the compressed-tensors "
      "config.\")\n  breaks      SGLang: start-up fails while it builds the model: \"ValueError: "
      "Unable to find matching target for ... in the compressed-tensors config.\"\n  fixable     "
      "mtp.layers.0: 7 modules stored BF16 and no target matches them, and SGLang raises for that "
      "while it builds the model (\"ValueError: Unable to find matching target for ... in the "
      "compressed-tensors config.\")\n  breaks      SGLang: start-up fails while it builds the "
      "model: \"ValueError: Unable to find matching target for ... in the compressed-tensors "
      "config.\"\n  would patch config.json +9: mtp.layers.0.self_attn.q_proj, "
      "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
      "mtp.layers.0.self_attn.qkv_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
      "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.gate_up_proj, mtp.layers.0.mlp.down_proj\n  "
      "status      unfixable\n  why         qpatch explain DIR "
      "model.language_model.layers.0.self_attn.q_proj\n");
}

} // namespace
} // namespace qpatch::cli
