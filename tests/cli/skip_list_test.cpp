// SPDX-License-Identifier: Apache-2.0
// AWQ `modules_to_not_convert` (substring) and FP8 `ignored_layers`/`modules_to_not_convert`
// (exact) under vLLM's rules, and AWQ under SGLang's (fused names only, no derived list).
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/engine/skip_list_rules.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;

using test::required_fields;

std::string config_json(const std::string& method, const std::string& fields) {
  return "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
         "  \"quantization_config\": {\n" +
         required_fields(method, fields) + fields + "    \"quant_method\": \"" + method +
         "\"\n  }\n}\n";
}

class SkipListTest : public test::CheckpointCliTest {
public:
  // The newest version of each engine; what earlier versions do differently:
  // engine_versions_test.cpp.
  SkipListTest() { m_engine = "vllm@main,sglang@main,transformers"; }

protected:
  std::string list(const std::string& key) {
    return nlohmann::ordered_json::parse(read("config.json"))["quantization_config"][key].dump();
  }
  // ModelOpt: transformers, named, refuses every ModelOpt config (it has no quantizer for it;
  // transformers_diff_regressions_test.cpp), which would hide the rules these tests are about.
  void without_transformers() { m_engine = "vllm@main,sglang@main"; }
};

TEST_F(SkipListTest, Fp8DenseHeadGetsExactNames) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    config_json("fp8",
                                "    \"modules_to_not_convert\": [\n"
                                "      \"lm_head\"\n    ],\n"),
                    Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: fp8, judged for vLLM (main, 2026-08-17), SGLang and transformers (no one "
            "release: files of several commits)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
            "names (the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
            "  fixable     mtp: 8 modules stored BF16 but quantized by fp8 (not in "
            "modules_to_not_convert) [vllm, sglang]\n"
            "  breaks      vLLM: loads without an error: the stored BF16 weight of mtp.fc is cast "
            "into its FP8 `weight` parameter and the weight scale is never loaded, so the layer "
            "computes garbage and the draft's acceptance collapses; SGLang: "
            "loads, and drops the stored weights silently\n"
            "  would patch config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
            "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
            "mtp.layers.0.mlp.down_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  const test::CliOutcome explained = test::run_cli({"explain", "DIR", "mtp.fc"}, dir());
  EXPECT_EQ(explained.code, 1);
  EXPECT_EQ(
      explained.out + explained.err,
      "mtp.fc\n"
      "  stored       dense BF16 [64, 128] in model_extra_tensors.safetensors\n"
      "  layer        mtp.fc (ColumnParallelLinear)\n"
      "  config       config.json /quantization_config (fp8), judged as " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "fp8") + ", " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM", "fp8") + " and " +
          test::traced_as(engine::Engine::transformers, "Qwen3_5ForCausalLM", "fp8") +
          " load it\n" + "  engine       " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "fp8") + "\n" +
          "  modules_to_not_convert 1 entry checked, none equals mtp.fc\n"
          "  verdict      quantized (target_class)\n"
          "  engine       " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM", "fp8") + "\n" +
          "  built        with no quant config (Linear): always dense\n"
          "  verdict      dense (built_dense)\n"
          "  engine       " +
          test::traced_as(engine::Engine::transformers, "Qwen3_5ForCausalLM", "fp8") +
          "\n  not built    mtp.fc: transformers never builds the MTP head\n"
          "  on disk      dense (BF16)\n"
          "  status       inconsistent for vllm: run `qpatch --dry-run DIR` to see the fix\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(
      list("modules_to_not_convert"),
      R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.q_proj","mtp.layers.0.self_attn.k_proj",)"
      R"("mtp.layers.0.self_attn.v_proj","mtp.layers.0.self_attn.o_proj",)"
      R"("mtp.layers.0.mlp.gate_proj","mtp.layers.0.mlp.up_proj","mtp.layers.0.mlp.down_proj"])");
}

