// SPDX-License-Identifier: Apache-2.0
// auto-round configs under vLLM's INC rules (engines.md §5, §11.2), built from the real
// auto-round 0.13.0 export of a re-quantized Qwen3.5 head (testdata/real-configs/fragments) and
// the auto-round 0.10.0 dialect without block_name_to_quantize, against heads stored dense,
// partly packed (mtp.fc dense) and fully packed.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;
namespace fs = std::filesystem;

// config.json around a quantization_config object given as JSON text (indented by 2 more).
std::string config_with(const std::string& quantization_config) {
  std::string indented;
  std::istringstream lines(quantization_config);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    indented += (first ? "" : "\n  ") + line;
    first = false;
  }
  return "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
         "  \"quantization_config\": " +
         indented + "\n}\n";
}

// The real auto-round 0.13.0 quantization_config of a Qwen3.5 export that re-quantized its head.
std::string requantized_head_config() {
  return config_with(test::read_bytes(fs::path(QPATCH_TESTDATA_DIR) / "real-configs" / "fragments" /
                                      "qwen3.5-4b-autoround-0.13.0-w4a16-requantized-mtp."
                                      "quantization_config.json"));
}

// The auto-round 0.10.0 dialect (no block_name_to_quantize) with the widely shared ".mtp." key.
std::string dot_mtp_dot_config() {
  return config_with("{\n  \"bits\": 4,\n  \"data_type\": \"int\",\n  \"extra_config\": {\n"
                     "    \".mtp.\": {\n      \"bits\": 16,\n      \"data_type\": \"fp\"\n    }\n"
                     "  },\n  \"group_size\": 128,\n  \"quant_method\": \"auto-round\",\n"
                     "  \"packing_format\": \"auto_round:auto_gptq\",\n  \"sym\": true\n}");
}

class AutoRoundTest : public test::CheckpointCliTest {
public:
  // vLLM main's INC rules; what earlier versions do differently: engine_versions_test.cpp.
  AutoRoundTest() { m_engine = "vllm@main"; }

protected:
  nlohmann::ordered_json extra_config() {
    return nlohmann::ordered_json::parse(
        test::read_bytes(dir() / "config.json"))["quantization_config"]["extra_config"];
  }
};

