// SPDX-License-Identifier: Apache-2.0
// SGLang's DeepSeek-V3 draft reads its own quant config, renamed by DeepseekV3ForCausalLMNextN's
// hf_to_sglang_mapper {"model.layers.61": "model.decoder"} (sgl-project/sglang#19425): an entry
// naming the MTP layer by its checkpoint name reaches the draft's model.decoder layers once the
// method's config applies the mapper (compressed-tensors and Quark from #19425, FP8 from #21280;
// read in upstream history, docs/research/sglang-glm5.md).
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;

class SglangNextnMapperTest : public test::CheckpointCliTest {
public:
  SglangNextnMapperTest() { m_engine = "sglang"; }

protected:
  // DeepSeek-V3's 61 layers (layer 0 stands for them) and its MTP layer 61, stored BF16 and
  // listed by its checkpoint names; everything else FP8.
  void write(const std::string& quantization_config) {
    std::vector<TensorSpec> tensors = {
        {"lm_head.weight", "BF16", {256, 64}},
        {"model.layers.61.eh_proj.weight", "BF16", {64, 128}},
        {"model.layers.61.self_attn.o_proj.weight", "BF16", {64, 64}},
        {"model.layers.0.self_attn.o_proj.weight", "F8_E4M3", {64, 64}},
        {"model.layers.0.self_attn.o_proj.weight_scale_inv", "F32", {1, 1}}};
    synth::CheckpointSpec spec;
    spec.config_json = "{\n  \"architectures\": [\"DeepseekV3ForCausalLM\"],\n"
                       "  \"num_hidden_layers\": 61,\n  \"num_nextn_predict_layers\": 1,\n"
                       "  \"quantization_config\": " +
                       quantization_config + "\n}\n";
    spec.shards.push_back({"model.safetensors", tensors, true});
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
};

// FP8: until #21280 (2026-04-03) fp8.py has no apply_weight_name_mapper, so the entry names no
// draft layer and SGLang builds model.decoder.self_attn.o_proj FP8; from then on it names it.
TEST_F(SglangNextnMapperTest, Fp8EntriesReachTheDraftFrom21280) {
  write("{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", "
        "\"weight_block_size\": [128, 128], "
        "\"ignored_layers\": [\"model.layers.61.self_attn.o_proj\"]}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: fp8, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 linears BF16 in "
      "model.safetensors (num_nextn_predict_layers: 1)\n  fixable     "
      "model.layers.61.self_attn.o_proj: 1 module stored BF16 but quantized by fp8 (not in "
      "ignored_layers) (SGLang before 2026-04-03 only)\n  breaks      SGLang: loads, and drops the "
      "stored weights silently\n  would patch config.json +1: model.decoder.self_attn.o_proj\n  "
      "status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  expect_rerun_writes_nothing({}, 0);
}

// Quark: from #19425 (2026-02-26) the exclude list is renamed too.
TEST_F(SglangNextnMapperTest, QuarkEntriesReachTheDraftFrom19425) {
  write("{\"quant_method\": \"quark\", \"exclude\": [\"lm_head\", "
        "\"model.layers.61.self_attn.o_proj\"], \"export\": {\"kv_cache_group\": [], "
        "\"pack_method\": \"reorder\"}, \"global_quant_config\": {\"weight\": {\"dtype\": "
        "\"fp8_e4m3\", \"qscheme\": \"per_tensor\", \"is_dynamic\": false}, \"input_tensors\": "
        "{\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\", \"is_dynamic\": false}}, "
        "\"layer_quant_config\": {}, \"layer_type_quant_config\": {}}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 linears BF16 "
      "in model.safetensors (num_nextn_predict_layers: 1)\n  lint        exclude: 2 entries; 1 "
      "dead (no verdict changes without them, in any version judged), 0 duplicates, 0 over-broad "
      "(a layer stored quantized is built dense by them); qpatch --prune DIR removes the dead and "
      "duplicate ones\n  fixable     model.layers.61.self_attn.o_proj: 1 module stored BF16 but "
      "quantized by quark (not in exclude) (SGLang before 2026-02-26 only)\n  breaks      SGLang: "
      "loads, and drops the stored weights silently\n  would patch config.json +1: "
      "model.decoder.self_attn.o_proj\n  status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  expect_rerun_writes_nothing({}, 0);
}

// compressed-tensors: its ignore list is renamed from #19425 on, read as SGLang reads it (a
// case-insensitive substring).
TEST_F(SglangNextnMapperTest, CompressedTensorsEntriesReachTheDraftFrom19425) {
  write("{\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", "
        "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": "
        "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", "
        "\"block_structure\": [128, 128], \"symmetric\": true}}}, "
        "\"ignore\": [\"lm_head\", \"model.layers.61.self_attn.o_proj\"]}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 "
      "linears BF16 in model.safetensors (num_nextn_predict_layers: 1)\n  lint        ignore: 2 "
      "entries; 1 dead (no verdict changes without them, in any version judged), 0 duplicates, 0 "
      "over-broad (a layer stored quantized is built dense by them); qpatch --prune DIR removes "
      "the dead and duplicate ones\n  fixable     model.layers.61.self_attn.o_proj: 1 module "
      "stored BF16 but quantized by targets [\"Linear\"] (group_0, class name); ignore lists their "
      "checkpoint names, but SGLang matches its own layer names, which differ (explain shows them) "
      "(SGLang before 2026-02-26 only)\n  breaks      SGLang: loads, and drops the stored weights "
      "silently\n  would patch config.json +1: model.decoder.self_attn.o_proj\n  status      "
      "needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  expect_rerun_writes_nothing({}, 0);
}

} // namespace
} // namespace qpatch::cli