TEST_F(SkipListTest, Fp8EmptyIgnoredLayersFallsBackToModulesToNotConvert) {
  test::write_mini(dir(),
                   {Head::packed_fc_dense,
                    HeadFile::indexed_shard,
                    config_json("fp8",
                                "    \"ignored_layers\": [],\n"
                                "    \"modules_to_not_convert\": [\n"
                                "      \"mtp.fc\"\n    ],\n"),
                    Packing::fp8});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
  // transformers reads modules_to_not_convert first: a given list without "lm_head" builds the
  // BF16 head FP8 (FineGrainedFP8Config, get_modules_to_not_convert). SGLang reads the empty
  // ignored_layers (the first key present), so it gets the same list.
  EXPECT_EQ(run_qpatch({"--check"}).first, 1);
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("modules_to_not_convert"), R"(["mtp.fc","lm_head"])");
  EXPECT_EQ(list("ignored_layers"), R"(["mtp.fc","lm_head"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

TEST_F(SkipListTest, AwqListAbsentIsDerivedByVllmButNotBySglang) {
  test::write_mini(dir(),
                   {Head::dense, HeadFile::indexed_shard, config_json("awq", ""), Packing::awq});
  // vLLM derives the absent list from the headers (every all-float module): nothing to do.
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm"}).first, 0);
  // SGLang derives nothing: the dense head would be quantized. Writing the key switches vLLM's
  // derivation off, so the list written is the derived one, plus the fused names SGLang tests.
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: awq, judged for vLLM (main, 2026-08-17), SGLang and transformers (no one release: "
      "files of several commits)\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      // SGLang's draft builds fc as a plain nn.Linear: dense whatever the list says.
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  fixable     mtp.layers.0: 7 modules stored BF16 but quantized by awq (not in "
      "modules_to_not_convert) [sglang]\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  would patch config.json +20: model.language_model.embed_tokens, "
      "model.language_model.layers.0.input_layernorm, "
      "model.language_model.layers.0.self_attn.q_norm, "
      "model.language_model.layers.0.post_attention_layernorm, model.language_model.norm, "
      "lm_head, mtp.fc, mtp.norm, mtp.layers.0.input_layernorm, "
      "mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, "
      "mtp.layers.0.self_attn.q_norm, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
      "mtp.layers.0.mlp.down_proj, mtp.layers.0.post_attention_layernorm, "
      "mtp.layers.0.self_attn.qkv_proj, mtp.layers.0.mlp.gate_up_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  // Why SGLang quantizes the head's fused attention, and why vLLM does not.
  const test::CliOutcome explained =
      test::run_cli({"explain", "DIR", "mtp.layers.0.self_attn.q_proj"}, dir());
  EXPECT_EQ(explained.code, 1);
  EXPECT_EQ(
      explained.out + explained.err,
      "mtp.layers.0.self_attn.q_proj\n"
      "  stored       dense BF16 [128, 64] in model_extra_tensors.safetensors\n"
      "  layer        mtp.layers.0.self_attn.qkv_proj (QKVParallelLinear), 3 modules\n"
      "  config       config.json /quantization_config (awq), judged as " +
          test::traced_as("Qwen3_5ForCausalLM", "awq") + " load it\n" +
          "  modules_to_not_convert absent: vLLM derives 18 entries from the headers (every "
          "all-float module); SGLang and transformers derive none\n"
          "  engine       " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "awq") + "\n" +
          "  modules_to_not_convert 18 entries checked, none matches "
          "mtp.layers.0.self_attn.qkv_proj\n"
          "  modules_to_not_convert[9] \"mtp.layers.0.self_attn.q_proj\" is contained in "
          "mtp.layers.0.self_attn.q_proj\n"
          "  modules_to_not_convert[10] \"mtp.layers.0.self_attn.k_proj\" is contained in "
          "mtp.layers.0.self_attn.k_proj\n"
          "  modules_to_not_convert[11] \"mtp.layers.0.self_attn.v_proj\" is contained in "
          "mtp.layers.0.self_attn.v_proj\n"
          "  verdict      dense (ignore_entry)\n"
          "  engine       " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM", "awq") + "\n" +
          "  modules_to_not_convert 0 entries checked, none matches "
          "mtp.layers.0.self_attn.qkv_proj\n"
          "  verdict      quantized (target_class)\n"
          "  engine       " +
          test::traced_as(engine::Engine::transformers, "Qwen3_5ForCausalLM", "awq") +
          "\n  not built    mtp.layers.0.self_attn.q_proj: transformers never builds the MTP head\n"
          "  on disk      dense (BF16)\n"
          "  status       inconsistent for sglang: run `qpatch --dry-run DIR` to see the fix\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  const test::CliOutcome after =
      test::run_cli({"explain", "DIR", "mtp.layers.0.self_attn.q_proj"}, dir());
  EXPECT_EQ(after.code, 0);
  EXPECT_EQ(
      after.out + after.err,
      "mtp.layers.0.self_attn.q_proj\n"
      "  stored       dense BF16 [128, 64] in model_extra_tensors.safetensors\n"
      "  layer        mtp.layers.0.self_attn.qkv_proj (QKVParallelLinear), 3 modules\n"
      "  config       config.json /quantization_config (awq), judged as " +
          test::traced_as("Qwen3_5ForCausalLM", "awq") + " load it\n" + "  engine       " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "awq") + "\n" +
          "  modules_to_not_convert[18] \"mtp.layers.0.self_attn.qkv_proj\" is contained in "
          "mtp.layers.0.self_attn.qkv_proj\n"
          "  verdict      dense (ignore_entry)\n"
          "  engine       " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM", "awq") + "\n" +
          "  modules_to_not_convert[18] \"mtp.layers.0.self_attn.qkv_proj\" is contained in "
          "mtp.layers.0.self_attn.qkv_proj\n"
          "  verdict      dense (ignore_entry)\n"
          "  engine       " +
          test::traced_as(engine::Engine::transformers, "Qwen3_5ForCausalLM", "awq") +
          "\n  not built    mtp.layers.0.self_attn.q_proj: transformers never builds the MTP head\n"
          "  on disk      dense (BF16)\n"
          "  status       consistent: every engine builds what is stored\n");
  EXPECT_EQ(
      list("modules_to_not_convert"),
      R"(["model.language_model.embed_tokens","model.language_model.layers.0.input_layernorm",)"
      R"("model.language_model.layers.0.self_attn.q_norm",)"
      R"("model.language_model.layers.0.post_attention_layernorm","model.language_model.norm",)"
      R"("lm_head","mtp.fc","mtp.norm","mtp.layers.0.input_layernorm",)"
      R"("mtp.layers.0.self_attn.q_proj","mtp.layers.0.self_attn.k_proj",)"
      R"("mtp.layers.0.self_attn.v_proj","mtp.layers.0.self_attn.o_proj",)"
      R"("mtp.layers.0.self_attn.q_norm","mtp.layers.0.mlp.gate_proj","mtp.layers.0.mlp.up_proj",)"
      R"("mtp.layers.0.mlp.down_proj","mtp.layers.0.post_attention_layernorm",)"
      R"("mtp.layers.0.self_attn.qkv_proj","mtp.layers.0.mlp.gate_up_proj"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "sglang"}).first, 0);
}

// Each head a real checkpoint ships (dense, projections packed with a dense fc, fully packed)
// under a list that names only lm_head: the exact list after the fix, and a clean second check.
struct HeadCase {
  const char* method;
  const char* key;
  Packing packing;
  Head head;
  int check_code;
  const char* written; // the list after `qpatch DIR`
};

class SkipListHeadTest : public SkipListTest, public ::testing::WithParamInterface<HeadCase> {};

TEST_P(SkipListHeadTest, FixLeavesEveryEngineClean) {
  const HeadCase& c = GetParam();
  if (std::string(c.method) == "modelopt") {
    without_transformers();
  }
  if (c.head == Head::packed) {
    // SGLang's draft builds mtp.fc as a plain nn.Linear: a packed fc cannot load there
    // (AwqPackedFcIsNotFixableForSglang), ModelOpt's too now that SGLang's rules judge it.
    m_engine = std::string(c.method) == "modelopt" ? "vllm@main" : "vllm@main,transformers";
  }
  test::write_mini(
      dir(),
      {c.head,
       HeadFile::indexed_shard,
       config_json(c.method, std::string("    \"") + c.key + "\": [\n      \"lm_head\"\n    ],\n"),
       c.packing});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, c.check_code) << out;
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list(c.key), c.written);
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// A packed mtp.fc cannot load in SGLang, whose draft builds fc as a plain nn.Linear: no list
// changes that (graft dense weights), and vLLM loads it as it is.
TEST_F(SkipListTest, AwqPackedFcIsNotFixableForSglang) {
  test::write_mini(
      dir(),
      {Head::packed,
       HeadFile::indexed_shard,
       config_json("awq", "    \"modules_to_not_convert\": [\n      \"lm_head\"\n    ],\n"),
       Packing::awq});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm"}).first, 0);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: awq, judged for vLLM (main, 2026-08-17), SGLang and transformers (no one release: "
      "files of several commits)\n"
      "  mtp head    8 linears awq, 4 norms in model_extra_tensors.safetensors\n"
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  not fixable mtp.fc: 1 module stored awq but SGLang builds this layer dense: not "
      "fixable by a config patch [sglang]\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR mtp.fc\n");
}

std::string head_case_name(const ::testing::TestParamInfo<HeadCase>& param) {
  static const char* const k_heads[] = {"dense", "packed", "packed_fc_dense", "absent"};
  return std::string(param.param.method) + "_" + k_heads[static_cast<int>(param.param.head)];
}

INSTANTIATE_TEST_SUITE_P(
    Heads,
    SkipListHeadTest,
    ::testing::Values(
        HeadCase{"awq",
                 "modules_to_not_convert",
                 Packing::awq,
                 Head::dense,
                 1,
                 // vLLM tests the shards, SGLang the fused names: the list carries both.
                 R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.q_proj",)"
                 R"("mtp.layers.0.self_attn.k_proj","mtp.layers.0.self_attn.v_proj",)"
                 R"("mtp.layers.0.self_attn.qkv_proj","mtp.layers.0.self_attn.o_proj",)"
                 R"("mtp.layers.0.mlp.gate_proj","mtp.layers.0.mlp.up_proj",)"
                 R"("mtp.layers.0.mlp.gate_up_proj","mtp.layers.0.mlp.down_proj"])"},
        HeadCase{"awq",
                 "modules_to_not_convert",
                 Packing::awq,
                 Head::packed_fc_dense,
                 1,
                 R"(["lm_head","mtp.fc"])"},
        HeadCase{"bitsandbytes",
                 "llm_int8_skip_modules",
                 Packing::bnb_4bit,
                 Head::dense,
                 1,
                 // bitsandbytes tests a fused layer by its fused name.
                 R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.qkv_proj",)"
                 R"("mtp.layers.0.self_attn.o_proj","mtp.layers.0.mlp.gate_up_proj",)"
                 R"("mtp.layers.0.mlp.down_proj"])"},
        HeadCase{"bitsandbytes",
                 "llm_int8_skip_modules",
                 Packing::bnb_4bit,
                 Head::packed_fc_dense,
                 1,
                 R"(["lm_head","mtp.fc"])"},
        HeadCase{"bitsandbytes",
                 "llm_int8_skip_modules",
                 Packing::bnb_4bit,
                 Head::packed,
                 0,
                 R"(["lm_head"])"},
        HeadCase{"fp8",
                 "ignored_layers",
                 Packing::fp8,
                 Head::dense,
                 1,
                 R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.q_proj",)"
                 R"("mtp.layers.0.self_attn.k_proj","mtp.layers.0.self_attn.v_proj",)"
                 R"("mtp.layers.0.self_attn.o_proj","mtp.layers.0.mlp.gate_proj",)"
                 R"("mtp.layers.0.mlp.up_proj","mtp.layers.0.mlp.down_proj"])"},
        HeadCase{"fp8",
                 "ignored_layers",
                 Packing::fp8,
                 Head::packed_fc_dense,
                 1,
                 R"(["lm_head","mtp.fc"])"},
        HeadCase{"fp8", "ignored_layers", Packing::fp8, Head::packed, 0, R"(["lm_head"])"},
        HeadCase{"modelopt",
                 "ignore",
                 Packing::fp8,
                 Head::dense,
                 1,
                 R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.q_proj",)"
                 R"("mtp.layers.0.self_attn.k_proj","mtp.layers.0.self_attn.v_proj",)"
                 R"("mtp.layers.0.self_attn.o_proj","mtp.layers.0.mlp.gate_proj",)"
                 R"("mtp.layers.0.mlp.up_proj","mtp.layers.0.mlp.down_proj"])"},
        HeadCase{"modelopt",
                 "ignore",
                 Packing::fp8,
                 Head::packed_fc_dense,
                 1,
                 R"(["lm_head","mtp.fc"])"},
        HeadCase{"modelopt", "ignore", Packing::fp8, Head::packed, 0, R"(["lm_head"])"}),
    head_case_name);

TEST_F(SkipListTest, AwqSubstringEntryOverAPackedHeadIsNarrowed) {
  // "mtp" skips every MTP layer by substring, but the head's projections are packed.
  test::write_mini(dir(),
                   {Head::packed_fc_dense,
                    HeadFile::indexed_shard,
                    config_json("awq",
                                "    \"modules_to_not_convert\": [\n"
                                "      \"lm_head\",\n      \"mtp\"\n    ],\n"),
                    Packing::awq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: awq, judged for vLLM (main, 2026-08-17), SGLang and transformers (no one release: "
      "files of several commits)\n"
      "  mtp head    1 linear BF16, 4 norms, 7 linears awq in model_extra_tensors.safetensors\n"
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  fixable     mtp.layers.0: 7 modules stored awq but made dense by modules_to_not_convert "
      "entry \"mtp\" [vllm, sglang]\n"
      "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'layers.0.self_attn.q_proj.qweight' in "
      "...\"; SGLang: loads, and drops the stored weights silently\n"
      "  would patch config.json +1: mtp.fc; -1: mtp\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(list("modules_to_not_convert"), R"(["lm_head","mtp.fc"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

} // namespace
} // namespace qpatch::cli

namespace qpatch::cli {
namespace {

TEST(Fnmatch, IsAWholeNameGlob) {
  EXPECT_TRUE(engine::fnmatch("mtp.layers.0.self_attn.qkv_proj", "mtp.layers.0*"));
  EXPECT_FALSE(engine::fnmatch("mtp.fc", "mtp.layers.0*"));
  EXPECT_TRUE(engine::fnmatch("mtp.fc", "mtp*"));
  EXPECT_TRUE(engine::fnmatch("model.layers.3.self_attn", "model.layers.*.self_attn"));
  EXPECT_TRUE(engine::fnmatch("a.b", "a?b"));
  EXPECT_TRUE(engine::fnmatch("layer7", "layer[0-9]"));
  EXPECT_FALSE(engine::fnmatch("layer7", "layer[!0-9]"));
  EXPECT_FALSE(engine::fnmatch("mtp.fc.x", "mtp.fc"));
}

constexpr const char* k_hf_quant = R"({
  "producer": {"name": "modelopt", "version": "0.44.0"},
  "quantization": {
    "quant_algo": "ALGO",
    "exclude_modules": ["lm_head", "mtp.layers.0*"]
  }
}
)";

std::string hf_quant(const std::string& algo) {
  std::string text = k_hf_quant;
  text.replace(text.find("ALGO"), 4, algo);
  return text;
}

TEST_F(SkipListTest, ModelOptGlobMissesMtpFcAndBothCopiesAreFixed) {
  // vLLM's ModelOpt rules (SGLang's: skip_list_rules.cpp, tools/sglang_diff).
  m_engine = "vllm@main";
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    config_json("modelopt",
                                "    \"ignore\": [\n      \"lm_head\",\n"
                                "      \"mtp.layers.0*\"\n    ],\n"
                                "    \"quant_algo\": \"FP8\",\n"),
                    Packing::fp8});
  write("hf_quant_config.json", hf_quant("FP8"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: modelopt, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     mtp.fc: 1 module stored BF16 but quantized by modelopt (not in ignore)\n"
            "  breaks      vLLM: loads without an error: the stored BF16 weight of mtp.fc is cast "
            "into its FP8 `weight` parameter and the weight scale is never loaded, so the layer "
            "computes garbage and the draft's acceptance collapses\n"
            "  would patch config.json +1: mtp.fc\n"
            "  would patch hf_quant_config.json +1: mtp.fc\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(list("ignore"), R"(["lm_head","mtp.layers.0*","mtp.fc"])");
  EXPECT_EQ(read("hf_quant_config.json"),
            "{\n  \"producer\": {\"name\": \"modelopt\", \"version\": \"0.44.0\"},\n"
            "  \"quantization\": {\n    \"quant_algo\": \"FP8\",\n"
            "    \"exclude_modules\": [\"lm_head\", \"mtp.layers.0*\", \"mtp.fc\"]\n  }\n}\n");
}

// ModelOpt MIXED_PRECISION (the real Qwen3.6-35B NVFP4 recipe: exclude_modules ["mtp*",
// "mtp.layers.0*"], per-layer quantized_layers): a layer no quantized_layers entry names is built
// dense, so the "mtp.layers.0*" glob trap only bites a head the recipe lists.
TEST_F(SkipListTest, ModelOptMixedPrecisionQuantizesOnlyListedLayers) {
  // vLLM's ModelOpt rules (SGLang's: skip_list_rules.cpp, tools/sglang_diff).
  m_engine = "vllm@main";
  const std::string main_layers =
      "      \"model.language_model.layers.0.self_attn.q_proj\": {\"quant_algo\": \"FP8\"},\n"
      "      \"model.language_model.layers.0.self_attn.k_proj\": {\"quant_algo\": \"FP8\"},\n"
      "      \"model.language_model.layers.0.self_attn.v_proj\": {\"quant_algo\": \"FP8\"},\n"
      "      \"model.language_model.layers.0.self_attn.o_proj\": {\"quant_algo\": \"FP8\"},\n"
      "      \"model.language_model.layers.0.mlp.gate_proj\": {\"quant_algo\": \"FP8\"},\n"
      "      \"model.language_model.layers.0.mlp.up_proj\": {\"quant_algo\": \"FP8\"},\n"
      "      \"model.language_model.layers.0.mlp.down_proj\": {\"quant_algo\": \"FP8\"}";
  const auto config = [&](const std::string& extra) {
    return config_json("modelopt",
                       "    \"ignore\": [\n      \"mtp.layers.0*\"\n    ],\n"
                       "    \"quant_algo\": \"MIXED_PRECISION\",\n"
                       "    \"quantized_layers\": {\n" +
                           main_layers + extra + "\n    },\n");
  };
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config(""), Packing::fp8});
  const auto [clean_code, clean_out] = run_qpatch({"--check"});
  EXPECT_EQ(clean_code, 0) << clean_out;
  // The recipe lists mtp.fc, but the head on disk is BF16 and the glob does not cover mtp.fc.
  write("config.json",
        config(",\n      \"mtp.fc\": {\"quant_algo\": \"W4A16_NVFP4\", \"group_size\": 16}"));
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: modelopt, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     mtp.fc: 1 module stored BF16 but quantized by their quantized_layers "
            "entry (W4A16_NVFP4) (not in ignore)\n"
            "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
            "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n"
            "  would patch config.json +1: mtp.fc\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  const test::CliOutcome explained =
      test::run_cli({"explain", "DIR", "mtp.fc", "--engine", "vllm"}, dir());
  EXPECT_EQ(
      explained.out + explained.err,
      "mtp.fc\n"
      "  stored       dense BF16 [64, 128] in model_extra_tensors.safetensors\n"
      "  layer        mtp.fc (ColumnParallelLinear)\n"
      "  config       config.json /quantization_config (modelopt), judged as " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM", "modelopt") + " loads it\n" +
          "  ignore       1 entry checked, none matches mtp.fc\n"
          "  quantized_layers names mtp.fc (W4A16_NVFP4)\n"
          "  verdict      quantized (target_name)\n"
          "  on disk      dense (BF16)\n"
          "  status       inconsistent for vllm: run `qpatch --dry-run DIR` to see the fix\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(list("ignore"), R"(["mtp.layers.0*","mtp.fc"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

TEST_F(SkipListTest, ModelOptMixedPrecisionPackedButUnlistedIsNotFixable) {
  // vLLM's ModelOpt rules (SGLang's: skip_list_rules.cpp, tools/sglang_diff).
  m_engine = "vllm@main";
  test::write_mini(dir(),
                   {Head::packed,
                    HeadFile::indexed_shard,
                    config_json("modelopt",
                                "    \"ignore\": [],\n"
                                "    \"quant_algo\": \"MIXED_PRECISION\",\n"
                                "    \"quantized_layers\": {\n"
                                "      \"mtp.fc\": {\"quant_algo\": \"FP8\"}\n    },\n"),
                    Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  // Only mtp.fc is listed: every other packed layer, main model and head, is built dense.
  EXPECT_EQ(out,
            "DIR: modelopt, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears fp8-block, 4 norms in model_extra_tensors.safetensors\n"
            "  not fixable m: 14 modules stored fp8-block but no quantized_layers entry gives "
            "them an algo vLLM builds (FP8, NVFP4, W4A16_NVFP4, MXFP8): built dense (not "
            "fixable by a config patch)\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'model.language_model.layers.0.self_attn.q_proj.weight_scale' in ...\"\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
}

TEST_F(SkipListTest, ModelOptNvfp4BuildsMtpFcDenseOnQwenDrafts) {
  without_transformers();
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    config_json("modelopt", "    \"quant_algo\": \"NVFP4\",\n"),
                    Packing::fp8});
  write("hf_quant_config.json", hf_quant("NVFP4"));
  // config.json has no list: vLLM reads config.json's quantization_config, which excludes
  // nothing; mtp.layers.0 and the ParallelLMHead (quantized by ModelOpt like a Linear,
  // modelopt.py get_quant_method) are quantized by it, mtp.fc built dense.
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("  fixable     8 modules stored BF16 but quantized by modelopt "
                     "(not in ignore)\n"),
            std::string::npos)
      << out;
  // mtp.fc is dense on disk and built dense: it is neither a finding nor part of the patch.
  EXPECT_EQ(out.find("mtp.fc"), std::string::npos) << out;
}

// bitsandbytes: an entry skips a layer when it equals one dot-component or a dotted prefix of
// the layer's (fused) name, so "mtp" covers the whole head and a short "fc" would too.
TEST(BitsandbytesMatcher, ComponentsAndDottedPrefixes) {
  const engine::ModelInfo model = engine::model_info_for("Qwen3_5ForCausalLM");
  const engine::SkipListRules list(
      engine::SkipListMethod::bitsandbytes, {"mtp", "model.layers.1", "out_proj"}, model);
  EXPECT_EQ(list.skipping_entry("mtp.layers.0.self_attn.qkv_proj"), std::optional<size_t>(0));
  EXPECT_EQ(list.skipping_entry("model.layers.1.mlp.down_proj"), std::optional<size_t>(1));
  EXPECT_EQ(list.skipping_entry("model.layers.10.mlp.down_proj"), std::nullopt); // not "1."
  EXPECT_EQ(list.skipping_entry("model.layers.3.linear_attn.out_proj"), std::optional<size_t>(2));
  EXPECT_EQ(list.skipping_entry("model.layers.3.linear_attn.out_projx"), std::nullopt);
  EXPECT_EQ(list.skipping_entry("model.mtpx.fc"), std::nullopt);
}

TEST_F(SkipListTest, BitsandbytesDenseHeadGetsItsLayerNames) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    config_json("bitsandbytes",
                                "    \"llm_int8_skip_modules\": [\n"
                                "      \"lm_head\"\n    ],\n    \"load_in_4bit\": true,\n"),
                    Packing::bnb_4bit});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  // vLLM asks about fused layers by their fused names, which a dotted-prefix entry must equal.
  EXPECT_EQ(
      out,
      "DIR: bitsandbytes, judged for vLLM (main, 2026-08-17) with vllm-bnb-plugin, SGLang and "
      "transformers (no one release: files of several commits)\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  fixable     mtp: 8 modules stored BF16 but quantized by bitsandbytes (not in "
      "llm_int8_skip_modules) [vllm, sglang]\n"
      "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"; SGLang: loads, "
      "and drops the stored weights silently\n"
      "  would patch config.json +5: mtp.fc, mtp.layers.0.self_attn.qkv_proj, "
      "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_up_proj, mtp.layers.0.mlp.down_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(
      list("llm_int8_skip_modules"),
      R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.qkv_proj","mtp.layers.0.self_attn.o_proj",)"
      R"("mtp.layers.0.mlp.gate_up_proj","mtp.layers.0.mlp.down_proj"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// A sidecar carrying the same FP8 list is kept in step with config.json (which vLLM reads).
TEST_F(SkipListTest, Fp8SidecarIsKeptInStep) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    config_json("fp8",
                                "    \"modules_to_not_convert\": [\n"
                                "      \"lm_head\"\n    ],\n"),
                    Packing::fp8});
  write("quantization_config.json",
        "{\n  \"modules_to_not_convert\": [\n    \"lm_head\"\n  ],\n  \"quant_method\": "
        "\"fp8\"\n}\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(read("quantization_config.json"),
            "{\n  \"modules_to_not_convert\": [\n    \"lm_head\",\n    \"mtp.fc\",\n"
            "    \"mtp.layers.0.self_attn.q_proj\",\n    \"mtp.layers.0.self_attn.k_proj\",\n"
            "    \"mtp.layers.0.self_attn.v_proj\",\n    \"mtp.layers.0.self_attn.o_proj\",\n"
            "    \"mtp.layers.0.mlp.gate_proj\",\n    \"mtp.layers.0.mlp.up_proj\",\n"
            "    \"mtp.layers.0.mlp.down_proj\"\n  ],\n  \"quant_method\": \"fp8\"\n}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

} // namespace
} // namespace qpatch::cli
