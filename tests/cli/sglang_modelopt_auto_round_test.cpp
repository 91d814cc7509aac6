// SPDX-License-Identifier: Apache-2.0
// SGLang's own ModelOpt and auto-round rules (tools/sglang_diff executes them; issue 22), each
// class of disagreement the harness found as its minimal case, on a small Qwen3.5 VLM: a
// full-attention layer 0, a vision block, lm_head and an MTP head, each module stored as the
// test says.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;

enum class Stored { bf16, gptq, fp8, nvfp4 };

// How each linear module is stored: `main` for the text and vision layers, `head` for the MTP
// head, with exceptions by module name.
struct Storage {
  Stored main = Stored::gptq;
  Stored head = Stored::bf16;
  Stored vision = Stored::bf16;
  std::map<std::string, Stored> except;
};

// The text layers stored as `main`, the rest as Storage's defaults.
Storage main_as(Stored main) {
  Storage storage;
  storage.main = main;
  return storage;
}

void linear(std::vector<TensorSpec>& out,
            Stored stored,
            const std::string& m,
            uint64_t rows,
            uint64_t cols) {
  switch (stored) {
  case Stored::bf16:
    out.push_back({m + ".weight", "BF16", {rows, cols}});
    break;
  case Stored::gptq: // auto_round:auto_gptq int4, group 32
    out.push_back({m + ".qweight", "I32", {cols / 8, rows}});
    out.push_back({m + ".qzeros", "I32", {cols / 32, rows / 8}});
    out.push_back({m + ".scales", "F16", {cols / 32, rows}});
    out.push_back({m + ".g_idx", "I32", {cols}});
    break;
  case Stored::fp8: // ModelOpt FP8: per-tensor scales
    out.push_back({m + ".weight", "F8_E4M3", {rows, cols}});
    out.push_back({m + ".weight_scale", "F32", {}});
    out.push_back({m + ".input_scale", "F32", {}});
    break;
  case Stored::nvfp4: // ModelOpt NVFP4: two values a byte, an F8_E4M3 scale per 16
    out.push_back({m + ".weight", "U8", {rows, cols / 2}});
    out.push_back({m + ".weight_scale", "F8_E4M3", {rows, cols / 16}});
    out.push_back({m + ".weight_scale_2", "F32", {}});
    out.push_back({m + ".input_scale", "F32", {}});
    break;
  }
}

