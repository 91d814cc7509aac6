// SPDX-License-Identifier: Apache-2.0
// SGLang's DeepSeek-V3 draft reads its own quant config, renamed by DeepseekV3ForCausalLMNextN's
// hf_to_sglang_mapper {"model.layers.61": "model.decoder"} (sgl-project/sglang#19425): an entry
// naming the MTP layer by its checkpoint name reaches the draft's model.decoder layers once the
// method's config applies the mapper (compressed-tensors and Quark from #19425, FP8 from #21280;
// read in upstream history, docs/research/sglang-glm5.md).
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/report_lines.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;

// A Quark FP8 (per tensor) quantization_config with `exclude` (a JSON array's body).
std::string quark_fp8(const std::string& exclude) {
  return "{\"quant_method\": \"quark\", \"exclude\": [" + exclude +
         "], \"export\": {\"kv_cache_group\": [], \"pack_method\": \"reorder\"}, "
         "\"global_quant_config\": {\"weight\": {\"dtype\": \"fp8_e4m3\", \"qscheme\": "
         "\"per_tensor\", \"is_dynamic\": false}, \"input_tensors\": null}, "
         "\"layer_quant_config\": {}, \"layer_type_quant_config\": {}}";
}

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
  // The patch applies, leaves the checkpoint clean, and a second run writes nothing.
  void expect_patched_clean() {
    EXPECT_EQ(run_qpatch({"-q"}).first, 0);
    EXPECT_EQ(run_qpatch({"--check"}).first, 0);
    expect_rerun_writes_nothing({}, 0);
  }
  // Any DeepSeek-V2-named model: `tensors` in one file under `quantization_config`.
  void write_model(const std::string& architecture,
                   int num_hidden_layers,
                   const std::vector<TensorSpec>& tensors,
                   const std::string& quantization_config) {
    synth::CheckpointSpec spec;
    spec.config_json =
        "{\n  \"architectures\": [\"" + architecture +
        "\"],\n  \"num_hidden_layers\": " + std::to_string(num_hidden_layers) +
        ",\n  \"num_nextn_predict_layers\": 1,\n  \"quantization_config\": " + quantization_config +
        "\n}\n";
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
  expect_patched_clean();
}

// Quark: from #19425 (2026-02-26) the exclude list is renamed too.
TEST_F(SglangNextnMapperTest, QuarkEntriesReachTheDraftFrom19425) {
  write(quark_fp8(R"("lm_head", "model.layers.61.self_attn.o_proj")"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 linears BF16 "
      "in model.safetensors (num_nextn_predict_layers: 1)\n" +
          test::lint_line("exclude", 2, 1) +
          "  fixable     model.layers.61.eh_proj: 1 module stored BF16 but quantized by quark (not "
          "in exclude) (SGLang from 2026-04-20 only)\n  breaks      SGLang: loads, and drops the "
          "stored weights silently\n  fixable     model.layers.61.self_attn.o_proj: 1 module "
          "stored BF16 but quantized by quark (not in exclude) (SGLang before 2026-02-26 only)\n  "
          "breaks      SGLang: loads, and drops the stored weights silently\n  would patch "
          "config.json +3: model.layers.61.eh_proj, model.eh_proj, "
          "model.decoder.self_attn.o_proj\n  status      needs-patch\n  apply       qpatch DIR\n");
  expect_patched_clean();
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
      "linears BF16 in model.safetensors (num_nextn_predict_layers: 1)\n" +
          test::lint_line("ignore", 2, 1) +
          "  fixable     model.layers.61.self_attn.o_proj: 1 module stored BF16 but quantized by "
          "targets [\"Linear\"] (group_0, class name); ignore lists their checkpoint names, but "
          "SGLang matches its own layer names, which differ (explain shows them) (SGLang before "
          "2026-02-26 only)\n  breaks      SGLang: loads, and drops the stored weights silently\n  "
          "would patch config.json +1: model.decoder.self_attn.o_proj\n  status      needs-patch\n "
          " apply       qpatch DIR\n");
  expect_patched_clean();
}