TEST_F(AutoRoundTest, RealRequantizedHeadConfigIsCleanOnItsOwnLayout) {
  test::write_mini(
      dir(),
      {Head::packed_fc_dense, HeadFile::indexed_shard, requantized_head_config(), Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
}

TEST_F(AutoRoundTest, RealRequantizedHeadConfigOnADenseHeadGetsExactKeys) {
  // block_name_to_quantize lists "mtp.layers": a BF16 head needs a 16-bit key per projection
  // (mtp.fc already has one).
  test::write_mini(
      dir(), {Head::dense, HeadFile::indexed_shard, requantized_head_config(), Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  fixable     mtp.layers.0: 7 modules stored BF16 but quantized (4 bits) by "
      "block_name_to_quantize (prefix match); no extra_config key of 16 bits names them\n"
      "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'layers.0.self_attn.q_proj.weight' in "
      "...\"\n"
      "  would patch config.json +7: mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
      "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  const std::string before = test::read_bytes(dir() / "config.json");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  // Only the extra_config object changed, one member per key in the object's own layout.
  const std::string after = test::read_bytes(dir() / "config.json");
  const std::string old_tail =
      "\"mtp.fc\": {\n        \"bits\": 16,\n        \"data_type\": \"fp\"\n      }";
  ASSERT_NE(before.find(old_tail), std::string::npos);
  std::string expected = before;
  std::string added;
  for (const char* name : {"mtp.layers.0.self_attn.q_proj",
                           "mtp.layers.0.self_attn.k_proj",
                           "mtp.layers.0.self_attn.v_proj",
                           "mtp.layers.0.self_attn.o_proj",
                           "mtp.layers.0.mlp.gate_proj",
                           "mtp.layers.0.mlp.up_proj",
                           "mtp.layers.0.mlp.down_proj"}) {
    added += ",\n      \"" + std::string(name) + "\": {\"bits\": 16, \"data_type\": \"fp\"}";
  }
  expected.insert(expected.find(old_tail) + old_tail.size(), added);
  EXPECT_EQ(after, expected);
  const auto [second_code, second_out] = run_qpatch({"--check"});
  EXPECT_EQ(second_code, 0) << second_out;
}

TEST_F(AutoRoundTest, DotMtpDotKeyIsALiteralNameAndTheHeadIsFixedWithExactKeys) {
  test::write_mini(dir(),
                   {Head::dense, HeadFile::indexed_shard, dot_mtp_dot_config(), Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n  mtp head    8 linears BF16, 4 norms "
      "in model_extra_tensors.safetensors\n  note        extra_config key \".mtp.\" has no regex "
      "metacharacter, so vLLM reads it as a literal module name, and no layer of this checkpoint "
      "has that name: it has no effect (write exact names, or a regex key such as \"^mtp\\\\.\")\n "
      " lint        extra_config: 1 entry; 1 dead (no verdict changes without them, in any version "
      "judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense by them); "
      "qpatch --prune DIR removes the dead and duplicate ones\n  fixable     mtp: 8 modules stored "
      "BF16 but quantized (4 bits) by the global bits (no block list); no extra_config key of 16 "
      "bits names them\n  breaks      vLLM: start-up fails once speculative decoding loads the MTP "
      "head: \"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n  would "
      "patch config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
      "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj\n  status      needs-patch\n  apply    "
      "   qpatch DIR\n");
  // The question users ask when the load fails: why is mtp.fc quantized?
  const test::CliOutcome explained = test::run_cli({"explain", "DIR", "mtp.fc"}, dir());
  EXPECT_EQ(explained.code, 1);
  EXPECT_EQ(
      explained.out + explained.err,
      "mtp.fc\n"
      "  stored       dense BF16 [64, 128] in model_extra_tensors.safetensors\n"
      "  layer        mtp.fc (ColumnParallelLinear)\n"
      "  config       config.json /quantization_config (auto-round), judged as " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "auto-round") + ", " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM", "auto-round") + " and " +
          test::traced_as(engine::Engine::transformers, "Qwen3_5ForCausalLM", "auto-round") +
          " load it\n" + "  engine       " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "auto-round") + "\n" +
          "  extra_config[0] \".mtp.\" is a literal name (no regex metacharacter) and is not "
          "mtp.fc\n"
          "  default      no block_name_to_quantize: every layer but lm_head defaults to 4 bits\n"
          "  verdict      quantized (the global bits (no block list))\n"
          "  engine       " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM", "auto-round") + "\n" +
          // SGLang's Qwen3.5 draft builds fc as a plain nn.Linear (qwen3_5_mtp.py @008b79d).
          "  extra_config[0] \".mtp.\" is a literal name (no regex character) and is not "
          "mtp.fc\n"
          "  verdict      dense (built_dense)\n"
          "  engine       " +
          test::traced_as(engine::Engine::transformers, "Qwen3_5ForCausalLM", "auto-round") +
          "\n"
          "  not built    mtp.fc: transformers never builds the MTP head\n"
          "  on disk      dense (BF16)\n"
          "  status       inconsistent for vllm: run `qpatch --dry-run DIR` to see the fix\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto extra = extra_config();
  ASSERT_EQ(extra.size(), 9U);
  EXPECT_EQ(extra.begin().key(), ".mtp."); // kept: qpatch only adds what the disk requires
  EXPECT_EQ(extra["mtp.fc"], nlohmann::ordered_json::parse(R"({"bits": 16, "data_type": "fp"})"));
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

TEST_F(AutoRoundTest, KeyThatMakesAPackedFcDenseIsRemoved) {
  test::write_mini(
      dir(), {Head::packed, HeadFile::indexed_shard, requantized_head_config(), Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears gptq, 4 norms in model_extra_tensors.safetensors\n"
            "  not fixable mtp.fc: 1 module stored gptq but made dense by "
            "extra_config[\"mtp.fc\"], and without that key still dense (block_name_to_quantize "
            "(no entry is a prefix)): list its block in the block list by hand\n"
            "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
            "\"ValueError: There is no module or parameter named 'fc.qweight' in ...\"\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR mtp.fc\n");
}

} // namespace
} // namespace qpatch::cli