class SglangRulesTest : public test::CheckpointCliTest {
public:
  SglangRulesTest() { m_engine = "sglang@main"; }

protected:
  // config.json: the VLM with one MTP layer and `quant` as its quantization_config.
  void write(const Storage& s, const std::string& quant) {
    const auto stored = [&](const std::string& m, Stored dflt) {
      const auto it = s.except.find(m);
      return it == s.except.end() ? dflt : it->second;
    };
    const auto attention = [&](std::vector<TensorSpec>& t, const std::string& p, Stored dflt) {
      t.push_back({p + ".input_layernorm.weight", "BF16", {64}});
      for (const auto& [name, rows, cols] : {std::tuple{"self_attn.q_proj", 128, 64},
                                             {"self_attn.k_proj", 32, 64},
                                             {"self_attn.v_proj", 32, 64},
                                             {"self_attn.o_proj", 64, 64},
                                             {"mlp.gate_proj", 128, 64},
                                             {"mlp.up_proj", 128, 64},
                                             {"mlp.down_proj", 64, 128}}) {
        const std::string m = p + "." + name;
        linear(t, stored(m, dflt), m, uint64_t(rows), uint64_t(cols));
      }
    };
    synth::CheckpointSpec spec;
    spec.config_json = "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
                       "  \"text_config\": {\"mtp_num_hidden_layers\": 1},\n"
                       "  \"quantization_config\": " +
                       quant + "\n}\n";
    synth::ShardSpec main{"model.safetensors", {}, true};
    auto& t = main.tensors;
    t.push_back({"model.language_model.embed_tokens.weight", "BF16", {256, 64}});
    attention(t, "model.language_model.layers.0", s.main);
    t.push_back({"model.language_model.norm.weight", "BF16", {64}});
    const std::string v = "model.visual.blocks.0.attn.proj";
    linear(t, stored(v, s.vision), v, 64, 64);
    linear(t, stored("lm_head", Stored::bf16), "lm_head", 256, 64);
    linear(t, stored("mtp.fc", s.head), "mtp.fc", 64, 128);
    t.push_back({"mtp.norm.weight", "BF16", {64}});
    attention(t, "mtp.layers.0", s.head);
    spec.shards.push_back(std::move(main));
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
  nlohmann::ordered_json quant() {
    return nlohmann::ordered_json::parse(read("config.json"))["quantization_config"];
  }
};

std::string auto_round(const std::string& members) {
  return "{\"quant_method\": \"auto-round\", \"bits\": 4, \"group_size\": 32, \"sym\": true, "
         "\"data_type\": \"int\", \"packing_format\": \"auto_round:auto_gptq\"" +
         members + "}";
}

// What SGLang makes of the BF16 draft under a config that names none of it: quantized, its
// qkv_proj and gate_up_proj looked up by the fused names (no packed mapping for Qwen3.5).
constexpr const char* k_draft_quantized =
    "  fixable     mtp.layers.0: 7 modules stored BF16 but quantized (4 bits) by the global bits "
    "(no block list); no extra_config key of 16 bits names them\n"
    "  breaks      SGLang: loads, and drops the stored weights silently\n"
    "  would patch config.json +9: mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
    "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
    "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj, mtp.layers.0.self_attn.qkv_proj, "
    "mtp.layers.0.mlp.gate_up_proj\n";

// The smoke test of the layout: everything the config quantizes is stored quantized (SGLang
// builds the vision tower at model.visual without a quant config since #18926, and mtp.fc is
// a plain nn.Linear).
TEST_F(SglangRulesTest, AutoRoundCleanLayout) {
  write({Stored::gptq, Stored::gptq, Stored::bf16, {{"mtp.fc", Stored::bf16}}}, auto_round(""));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
}

// Every version of SGLang at once (--engine sglang): since #18926 the vision tower is built at
// model.visual without a quant config; before it, at visual.* with one, where the exact key
// "model.visual.blocks.0.attn.proj" reaches nothing (routing.py get_layer_config looks the
// layer's own name up). The draft's qkv_proj and gate_up_proj are looked up by their fused names
// (no packed mapping for Qwen3.5). One patch names every layer as each version looks it up; an
// older version's layer no longer makes the MTP finding "not fixable".
TEST_F(SglangRulesTest, AutoRoundOnePatchForEveryVersion) {
  m_engine = "sglang";
  write({},
        auto_round(", \"extra_config\": {\"model.visual.blocks.0.attn.proj\": {\"bits\": 16, "
                   "\"data_type\": \"fp\"}}"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head    8 linears "
      "BF16, 2 norms in model.safetensors (mtp_num_hidden_layers: 1)\n" +
          std::string(test::k_sglang_qwen35_assumed_note) +
          "  lint        "
          "extra_config: 1 entry; 1 dead (no verdict changes without them, in any version judged), "
          "0 "
          "duplicates, 0 over-broad (a layer stored quantized is built dense by them); qpatch "
          "--prune "
          "DIR removes the dead and duplicate ones\n  fixable     model.visual.blocks.0.attn.proj: "
          "1 "
          "module stored BF16 but quantized (4 bits) by the global bits (no block list); no "
          "extra_config key of 16 bits names them (SGLang before 2026-02-17 only)\n  breaks      "
          "SGLang: loads, and drops the stored weights silently\n  fixable     mtp.layers.0: 7 "
          "modules "
          "stored BF16 but quantized (4 bits) by the global bits (no block list); no extra_config "
          "key "
          "of 16 bits names them\n  breaks      SGLang: loads, and drops the stored weights "
          "silently\n "
          " would patch config.json +10: visual.blocks.0.attn.proj, mtp.layers.0.self_attn.q_proj, "
          "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
          "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
          "mtp.layers.0.mlp.down_proj, mtp.layers.0.self_attn.qkv_proj, "
          "mtp.layers.0.mlp.gate_up_proj\n  status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(quant()["extra_config"].dump(),
            "{\"model.visual.blocks.0.attn.proj\":{\"bits\":16,\"data_type\":\"fp\"},\"visual."
            "blocks.0.attn.proj\":{\"bits\":16,\"data_type\":\"fp\"},\"mtp.layers.0.self_attn.q_"
            "proj\":{\"bits\":16,\"data_type\":\"fp\"},\"mtp.layers.0.self_attn.k_proj\":{\"bits\":"
            "16,\"data_type\":\"fp\"},\"mtp.layers.0.self_attn.v_proj\":{\"bits\":16,\"data_type\":"
            "\"fp\"},\"mtp.layers.0.self_attn.o_proj\":{\"bits\":16,\"data_type\":\"fp\"},\"mtp."
            "layers.0.mlp.gate_proj\":{\"bits\":16,\"data_type\":\"fp\"},\"mtp.layers.0.mlp.up_"
            "proj\":{\"bits\":16,\"data_type\":\"fp\"},\"mtp.layers.0.mlp.down_proj\":{\"bits\":16,"
            "\"data_type\":\"fp\"},\"mtp.layers.0.self_attn.qkv_proj\":{\"bits\":16,\"data_type\":"
            "\"fp\"},\"mtp.layers.0.mlp.gate_up_proj\":{\"bits\":16,\"data_type\":\"fp\"}}");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// routing.py get_config: a key with a REGEX_SPECIAL_CHARS character is a regex, tried with
// re.fullmatch (vLLM's INC tries re.search): "mtp\\.layers" matches no layer name whole.
TEST_F(SglangRulesTest, AutoRoundRegexKeysMatchTheWholeName) {
  write({}, auto_round(", \"extra_config\": {\"mtp\\\\.layers\": {\"bits\": 16}}"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: auto-round, judged for SGLang\n  mtp head    8 linears BF16, 2 norms in "
      "model.safetensors (mtp_num_hidden_layers: 1)\n  lint        extra_config: 1 entry; 1 dead "
      "(no verdict changes without them, in any version judged), 0 duplicates, 0 over-broad (a "
      "layer stored quantized is built dense by them); qpatch --prune DIR removes the dead and "
      "duplicate ones\n  fixable     mtp.layers.0: 7 modules stored BF16 but quantized (4 bits) by "
      "the global bits (no block list); no extra_config key of 16 bits names them\n  breaks      "
      "SGLang: loads, and drops the stored weights silently\n  would patch config.json +9: "
      "mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
      "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj, mtp.layers.0.self_attn.qkv_proj, "
      "mtp.layers.0.mlp.gate_up_proj\n  status      needs-patch\n  apply       qpatch DIR\n");
  write({}, auto_round(", \"extra_config\": {\"mtp\\\\.layers\\\\..*\": {\"bits\": 16}}"));
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// get_layer_config's first step: a layer named exactly by a key is resolved with
// quantized=True and the global defaults for what the key leaves out, whatever the block list.
TEST_F(SglangRulesTest, AutoRoundExactKeyQuantizesOutsideTheBlockList) {
  write({},
        auto_round(", \"block_name_to_quantize\": \"model.language_model.layers\", "
                   "\"extra_config\": {\"mtp.layers.0.mlp.down_proj\": {\"data_type\": "
                   "\"int\"}}"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: auto-round, judged for SGLang\n"
      "  mtp head    8 linears BF16, 2 norms in model.safetensors (mtp_num_hidden_layers: 1)\n"
      "  fixable     mtp.layers.0.mlp.down_proj: 1 module stored BF16 but quantized (4 bits) by "
      "extra_config[\"mtp.layers.0.mlp.down_proj\"]; no extra_config key of 16 bits names them\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  would patch config.json +1: mtp.layers.0.mlp.down_proj; -1: mtp.layers.0.mlp.down_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
}

// apply_gptq_quant_layer: GPTQConfig for a tuple Marlin does not take, whose __init__ takes
// 2/3/4/8 bits only.
TEST_F(SglangRulesTest, AutoRoundKernelRefusal) {
  write({},
        auto_round(", \"extra_config\": {\"model.language_model.layers.0.mlp.down_proj\": "
                   "{\"bits\": 5}}"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: auto-round, judged for SGLang\n"
      "  mtp head    8 linears BF16, 2 norms in model.safetensors (mtp_num_hidden_layers: 1)\n"
      "  not fixable model.language_model.layers.0.mlp.down_proj: 1 module are given by "
      "extra_config[\"model.language_model.layers.0.mlp.down_proj\"] a scheme the kernel serving "
      "it cannot take, and SGLang raises while it builds them (\"ValueError: Currently, only "
      "2/3/4/8-bit weight quantization is supported for GPTQ, but got 5 bits.\"): not fixable by a "
      "config patch\n"
      "  breaks      SGLang: start-up fails: it refuses the quantization config\n" +
          std::string(k_draft_quantized) +
          "  status      unfixable\n"
          "  why         qpatch explain DIR model.language_model.layers.0.mlp.down_proj\n");
}

std::string modelopt(const std::string& algo, const std::string& ignore) {
  return "{\"quant_method\": \"modelopt\", \"quant_algo\": \"" + algo + "\", " +
         (algo == "NVFP4" ? "\"group_size\": 16, " : "") + "\"ignore\": " + ignore + "}";
}

// ModelOptQuantConfig.is_layer_excluded: an entry is a pattern ("." literal, "*" any run)
// full-matched against the name and against each dot-part. "mtp" is a part of every draft name;
// "mtp.layers" is neither a whole name nor a part, but is_layer_skipped (quantization/utils.py,
// _module_path_match since #23467) reads it as a run of whole parts: at main it skips the draft.
TEST_F(SglangRulesTest, ModelOptExcludeMatchesTheWholeNameOrAPart) {
  write(main_as(Stored::fp8), modelopt("FP8", R"(["lm_head", "mtp"])"));
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  write(main_as(Stored::fp8), modelopt("FP8", R"(["lm_head", "mtp.layers"])"));
  EXPECT_EQ(run_qpatch({"--check"}).second,
            "DIR: modelopt, judged for SGLang\n  mtp head    8 linears BF16, 2 norms in "
            "model.safetensors (mtp_num_hidden_layers: 1)\n  lint        ignore: 2 entries; 1 dead "
            "(no verdict changes without them, in any version judged), 0 duplicates, 0 over-broad "
            "(a layer stored quantized is built dense by them); qpatch --prune DIR removes the "
            "dead and duplicate ones\n  status      clean\n");
  write(main_as(Stored::fp8), modelopt("FP8", R"(["lm_head", "mtp.layers*"])"));
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// lm_head is a ParallelLMHead, which ModelOptQuantConfig._get_quant_method never quantizes:
// a BF16 head needs no entry.
TEST_F(SglangRulesTest, ModelOptNeverQuantizesTheHead) {
  write(main_as(Stored::fp8), modelopt("FP8", R"(["mtp*"])"));
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// sglang#18937 (qwen3_5.py @005fa71, qwen3_5_mtp.py @008b79d): under NVFP4 the attention layers
// and the whole MTP draft are built without a quant config: a draft stored BF16 needs no entry,
// and attention stored NVFP4 cannot load whatever the config says.
TEST_F(SglangRulesTest, ModelOptNvfp4BuildsAttentionAndDraftDense) {
  write(main_as(Stored::nvfp4), modelopt("NVFP4", R"(["lm_head"])"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: modelopt, judged for SGLang\n"
      "  mtp head    8 linears BF16, 2 norms in model.safetensors (mtp_num_hidden_layers: 1)\n"
      "  lint        ignore: 1 entry; 1 dead (no verdict changes without them, in any version "
      "judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense by them); "
      "qpatch --prune DIR removes the dead and duplicate ones\n"
      "  not fixable model.language_model.layers.0.self_attn: 4 modules stored modelopt-nvfp4 but "
      "SGLang builds this layer dense: not fixable by a config patch\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
}

// ModelOptMixedPrecisionConfig (store 54490057226): a layer is quantized when not excluded and
// _resolve_quant_algo gives FP8 or NVFP4 (its name, its shards through the packed mapping, a
// key under it); any other algo builds it dense. _mtp_quant_config gives the draft no quant
// config: a BF16 draft needs no entry. The algo is resolved before the exclusion test, so
// shards of different algos raise even when excluded.
TEST_F(SglangRulesTest, ModelOptMixedPrecisionResolvesEachLayer) {
  const std::string l0 = "model.language_model.layers.0.";
  const auto mixed = [&](const std::string& down, const std::string& ignore) {
    std::string layers;
    for (const char* m : {"self_attn.q_proj",
                          "self_attn.k_proj",
                          "self_attn.v_proj",
                          "self_attn.o_proj",
                          "mlp.gate_proj",
                          "mlp.up_proj"}) {
      layers += "\"" + l0 + m + "\": {\"quant_algo\": \"NVFP4\"}, ";
    }
    return "{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\", "
           "\"group_size\": 16, \"ignore\": " +
           ignore + ", \"quantized_layers\": {" + layers + "\"" + l0 +
           "mlp.down_proj\": {\"quant_algo\": \"" + down + "\"}}}";
  };
  write(main_as(Stored::nvfp4), mixed("nvfp4", "[]"));
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  write(main_as(Stored::nvfp4), mixed("W4A16_AWQ", "[]"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: modelopt, judged for SGLang\n"
      "  mtp head    8 linears BF16, 2 norms in model.safetensors (mtp_num_hidden_layers: 1)\n"
      "  not fixable model.language_model.layers.0.mlp.down_proj: 1 module stored modelopt-nvfp4 "
      "but no quantized_layers entry gives them an algo SGLang builds (FP8, NVFP4): built dense "
      "(not fixable by a config patch)\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.mlp.down_proj\n");
  // vLLM main builds W4A16_NVFP4 too (#42566); SGLang does not.
  write(main_as(Stored::nvfp4), mixed("W4A16_NVFP4", "[\"lm_head\", \"mtp*\"]"));
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check"}).first, 1);
}

// ModelOptFp8Config.from_config: an algo without FP4 or FP8 is refused.
TEST_F(SglangRulesTest, ModelOptRefusesOtherAlgos) {
  write(main_as(Stored::fp8), modelopt("INT4_AWQ", R"(["lm_head", "mtp*"])"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: modelopt, judged for SGLang\n"
      "  mtp head    8 linears BF16, 2 norms in model.safetensors (mtp_num_hidden_layers: 1)\n"
      "  not fixable config.json /quantization_config: SGLang refuses this quantization config "
      "before it builds any layer: ValueError: ModelOptFp8Config only supports static FP8 "
      "quantization in SGLang. For FP4 quantization, use ModelOptFp4Config. Check the quantization "
      "config for your model's configuration.\n"
      "  breaks      SGLang: start-up fails: it refuses the quantization config: \"ValueError: "
      "ModelOptFp8Config only supports static FP8 quantization in SGLang. For FP4 quantization, "
      "use ModelOptFp4Config. Check the quantization config for your model's configuration.\"\n"
      "  status      unfixable\n");
}

} // namespace
} // namespace qpatch::cli
