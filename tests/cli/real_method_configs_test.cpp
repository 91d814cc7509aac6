// SPDX-License-Identifier: Apache-2.0
// Real configs of other methods against heads stored dense, partly quantized (mtp.fc dense) and
// fully quantized: the official Qwen3-Next-80B-A3B-Instruct-FP8 config.json (407-entry
// modules_to_not_convert naming mtp.fc) and the official Qwen3.5 GPTQ-Int4 `dynamic` table.
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;
namespace fs = std::filesystem;
const fs::path k_real = fs::path(QPATCH_TESTDATA_DIR) / "real-configs";

std::string fp8_config() {
  return test::read_bytes(k_real / "qwen3-next-80b-a3b-instruct-fp8.config.json");
}

// config.json with the official Qwen3.5 GPTQ-Int4 quantization_config, verbatim.
std::string gptq_official_config() {
  std::ifstream in(k_real / "fragments" / "qwen3.5-gptq-int4-official.quantization_config.json");
  nlohmann::ordered_json config;
  config["architectures"] = {"Qwen3_5ForCausalLM"};
  config["quantization_config"] = nlohmann::ordered_json::parse(in);
  return config.dump(2) + "\n";
}

class RealMethodConfigTest : public test::CheckpointCliTest {
protected:
  std::vector<std::string> fp8_list() {
    const auto config = nlohmann::ordered_json::parse(read("config.json"));
    return config["quantization_config"]["modules_to_not_convert"].get<std::vector<std::string>>();
  }
};

// The official list names the MoE router of each layer ("model.layers.0.mlp.gate"). On this
// small layout (a dense MLP, gate_up_proj fused) SGLang's is_layer_skipped read that entry as a
// substring of the gate_proj shard until #23467 (2026-04-22), so the shards disagree there: the
// Qwen3.6-FP8 collision #23467 fixed.
TEST_F(RealMethodConfigTest, Fp8OfficialConfigFitsItsOwnHeadLayout) {
  // As released: MTP projections FP8, mtp.fc dense and listed.
  test::write_mini(dir(),
                   {Head::packed_fc_dense, HeadFile::indexed_shard, fp8_config(), Packing::fp8});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm,transformers,sglang@main"}).first, 0);
  const auto [code, out] = run_qpatch({"--check", "--engine", "sglang@2026-04-01"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("ValueError: Detected some but not all shards of "
                     "model.language_model.layers.0.mlp.gate_up_proj are quantized."),
            std::string::npos)
      << out;
}

TEST_F(RealMethodConfigTest, Fp8OfficialConfigOnADenseHeadListsTheProjections) {
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, fp8_config(), Packing::fp8});
  const auto before = fp8_list();
  ASSERT_EQ(before.size(), 407U);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("  fixable     mtp.layers.0: 7 modules stored BF16 but quantized by fp8 (not "
                     "in modules_to_not_convert) [vllm]\n"),
            std::string::npos)
      << out;
  // SGLang builds the Qwen3-Next draft at model.layers.0 (qwen3_next_mtp.py @0053421), under
  // the names of the target's quantized layer 0: no list makes its dense layers dense alone.
  EXPECT_NE(out.find("  not fixable mtp.layers.0: 5 modules stored BF16 but quantized by fp8 (not "
                     "in modules_to_not_convert) [sglang]\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(run_qpatch({"-q"}).first, 1);
  // The router entry goes: it collides with gate_proj in SGLang before #23467 (above).
  auto expected = before;
  expected.erase(std::find(expected.begin(), expected.end(), "model.layers.0.mlp.gate"));
  for (const char* name : {"mtp.layers.0.self_attn.q_proj",
                           "mtp.layers.0.self_attn.k_proj",
                           "mtp.layers.0.self_attn.v_proj",
                           "mtp.layers.0.self_attn.o_proj",
                           "mtp.layers.0.mlp.gate_proj",
                           "mtp.layers.0.mlp.up_proj",
                           "mtp.layers.0.mlp.down_proj"}) {
    expected.emplace_back(name);
  }
  EXPECT_EQ(fp8_list(), expected);
}

TEST_F(RealMethodConfigTest, Fp8OfficialConfigOnAFullyQuantizedHeadDropsMtpFc) {
  test::write_mini(dir(), {Head::packed, HeadFile::indexed_shard, fp8_config(), Packing::fp8});
  const auto before = fp8_list();
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("  fixable     mtp.fc: 1 module stored fp8-block but made dense by "
                     "modules_to_not_convert entry \"mtp.fc\" [vllm]\n"),
            std::string::npos)
      << out;
  // SGLang's draft builds mtp.fc as a plain nn.Linear: the packed fc cannot load there.
  EXPECT_EQ(run_qpatch({"-q"}).first, 1);
  auto expected = before;
  expected.erase(std::find(expected.begin(), expected.end(), "model.layers.0.mlp.gate"));
  expected.erase(std::find(expected.begin(), expected.end(), "mtp.fc"));
  EXPECT_EQ(fp8_list(), expected);
}

TEST_F(RealMethodConfigTest, GptqOfficialRulesOnAFullyQuantizedHead) {
  // "-:.*mtp.*" makes mtp.fc dense by re.match and, through vLLM's Qwen3.5 special case, the
  // packed decoder layers too: the rule has to go.
  test::write_mini(dir(),
                   {Head::packed, HeadFile::indexed_shard, gptq_official_config(), Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("would patch config.json -2: -:.*attn.*, -:.*mtp.*"), std::string::npos)
      << out;
  // SGLang's Qwen3.5 draft builds mtp.fc as a plain nn.Linear: a packed fc cannot load there,
  // whatever the config says. The patch still fixes what vLLM builds; the finding stays.
  EXPECT_NE(out.find("  not fixable mtp.fc: 1 module stored gptq but SGLang builds this layer "
                     "dense: not fixable by a config patch [sglang]\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(run_qpatch({"-q"}).first, 1);
  const auto config = nlohmann::ordered_json::parse(read("config.json"));
  EXPECT_EQ(config["quantization_config"]["dynamic"].dump(),
            R"({"lm_head":{},"model.language_model.embed_tokens":{},"-:.*shared_expert.*":{},)"
            R"("-:.*visual.*":{}})");
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check"}).first, 1);
}

TEST_F(RealMethodConfigTest, GptqOfficialRulesOnADenseHeadOnlyTouchAttention) {
  test::write_mini(dir(),
                   {Head::dense, HeadFile::indexed_shard, gptq_official_config(), Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  // The head is dense and "-:.*mtp.*" keeps it so; only the packed attention of this layout
  // (BF16 in the official release) disagrees with "-:.*attn.*".
  EXPECT_NE(out.find("would patch config.json -1: -:.*attn.*"), std::string::npos) << out;
  EXPECT_EQ(out.find("mtp.fc"), std::string::npos) << out;
}

} // namespace
} // namespace qpatch::cli