// Quark from #23219 (2026-04-20): an exclude entry that skips the NextN layer's mapped prefix
// (model.layers.61 -> model.decoder) builds the whole draft model without a quant config. Before
// it, the entry names no layer and the draft's o_proj is quantized over BF16 weights.
TEST_F(SglangNextnMapperTest, QuarkEntryForTheWholeNextnLayerDropsItsQuantConfigFrom23219) {
  write(quark_fp8(R"("lm_head", "model.layers.61")"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: quark, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 linears "
            "BF16 in model.safetensors (num_nextn_predict_layers: 1)\n" +
                test::lint_line("exclude", 2, 1) +
                "  fixable     model.layers.61.self_attn.o_proj: 1 module stored BF16 but "
                "quantized by quark (not in exclude) (SGLang before 2026-04-20 only)\n  breaks     "
                " SGLang: loads, and drops the stored weights silently\n  would patch config.json "
                "+2: model.layers.61.self_attn.o_proj, model.decoder.self_attn.o_proj\n  status    "
                "  needs-patch\n  apply       qpatch DIR\n");
  expect_patched_clean();
}

// ModelOpt NVFP4: DeepseekModelNextN builds the draft without a quant config whatever the
// config says, so a draft stored BF16 needs no entry, and one stored NVFP4 cannot load.
TEST_F(SglangNextnMapperTest, Nvfp4DraftIsBuiltDenseWhateverTheConfigSays) {
  const std::string config = "{\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\", "
                             "\"group_size\": 16, \"exclude_modules\": [\"lm_head\"]}";
  const std::vector<TensorSpec> main = {
      {"lm_head.weight", "BF16", {256, 64}},
      {"model.layers.0.self_attn.o_proj.weight", "U8", {64, 32}},
      {"model.layers.0.self_attn.o_proj.weight_scale", "F8_E4M3", {64, 4}},
      {"model.layers.0.self_attn.o_proj.weight_scale_2", "F32", {}},
      {"model.layers.0.self_attn.o_proj.input_scale", "F32", {}}};
  std::vector<TensorSpec> dense = main;
  dense.push_back({"model.layers.61.eh_proj.weight", "BF16", {64, 128}});
  dense.push_back({"model.layers.61.self_attn.o_proj.weight", "BF16", {64, 64}});
  write_model("DeepseekV3ForCausalLM", 61, dense, config);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out,
            "DIR: modelopt, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 "
            "linears BF16 in model.safetensors "
            "(num_nextn_predict_layers: 1)\n  status      clean\n");
  std::vector<TensorSpec> nvfp4 = main;
  nvfp4.push_back({"model.layers.61.eh_proj.weight", "BF16", {64, 128}});
  nvfp4.push_back({"model.layers.61.self_attn.o_proj.weight", "U8", {64, 32}});
  nvfp4.push_back({"model.layers.61.self_attn.o_proj.weight_scale", "F8_E4M3", {64, 4}});
  nvfp4.push_back({"model.layers.61.self_attn.o_proj.weight_scale_2", "F32", {}});
  nvfp4.push_back({"model.layers.61.self_attn.o_proj.input_scale", "F32", {}});
  std::filesystem::remove_all(dir());
  write_model("DeepseekV3ForCausalLM", 61, nvfp4, config);
  const auto [code2, out2] = run_qpatch({"--check"});
  EXPECT_EQ(code2, 1);
  EXPECT_EQ(out2,
            "DIR: modelopt, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    1 "
            "linear BF16, 1 linear "
            "modelopt-nvfp4 in model.safetensors (num_nextn_predict_layers: 1)\n  not fixable "
            "model.layers.61.self_attn.o_proj: 1 module stored modelopt-nvfp4 but SGLang builds "
            "this layer dense: not fixable by a config patch\n  breaks      SGLang: loads, and "
            "drops the stored weights silently\n  status      unfixable\n  why         qpatch "
            "explain DIR model.layers.61.self_attn.o_proj\n");
}

// ModelOpt: SGLang's config maps its skip list (a config.json's "ignore", read as
// exclude_modules) through the draft's mapper (apply_list, #18370), so "model.layers.61*" becomes
// "model.decoder*" and reaches the draft; and a MIXED_PRECISION config its quantized_layers keys
// (apply_dict, #20407), so the draft's FP8 layers are found.
void modelopt_module(std::vector<TensorSpec>& tensors, const std::string& m, const char* stored) {
  if (std::string(stored) == "BF16") {
    tensors.push_back({m + ".weight", "BF16", {64, 64}});
  } else if (std::string(stored) == "FP8") {
    tensors.push_back({m + ".weight", "F8_E4M3", {64, 64}});
    tensors.push_back({m + ".weight_scale", "F32", {}});
    tensors.push_back({m + ".input_scale", "F32", {}});
  } else { // NVFP4
    tensors.push_back({m + ".weight", "U8", {64, 32}});
    tensors.push_back({m + ".weight_scale", "F8_E4M3", {64, 4}});
    tensors.push_back({m + ".weight_scale_2", "F32", {}});
    tensors.push_back({m + ".input_scale", "F32", {}});
  }
}

