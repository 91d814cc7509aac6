// SPDX-License-Identifier: Apache-2.0
// `--engine`: the same compressed-tensors checkpoint judged by vLLM, SGLang and transformers
// (engines.md §3.4-3.5). SGLang's Qwen3.5 draft builds mtp.fc as a plain nn.Linear and reads
// plain ignore entries as case-insensitive substrings; transformers never builds the MTP head.
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;

constexpr const char* k_linear = "[\n          \"Linear\"\n        ]";

class EnginesTest : public test::CheckpointCliTest {};

TEST_F(EnginesTest, PackedMtpFcCannotLoadInSglangOnly) {
  test::write_mini(dir(),
                   {Head::packed,
                    HeadFile::indexed_shard,
                    test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear)});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "transformers"}).first, 0);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for " + test::judged_for("Qwen3_5ForCausalLM") +
          "\n"
          "  mtp head    8 linears ct-pack-quantized, 4 norms in model_extra_tensors.safetensors "
          "(mtp_num_hidden_layers: 1)\n"
          "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
          "names "
          "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
          "  not fixable mtp.fc: 1 module stored ct-pack-quantized but SGLang builds this layer "
          "without a quant config: it cannot load these tensors; graft dense weights from the "
          "base model [sglang]\n"
          "  breaks      SGLang: loads, and drops the stored weights silently\n"
          "  status      unfixable\n"
          "  why         qpatch explain DIR mtp.fc\n");
}

TEST_F(EnginesTest, TransformersNeverLoadsTheHead) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear)});
  const auto [code, out] = run_qpatch({"--check", "--engine", "transformers"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(run_qpatch({"--check", "--engine", "sglang"}).first, 1);
}

TEST_F(EnginesTest, ShortPlainEntryIsASubstringInSglang) {
  // "mtp" is a no-op for vLLM (no layer is named "mtp") and skips the whole head in SGLang.
  test::write_mini(dir(),
                   {Head::packed,
                    HeadFile::indexed_shard,
                    test::ct_config_json("[\n      \"lm_head\",\n      \"mtp\"\n    ]", k_linear)});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm"}).first, 0);
  const auto [code, out] = run_qpatch({"--check", "--engine", "sglang"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for " +
          test::judged_for(engine::Engine::sglang, "Qwen3_5ForCausalLM") +
          "\n"
          "  mtp head    8 linears ct-pack-quantized, 4 norms in model_extra_tensors.safetensors "
          "(mtp_num_hidden_layers: 1)\n"
          "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
          "names "
          "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
          // SGLang's compressed-tensors gives a ParallelLMHead no quant method: "lm_head" decides
          // nothing there (--engine narrows what "dead" means to the engines named).
          "  lint        ignore: 2 entries; 1 dead (no verdict changes without them, in any "
          "version "
          "judged), 0 duplicates, 1 over-broad (a layer stored quantized is built dense by them); "
          "qpatch --prune DIR removes the dead and duplicate ones\n"
          "  not fixable mtp.fc: 1 module stored ct-pack-quantized but SGLang builds this layer "
          "without a quant config: it cannot load these tensors; graft dense weights from the "
          "base model\n"
          "  breaks      SGLang: loads, and drops the stored weights silently\n"
          "  fixable     mtp.layers.0: 7 modules stored ct-pack-quantized but made dense by "
          "plain ignore entries that name a parent module or part of a name (SGLang reads plain "
          "entries as case-insensitive substrings) (SGLang before 2026-07-29 only)\n"
          "  breaks      SGLang: loads, and drops the stored weights silently\n"
          "  would patch config.json -1: mtp\n"
          "  status      unfixable\n"
          "  why         qpatch explain DIR mtp.fc\n");
  // explain shows the rule each engine applies to the same module.
  const test::CliOutcome explained =
      test::run_cli({"explain", "DIR", "mtp.layers.0.mlp.down_proj"}, dir());
  EXPECT_EQ(explained.code, 1);
  EXPECT_EQ(
      explained.out,
      "mtp.layers.0.mlp.down_proj\n"
      "  stored       ct-pack-quantized I32 [64, 16] in model_extra_tensors.safetensors\n"
      "  layer        mtp.layers.0.mlp.down_proj (RowParallelLinear)\n"
      "  config       config.json /quantization_config (compressed-tensors), judged as " +
          test::traced_as("Qwen3_5ForCausalLM") +
          " load it\n"
          "  engine       " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForCausalLM") +
          "\n"
          "  ignore       2 entries checked, none matches mtp.layers.0.mlp.down_proj\n"
          "  target       group_0 \"Linear\" matches class RowParallelLinear (case-insensitive "
          "substring)\n"
          "  verdict      quantized (target_class, group_0)\n"
          "  engine       " +
          test::traced_as(engine::Engine::sglang, "Qwen3_5ForCausalLM") +
          "\n"
          "  version      SGLang before 2026-07-29\n"
          "  ignore[1]    \"mtp\" matches mtp.layers.0.mlp.down_proj (case-insensitive "
          "substring)\n"
          "  targets      not consulted: ignore is checked first\n"
          "  verdict      dense (ignore_entry)\n"
          // #32736: a plain entry names the layer or a dotted suffix of it, not a parent.
          "  version      SGLang from 2026-07-29\n"
          "  ignore       2 entries checked, none matches mtp.layers.0.mlp.down_proj\n"
          "  target       group_0 \"Linear\" matches class RowParallelLinear (case-insensitive "
          "substring)\n"
          "  verdict      quantized (target_class, group_0)\n"
          "  engine       transformers + compressed-tensors ac8e2ba\n"
          "  not built    mtp.layers.0.mlp.down_proj: transformers never builds the MTP head\n"
          "  on disk      quantized (ct-pack-quantized)\n"
          "  status       inconsistent for sglang: run `qpatch --dry-run DIR` to see the fix\n");
}

// Targets written with vLLM's fused names: the compressed-tensors library on the transformers
// path is given no fused mapping (apply.py calls match_named_modules without `fused`, ac8e2ba8),
// so they reach none of the unfused q/k/v and gate/up modules there: stored packed, built dense.
TEST_F(EnginesTest, FusedNameTargetsReachNoTransformersModule) {
  test::write_mini(dir(),
                   {Head::absent,
                    HeadFile::indexed_shard,
                    test::without_head_declaration(
                        test::ct_config_json("[\n      \"lm_head\"\n    ]",
                                             "[\n          \"re:.*qkv_proj$\",\n"
                                             "          \"re:.*o_proj$\",\n"
                                             "          \"re:.*gate_up_proj$\",\n"
                                             "          \"re:.*down_proj$\"\n        ]"))});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm"}).first, 0);
  const auto [code, out] = run_qpatch({"--check", "--engine", "transformers"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for transformers (no one release: files of several "
      "commits)\n"
      "  not fixable model.language_model.layers.0: 5 modules stored ct-pack-quantized but no "
      "target matches them, so transformers builds them dense: not fixable by a config patch "
      "(qpatch does not invent targets)\n"
      "  breaks      transformers: loads with \"Some weights ... were not used\" and "
      "initialises the layer at random\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
}

TEST_F(EnginesTest, UnknownEngineIsAUsageError) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear)});
  const auto [code, out] = run_qpatch({"--check", "--engine", "tgi"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--engine"), std::string::npos) << out;
}

} // namespace
} // namespace qpatch::cli
