// SPDX-License-Identifier: Apache-2.0
// MiMo: vLLM builds the draft's model.mtp_layers.{i} as model.layers.{num_hidden_layers + i} and
// does not rename config entries for it (engines.md §10.2), so an exclusion must carry the
// renumbered name; input_proj is a plain nn.Linear. Built from the real MiMo-7B config.json.
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;

// The real MiMo-7B config.json with a W4A16 compressed-tensors quantization_config added.
std::string mimo_config(const std::string& ignore) {
  std::ifstream in(fs::path(QPATCH_TESTDATA_DIR) / "real-configs" / "mimo-7b-bf16.config.json");
  auto config = nlohmann::ordered_json::parse(in);
  config["quantization_config"] = nlohmann::ordered_json::parse(
      R"({"config_groups": {"group_0": {"format": "pack-quantized", "targets": ["Linear"],
          "weights": {"group_size": 32, "num_bits": 4, "strategy": "group", "symmetric": true,
          "type": "int"}}}, "format": "pack-quantized", "ignore": )" +
      ignore + R"(, "quant_method": "compressed-tensors"})");
  return config.dump(2) + "\n";
}

class MimoTest : public test::CheckpointCliTest {};

TEST_F(MimoTest, DenseDraftNeedsItsRenumberedNames) {
  test::write_mimo(dir(), mimo_config(R"(["lm_head"])"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  // input_proj is a plain nn.Linear in vLLM: dense whatever the config says, so not listed.
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for " + test::judged_for("MiMoForCausalLM") +
          "\n"
          "  mtp head    6 norms, 8 linears BF16 in model-00002-of-00002.safetensors "
          "(num_nextn_predict_layers: 1)\n"
          "  fixable     model.mtp_layers.0: 7 modules stored BF16 but quantized by targets "
          "[\"Linear\"] (group_0, class name); not in ignore [vllm, sglang]\n"
          "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter named "
          "'model.mtp_layers.0.self_attn.q_proj.weight' in ...\"; SGLang: loads, and drops the "
          "stored "
          "weights silently\n"
          // SGLang's MiMoMTP builds its block with prefix "": self_attn.qkv_proj, which plain
          // entries cannot name without also naming model.layers.N.self_attn.qkv_proj.
          "  would patch config.json +18: model.mtp_layers.0.self_attn.q_proj, "
          "model.mtp_layers.0.self_attn.k_proj, model.mtp_layers.0.self_attn.v_proj, "
          "model.layers.36.self_attn.q_proj, model.layers.36.self_attn.k_proj, "
          "model.layers.36.self_attn.v_proj, re:^self_attn\\.qkv_proj$, "
          "model.mtp_layers.0.self_attn.o_proj, model.layers.36.self_attn.o_proj, "
          "re:^self_attn\\.o_proj$, model.mtp_layers.0.mlp.gate_proj, "
          "model.mtp_layers.0.mlp.up_proj, "
          "model.layers.36.mlp.gate_proj, model.layers.36.mlp.up_proj, re:^mlp\\.gate_up_proj$, "
          "model.mtp_layers.0.mlp.down_proj, model.layers.36.mlp.down_proj, re:^mlp\\.down_proj$\n"
          "  status      needs-patch\n"
          "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto config = nlohmann::ordered_json::parse(read("config.json"));
  EXPECT_EQ(
      config["quantization_config"]["ignore"].dump(),
      R"(["lm_head","model.mtp_layers.0.self_attn.q_proj","model.mtp_layers.0.self_attn.k_proj",)"
      R"("model.mtp_layers.0.self_attn.v_proj","model.layers.36.self_attn.q_proj",)"
      R"("model.layers.36.self_attn.k_proj","model.layers.36.self_attn.v_proj",)"
      R"("re:^self_attn\\.qkv_proj$",)"
      R"("model.mtp_layers.0.self_attn.o_proj","model.layers.36.self_attn.o_proj",)"
      R"("re:^self_attn\\.o_proj$",)"
      R"("model.mtp_layers.0.mlp.gate_proj","model.mtp_layers.0.mlp.up_proj",)"
      R"("model.layers.36.mlp.gate_proj","model.layers.36.mlp.up_proj","re:^mlp\\.gate_up_proj$",)"
      R"("model.mtp_layers.0.mlp.down_proj","model.layers.36.mlp.down_proj",)"
      R"("re:^mlp\\.down_proj$"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

TEST_F(MimoTest, CheckpointNamesAloneDoNotReachTheDraft) {
  // What a patch written by checkpoint names gives: vLLM never sees these names for the draft.
  test::write_mimo(dir(), mimo_config(R"(["lm_head", "model.mtp_layers.0.self_attn.q_proj",
                    "model.mtp_layers.0.self_attn.k_proj", "model.mtp_layers.0.self_attn.v_proj",
                    "model.mtp_layers.0.self_attn.o_proj", "model.mtp_layers.0.mlp.gate_proj",
                    "model.mtp_layers.0.mlp.up_proj", "model.mtp_layers.0.mlp.down_proj"])"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for " + test::judged_for("MiMoForCausalLM") +
          "\n"
          "  mtp head    6 norms, 8 linears BF16 in model-00002-of-00002.safetensors "
          "(num_nextn_predict_layers: 1)\n"
          // The seven checkpoint names reach no layer in any engine: dead weight.
          "  lint        ignore: 8 entries; 7 dead (no verdict changes without them, in any "
          "version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense "
          "by them); qpatch --prune DIR removes the dead and duplicate ones\n"
          "  fixable     model.mtp_layers.0: 7 modules stored BF16 but quantized by targets "
          "[\"Linear\"] (group_0, class name); ignore lists their checkpoint names, but vLLM "
          "matches its own layer names, which differ (explain shows them) [vllm, sglang]\n"
          "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
          "named 'model.mtp_layers.0.self_attn.q_proj.weight' in ...\"; SGLang: loads, and drops "
          "the stored weights silently\n"
          "  would patch config.json +11: model.layers.36.self_attn.q_proj, "
          "model.layers.36.self_attn.k_proj, model.layers.36.self_attn.v_proj, "
          "re:^self_attn\\.qkv_proj$, model.layers.36.self_attn.o_proj, re:^self_attn\\.o_proj$, "
          "model.layers.36.mlp.gate_proj, model.layers.36.mlp.up_proj, re:^mlp\\.gate_up_proj$, "
          "model.layers.36.mlp.down_proj, re:^mlp\\.down_proj$\n"
          "  status      needs-patch\n"
          "  apply       qpatch DIR\n");
}

} // namespace
} // namespace qpatch::cli