std::vector<TensorSpec> modelopt_model(const char* main, const char* draft) {
  std::vector<TensorSpec> tensors = {{"lm_head.weight", "BF16", {256, 64}},
                                     {"model.layers.61.eh_proj.weight", "BF16", {64, 128}}};
  modelopt_module(tensors, "model.layers.0.self_attn.o_proj", main);
  modelopt_module(tensors, "model.layers.61.self_attn.o_proj", draft);
  return tensors;
}

// Before #19425 (2026-02-26) the draft class has no mapper, so the entry misses its
// model.decoder layers; the patch names them.
TEST_F(SglangNextnMapperTest, ModelOptIgnoreEntriesReachTheDraftThroughItsMapper) {
  write_model("DeepseekV3ForCausalLM",
              61,
              modelopt_model("FP8", "BF16"),
              "{\"quant_method\": \"modelopt\", \"quant_algo\": \"FP8\", "
              "\"ignore\": [\"lm_head\", \"model.layers.61*\"]}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: modelopt, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 linears "
      "BF16 in model.safetensors (num_nextn_predict_layers: 1)\n" +
          test::lint_line("ignore", 2, 1) +
          "  fixable     model.layers.61.self_attn.o_proj: 1 module stored BF16 but quantized by "
          "modelopt (not in ignore) (SGLang before 2026-02-26 only)\n  breaks      SGLang: loads, "
          "and drops the stored weights silently\n  would patch config.json +2: "
          "model.layers.61.self_attn.o_proj, model.decoder.self_attn.o_proj\n  status      "
          "needs-patch\n  apply       qpatch DIR\n");
}

// SGLang reads a MIXED_PRECISION config as modelopt_mixed only from #27906 (2026-07-05), and
// only with an NVFP4 quantized_layers entry (here layer 0's); before, as w4afp8, which no patch
// can help.
TEST_F(SglangNextnMapperTest, ModelOptQuantizedLayersKeysReachTheDraftThroughItsMapper) {
  write_model("DeepseekV3ForCausalLM",
              61,
              modelopt_model("NVFP4", "FP8"),
              "{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\", "
              "\"ignore\": [\"lm_head\"], \"quantized_layers\": {"
              "\"model.layers.0.self_attn.o_proj\": {\"quant_algo\": \"NVFP4\", "
              "\"group_size\": 16}, "
              "\"model.layers.61.self_attn.o_proj\": {\"quant_algo\": \"FP8\"}}}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: modelopt, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    1 linear "
      "BF16, 1 linear fp8 in model.safetensors (num_nextn_predict_layers: 1)\n  note        some "
      "versions judged cannot load this checkpoint whatever the config says (the findings marked "
      "\"only\" say which); the patch satisfies the others; --engine ENGINE@REF (main, YYYY-MM-DD, "
      "a release) judges the version you run alone\n  not fixable config.json "
      "/quantization_config: SGLang reads this quantization config as w4afp8: a MIXED_PRECISION "
      "config is read as modelopt_mixed only for Nemotron-H from #20407 (2026-03-14), and for any "
      "model with an NVFP4 or W4A16_NVFP4 quantized_layers entry from #27906 (2026-07-05); "
      "W4AFp8Config reads neither its skip list nor quantized_layers, and builds every linear "
      "layer FP8 block-wise and every MoE W4AFP8 (SGLang before 2026-07-05 only)\n  breaks      "
      "SGLang: builds the model as w4afp8, not as stored, and drops the stored weights it has no "
      "parameter for silently\n  status      unfixable\n");
}

// Without an NVFP4 layer SGLang reads it as w4afp8 in every version judged.
TEST_F(SglangNextnMapperTest, ModelOptMixedPrecisionWithoutNvfp4IsReadAsW4afp8) {
  write_model("DeepseekV3ForCausalLM",
              61,
              modelopt_model("FP8", "FP8"),
              "{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\", "
              "\"ignore\": [\"lm_head\"], \"quantized_layers\": {"
              "\"model.layers.0.self_attn.o_proj\": {\"quant_algo\": \"FP8\"}, "
              "\"model.layers.61.self_attn.o_proj\": {\"quant_algo\": \"FP8\"}}}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: modelopt, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    1 "
            "linear BF16, 1 linear fp8 in model.safetensors (num_nextn_predict_layers: 1)\n  not "
            "fixable config.json /quantization_config: SGLang reads this quantization config as "
            "w4afp8: a MIXED_PRECISION config is read as modelopt_mixed only for Nemotron-H from "
            "#20407 (2026-03-14), and for any model with an NVFP4 or W4A16_NVFP4 quantized_layers "
            "entry from #27906 (2026-07-05); W4AFp8Config reads neither its skip list nor "
            "quantized_layers, and builds every linear layer FP8 block-wise and every MoE W4AFP8\n "
            " breaks      SGLang: builds the model as w4afp8, not as stored, and drops the stored "
            "weights it has no parameter for silently\n  status      unfixable\n");
}

