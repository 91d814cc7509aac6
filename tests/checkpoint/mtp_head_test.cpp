// SPDX-License-Identifier: Apache-2.0
// The MTP head found per family (quant-formats.md §6.11).
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>

#include <gtest/gtest.h>

namespace qpatch::checkpoint {
namespace {

class MtpHeadTest : public test::TempDirTest {
protected:
  std::string summary(const std::string& config, const std::vector<std::string>& tensors) {
    synth::CheckpointSpec spec;
    spec.config_json = config;
    synth::ShardSpec shard{"model.safetensors", {}, true};
    for (const std::string& name : tensors) {
      const bool norm = name.find("norm") != std::string::npos;
      shard.tensors.push_back(
          {name, "BF16", norm ? std::vector<uint64_t>{8} : std::vector<uint64_t>{8, 8}});
    }
    spec.shards.push_back(std::move(shard));
    EXPECT_TRUE(synth::write_checkpoint(dir(), spec).ok());
    auto inventory = read_inventory(dir(), "ckpt");
    const auto modules = build_modules(*inventory);
    const MtpHead head = find_mtp_head(json::Json::parse(config), modules, *inventory);
    return head.summary + " | declared " + std::to_string(head.declared) + " by " +
           head.declared_by;
  }
};

TEST_F(MtpHeadTest, DeepSeekAppendsALayerAfterTheMainOnes) {
  EXPECT_EQ(summary(R"({"num_hidden_layers": 61, "num_nextn_predict_layers": 1})",
                    {"model.layers.60.mlp.down_proj.weight",
                     "model.layers.61.eh_proj.weight",
                     "model.layers.61.enorm.weight",
                     "model.layers.61.mlp.down_proj.weight",
                     "model.layers.610.mlp.down_proj.weight"}),
            "2 linears BF16, 1 norm in model.safetensors | declared 1 by num_nextn_predict_layers");
}

TEST_F(MtpHeadTest, MimoUsesMtpLayers) {
  EXPECT_EQ(summary(R"({"num_hidden_layers": 36, "num_nextn_predict_layers": 1})",
                    {"model.layers.35.mlp.up_proj.weight",
                     "model.mtp_layers.0.input_proj.weight",
                     "model.mtp_layers.0.token_layernorm.weight"}),
            "1 linear BF16, 1 norm in model.safetensors | declared 1 by num_nextn_predict_layers");
}

TEST_F(MtpHeadTest, Qwen35DeclaresInTextConfig) {
  EXPECT_EQ(summary(R"({"text_config": {"num_hidden_layers": 2, "mtp_num_hidden_layers": 1}})",
                    {"mtp.fc.weight", "mtp.norm.weight"}),
            "1 linear BF16, 1 norm in model.safetensors | declared 1 by mtp_num_hidden_layers");
}

// Issue 12 item 6: layouts seen in public checkpoints since the first version.
TEST_F(MtpHeadTest, Qwen38SplitFcIsAHeadWithItsNamesAssumed) {
  EXPECT_EQ(summary(R"({"text_config": {"num_hidden_layers": 2, "mtp_num_hidden_layers": 1}})",
                    {"mtp.fc_embedding.weight",
                     "mtp.fc_hidden.weight",
                     "mtp.layers.0.mlp.down_proj.weight",
                     "mtp.norm.weight"}),
            "3 linears BF16, 1 norm in model.safetensors; Qwen3.8 split "
            "mtp.fc_embedding/mtp.fc_hidden layout: engine layer names assumed | declared 1 by "
            "mtp_num_hidden_layers");
}

TEST_F(MtpHeadTest, Glm5NextnLayerFollowsTheMainLayers) {
  // GLM-5.x keeps GLM-4.x's layout: the nextn layer is model.layers.{num_hidden_layers}.
  EXPECT_EQ(
      summary(R"({"num_hidden_layers": 78, "num_nextn_predict_layers": 1})",
              {"model.layers.77.mlp.down_proj.weight",
               "model.layers.78.eh_proj.weight",
               "model.layers.78.enorm.weight",
               "model.layers.78.hnorm.weight",
               "model.layers.78.self_attn.o_proj.weight"}),
      "2 linears BF16, 2 norms in model.safetensors | declared 1 by num_nextn_predict_layers");
}

// DeepSeek-V4 stores its draft as mtp.{i}.* (the engines' names for it are each engine's
// naming row: vLLM's DeepSeekV4MTP is traced).
TEST_F(MtpHeadTest, DeepSeekV4NumberedMtpModulesAreAHead) {
  EXPECT_EQ(summary(R"({"num_hidden_layers": 61, "num_nextn_predict_layers": 1})",
                    {"model.layers.60.mlp.down_proj.weight",
                     "mtp.0.eh_proj.weight",
                     "mtp.0.enorm.weight",
                     "mtp.0.ffn.down_proj.weight"}),
            "2 linears BF16, 1 norm in model.safetensors | declared 1 by "
            "num_nextn_predict_layers");
}

TEST_F(MtpHeadTest, DeclaredButAbsent) {
  EXPECT_EQ(summary(R"({"mtp_num_hidden_layers": 1})", {"lm_head.weight"}),
            " | declared 1 by mtp_num_hidden_layers");
}

} // namespace
} // namespace qpatch::checkpoint