// GLM-5 (78 layers, its NextN layer 78) under SGLang: its draft was DeepseekV3ForCausalLMNextN,
// whose mapper renames layer 61, until #30265 (2026-07-08) gave it GlmMoeDsaForCausalLMNextN.
class SglangGlm5NextnTest : public SglangNextnMapperTest {
protected:
  void write_glm5(const std::vector<TensorSpec>& tensors, const std::string& quantization_config) {
    write_model("GlmMoeDsaForCausalLM", 78, tensors, quantization_config);
  }
};

// Quark: from #30265 the draft copies exclude entries naming model.layers.78 onto its own names
// (model.decoder.self_attn.o_proj); before it they are compared as written and miss the draft.
TEST_F(SglangGlm5NextnTest, QuarkEntriesReachTheDraftFrom30265) {
  write_glm5(
      {{"lm_head.weight", "BF16", {256, 64}},
       {"model.layers.78.eh_proj.weight", "BF16", {64, 128}},
       {"model.layers.78.self_attn.o_proj.weight", "BF16", {64, 64}},
       {"model.layers.0.self_attn.o_proj.weight", "F8_E4M3", {64, 64}},
       {"model.layers.0.self_attn.o_proj.weight_scale", "F32", {}}},
      quark_fp8(R"("lm_head", "model.layers.78.self_attn.o_proj", "model.layers.78.eh_proj")"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    2 linears BF16 "
      "in model.safetensors (num_nextn_predict_layers: 1)\n" +
          test::lint_line("exclude", 3, 1) +
          "  fixable     model.layers.78.eh_proj: 1 module stored BF16 but quantized by quark (not "
          "in exclude) (SGLang 2026-04-20..2026-07-07 only)\n  breaks      SGLang: loads, and "
          "drops the stored weights silently\n  fixable     model.layers.78.self_attn.o_proj: 1 "
          "module stored BF16 but quantized by quark (not in exclude) (SGLang before 2026-07-08 "
          "only)\n  breaks      SGLang: loads, and drops the stored weights silently\n  would "
          "patch config.json +2: model.eh_proj, model.decoder.self_attn.o_proj\n  status      "
          "needs-patch\n  apply       qpatch DIR\n");
  expect_patched_clean();
}

// FP8: from #21280 (2026-04-03) until #30265 the layer-61 mapper renames GLM-5's entry for its
// own layer 61 onto the draft, which SGLang then builds dense over FP8 weights. No ignored_layers
// entry names layer 61 without also naming the draft, so no patch helps those versions.
TEST_F(SglangGlm5NextnTest, Fp8EntryForLayer61ReachesTheDraftUntil30265) {
  write_glm5({{"lm_head.weight", "BF16", {256, 64}},
              {"model.layers.61.self_attn.o_proj.weight", "BF16", {64, 64}},
              {"model.layers.78.self_attn.o_proj.weight", "F8_E4M3", {64, 64}},
              {"model.layers.78.self_attn.o_proj.weight_scale_inv", "F32", {1, 1}},
              {"model.layers.0.self_attn.o_proj.weight", "F8_E4M3", {64, 64}},
              {"model.layers.0.self_attn.o_proj.weight_scale_inv", "F32", {1, 1}}},
             "{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", "
             "\"weight_block_size\": [128, 128], "
             "\"ignored_layers\": [\"model.layers.61.self_attn.o_proj\"]}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: fp8, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    1 linear fp8-block "
      "in model.safetensors (num_nextn_predict_layers: 1)\n  note        some versions judged "
      "cannot load this checkpoint whatever the config says (the findings marked \"only\" say "
      "which); the patch satisfies the others; --engine ENGINE@REF (main, YYYY-MM-DD, a release) "
      "judges the version you run alone\n  not fixable model.layers.78.self_attn.o_proj: 1 module "
      "stored fp8-block but made dense by ignored_layers entry "
      "\"model.layers.61.self_attn.o_proj\" (SGLang 2026-04-03..2026-07-07 only)\n  breaks      "
      "SGLang: loads, and drops the stored weights silently\n  status      unfixable\n  why        "
      " qpatch explain DIR model.layers.78.self_attn.o_proj\n");
}

} // namespace
} // namespace qpatch::cli
