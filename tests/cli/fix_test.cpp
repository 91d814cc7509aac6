// SPDX-License-Identifier: Apache-2.0
// `qpatch [--check|--dry-run] DIR` end to end on small checkpoints: every finding kind, the
// reverse trap, sidecars, the index, symlinks, and the properties (fix twice == fix once;
// --check and --dry-run never change a byte).
#include "run.hpp"
#include "support/builder.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;
using test::Head;
using test::HeadFile;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

class FixTest : public test::TempDirTest {
protected:
  Outcome run_qpatch(std::vector<std::string> args) {
    const test::CliOutcome outcome = test::run_cli(std::move(args), dir());
    return {outcome.code, outcome.out, outcome.err};
  }
  // Read-only runs must leave every byte, mode and link as it was.
  void expect_read_only(const std::vector<std::string>& args, int expected_code) {
    const auto before = test::snapshot_tree(dir());
    EXPECT_EQ(run_qpatch(args).code, expected_code);
    EXPECT_EQ(test::snapshot_tree(dir()), before);
  }
  // Fixing twice equals fixing once: same bytes, no diff, no new backup.
  void expect_idempotent() {
    const auto once = test::snapshot_tree(dir());
    const Outcome again = run_qpatch({"DIR"});
    EXPECT_EQ(again.code, 0) << again.out << again.err;
    EXPECT_EQ(test::snapshot_tree(dir()), once);
  }
  std::string ignore_of(const std::string& file = "config.json") {
    const auto doc = nlohmann::ordered_json::parse(read(file));
    const auto& config = file == "config.json" ? doc["quantization_config"] : doc;
    return config["ignore"].dump();
  }
};

constexpr const char* k_linear = "[\n          \"Linear\"\n        ]";

// `config` as the fix writes it for the mini checkpoint's dense head: the 8 MTP linears
// appended after "lm_head" in `ignore`, one per line.
std::string with_dense_head_ignored(std::string config) {
  config.replace(config.find("\"lm_head\"\n"),
                 10,
                 "\"lm_head\",\n      \"mtp.fc\",\n      \"mtp.layers.0.self_attn.q_proj\",\n"
                 "      \"mtp.layers.0.self_attn.k_proj\",\n"
                 "      \"mtp.layers.0.self_attn.v_proj\",\n"
                 "      \"mtp.layers.0.self_attn.o_proj\",\n"
                 "      \"mtp.layers.0.mlp.gate_proj\",\n      \"mtp.layers.0.mlp.up_proj\",\n"
                 "      \"mtp.layers.0.mlp.down_proj\"\n");
  return config;
}

TEST_F(FixTest, DenseHeadQuantizedByLinearGetsExactNames) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config});
  expect_read_only({"--check", "DIR"}, 1);
  expect_read_only({"--dry-run", "DIR"}, 1);
  const Outcome fixed = run_qpatch({"DIR"});
  EXPECT_EQ(fixed.code, 0);
  EXPECT_EQ(
      fixed.out,
      "DIR: compressed-tensors, judged for " + test::judged_for("Qwen3_5ForCausalLM") +
          "\n"
          "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors "
          "(mtp_num_hidden_layers: 1)\n"
          // SGLang's draft builds mtp.fc as a plain nn.Linear: only vLLM gets it wrong.
          "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
          "names "
          "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
          "  fixed       mtp.fc: 1 module stored BF16 but quantized by targets [\"Linear\"] "
          "(group_0, class name); not in ignore [vllm]\n"
          "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
          "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n"
          "  fixed       mtp.layers.0: 7 modules stored BF16 but quantized by targets "
          "[\"Linear\"] (group_0, class name); not in ignore [vllm, sglang]\n"
          "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
          "\"ValueError: There is no module or parameter named 'layers.0.self_attn.q_proj.weight' "
          "in ...\"; SGLang: loads, and drops the stored weights silently\n"
          "  patched     config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, "
          "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
          "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
          "mtp.layers.0.mlp.down_proj\n"
          "  backup      config.json.bak\n"
          "  status      patched\n"
          "  undo        qpatch restore DIR\n");
  const std::string expected = with_dense_head_ignored(config);
  EXPECT_EQ(read("config.json"), expected);
  EXPECT_EQ(read("config.json.bak"), config);
  expect_idempotent();
}

// Python's json reads NaN and Infinity as numbers, so a config.json holding them loads in every
// engine (issue 25): qpatch judges it and patches it, and those bytes stay as they were.
TEST_F(FixTest, PythonsNanAndInfinityAreReadAndKeptAsWritten) {
  std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  config.insert(config.find("  \"quantization_config\""),
                "  \"attn_logit_softcapping\": NaN,\n  \"max_window_layers\": Infinity,\n"
                "  \"min_value\": -Infinity,\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config});
  expect_read_only({"--check", "DIR"}, 1);
  EXPECT_EQ(run_qpatch({"-q", "DIR"}).code, 0);
  const std::string expected = with_dense_head_ignored(config);
  EXPECT_EQ(read("config.json"), expected);
  expect_idempotent();
}

TEST_F(FixTest, ReverseTrapBlanketRegexOverAQuantizedHead) {
  // The head was re-quantized but mtp.fc stayed dense; re:^mtp.* still covers everything.
  const std::string config =
      test::ct_config_json("[\n      \"lm_head\",\n      \"re:^mtp.*\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::packed_fc_dense, HeadFile::indexed_shard, config});
  const Outcome checked = run_qpatch({"--check", "DIR"});
  EXPECT_EQ(checked.code, 1);
  EXPECT_EQ(checked.out,
            "DIR: compressed-tensors, judged for " + test::judged_for("Qwen3_5ForCausalLM") +
                "\n"
                "  mtp head    1 linear BF16, 4 norms, 7 linears ct-pack-quantized in "
                "model_extra_tensors.safetensors (mtp_num_hidden_layers: 1)\n"
                "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under "
                "assumed names "
                "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
                "  fixable     mtp.layers.0: 7 modules stored ct-pack-quantized but made dense by "
                "ignore entry \"re:^mtp.*\" (ignore[1]) [vllm, sglang]\n"
                "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
                "\"ValueError: There is no module or parameter named "
                "'layers.0.self_attn.q_proj.weight_packed' in ...\"; SGLang: loads, and drops the "
                "stored weights silently\n"
                "  would patch config.json +1: mtp.fc; -1: re:^mtp.*\n"
                "  status      needs-patch\n"
                "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"DIR"}).code, 0);
  EXPECT_EQ(ignore_of(), R"(["lm_head","mtp.fc"])");
  expect_idempotent();
}

TEST_F(FixTest, FusedShardsListedApartAreJudgedTogether) {
  const std::string config = test::without_head_declaration(test::ct_config_json(
      "[\n      \"lm_head\",\n      \"model.language_model.layers.0.self_attn.k_proj\"\n    ]",
      k_linear));
  test::write_mini(dir(), {Head::absent, HeadFile::indexed_shard, config});
  const Outcome checked = run_qpatch({"--check", "DIR"});
  EXPECT_EQ(checked.code, 1);
  EXPECT_EQ(
      checked.out,
      "DIR: compressed-tensors, judged for " + test::judged_for("Qwen3_5ForCausalLM") +
          "\n"
          "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
          "names "
          "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
          "  fixable     model.language_model.layers.0.self_attn: 3 modules are judged as one "
          "layer "
          "(model.language_model.layers.0.self_attn.qkv_proj) but its shards disagree in the "
          "config; "
          "vLLM: ValueError: Found a different quantization schemes for ['q_proj', 'k_proj', "
          "'v_proj'] "
          "in model.layers.0.self_attn.qkv_proj. vLLM requires all to use the same scheme. (vLLM "
          "from 2026-08-06 (0.27 and newer) only) [vllm]\n"
          // Before #50355 the text-only class had no mapper: the checkpoint-named entry reached no
          // shard (model.layers.0...), so the shards agreed. SGLang asks about
          // model.layers.0.self_attn.k_proj, which the checkpoint-named entry
          // (model.language_model...) does not contain: its shards agree there.
          "  breaks      vLLM: start-up fails while building the fused layer (its shards must "
          "agree)\n"
          "  fixable     model.language_model.layers.0.self_attn.k_proj: 1 module stored "
          "ct-pack-quantized but made dense by ignore entry "
          "\"model.language_model.layers.0.self_attn.k_proj\" (ignore[1]) [transformers]\n"
          "  breaks      transformers: loads with \"Some weights ... were not used\" and "
          "initialises "
          "the layer at random\n"
          "  would patch config.json -1: model.language_model.layers.0.self_attn.k_proj\n"
          "  status      needs-patch\n"
          "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"DIR"}).code, 0);
  EXPECT_EQ(ignore_of(), R"(["lm_head"])");
}

TEST_F(FixTest, QuantizedButUntargetedIsNotFixable) {
  const std::string config = test::without_head_declaration(test::ct_config_json(
      "[\n      \"lm_head\"\n    ]", "[\n          \"re:.*mlp.*\"\n        ]"));
  test::write_mini(dir(), {Head::absent, HeadFile::indexed_shard, config});
  const auto before = test::snapshot_tree(dir());
  const Outcome outcome = run_qpatch({"DIR"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(
      outcome.out,
      "DIR: compressed-tensors, judged for " + test::judged_for("Qwen3_5ForCausalLM") +
          "\n"
          "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
          "names "
          "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
          "  not fixable model.language_model.layers.0.self_attn: 4 modules stored "
          "ct-pack-quantized but no target matches them, so vLLM builds them dense: not fixable "
          "by a config patch (qpatch does not invent targets) [vllm, transformers]\n"
          "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter named "
          "'model.language_model.layers.0.self_attn.q_proj.weight_packed' in ...\"; transformers: "
          "loads with \"Some weights ... were not used\" and initialises the layer at random\n"
          // SGLang's find_matched_target raises for a Linear no target matches (issue 22, 1).
          "  not fixable model.language_model.layers.0.self_attn: 4 modules stored "
          "ct-pack-quantized but no target matches them, and SGLang raises for that while it "
          "builds the model (\"ValueError: Unable to find matching target for ... in the "
          "compressed-tensors config.\") [sglang]\n"
          "  breaks      SGLang: start-up fails while it builds the model: \"ValueError: Unable to "
          "find matching target for ... in the compressed-tensors config.\"\n"
          "  status      unfixable\n"
          "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

TEST_F(FixTest, SidecarIsKeptInStepWithConfigJson) {
  const std::string config =
      test::without_head_declaration(test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear));
  test::write_mini(dir(), {Head::absent, HeadFile::indexed_shard, config});
  write("quantization_config.json",
        "{\n  \"config_groups\": {\n    \"group_0\": {\n      \"targets\": [\n        "
        "\"Linear\"\n      ]\n    }\n  },\n  \"ignore\": [\n    \"lm_head\",\n    "
        "\"model.language_model.embed_tokens\"\n  ],\n  \"quant_method\": "
        "\"compressed-tensors\"\n}\n");
  const Outcome checked = run_qpatch({"--check", "DIR"});
  EXPECT_EQ(checked.code, 1);
  EXPECT_EQ(
      checked.out,
      "DIR: compressed-tensors, judged for " + test::judged_for("Qwen3_5ForCausalLM") +
          "\n"
          "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
          "names "
          "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
          "  fixable     quantization_config.json: ignore differs from config.json's (vLLM reads "
          "config.json): 0 entries only in config.json, 1 only in quantization_config.json\n"
          "  would patch quantization_config.json -1: model.language_model.embed_tokens\n"
          "  status      needs-patch\n"
          "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"DIR"}).code, 0);
  EXPECT_EQ(read("quantization_config.json"),
            "{\n  \"config_groups\": {\n    \"group_0\": {\n      \"targets\": [\n        "
            "\"Linear\"\n      ]\n    }\n  },\n  \"ignore\": [\n    \"lm_head\"\n  ],\n  "
            "\"quant_method\": \"compressed-tensors\"\n}\n");
  expect_idempotent();
}

TEST_F(FixTest, UnindexedHeadIsIndexedAndIgnored) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::dense, HeadFile::unindexed_sidecar, config});
  const std::string index = read("model.safetensors.index.json");
  const Outcome fixed = run_qpatch({"--json", "DIR"});
  EXPECT_EQ(fixed.code, 0) << fixed.out << fixed.err;
  const auto report = nlohmann::json::parse(fixed.out);
  const auto& checkpoint = report["checkpoints"][0];
  EXPECT_EQ(checkpoint["status"], "patched");
  EXPECT_EQ(checkpoint["findings"].size(), 3U); // mtp.fc (vLLM), mtp.layers.0, the index
  EXPECT_EQ(checkpoint["findings"][2]["kind"], "unindexed_tensors");
  EXPECT_EQ(checkpoint["findings"][2]["detail"],
            "model_extra_tensors.safetensors: 12 tensors (mtp) that the index does not list: "
            "vLLM and transformers never load them");
  EXPECT_EQ(checkpoint["changes"][1]["file"], "model.safetensors.index.json");
  EXPECT_EQ(checkpoint["changes"][1]["added"].size(), 12U);
  const std::string patched = read("model.safetensors.index.json");
  const size_t last_entry_end = index.rfind('"') + 1; // bytes before it stay as they were
  EXPECT_EQ(patched.substr(0, last_entry_end), index.substr(0, last_entry_end));
  EXPECT_NE(patched.find("    \"mtp.fc.weight\": \"model_extra_tensors.safetensors\",\n"),
            std::string::npos);
  EXPECT_EQ(read("model.safetensors.index.json.bak"), index);
  expect_idempotent();
}

TEST_F(FixTest, MissingShardIsReportedAndNotFixable) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::absent, HeadFile::indexed_shard, config});
  write("model.safetensors.index.json",
        "{\"weight_map\": {\"lm_head.weight\": \"model-00001-of-00001.safetensors\", "
        "\"x.weight\": \"model-00002-of-00002.safetensors\"}}");
  const Outcome outcome = run_qpatch({"DIR"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_NE(outcome.out.find("  not fixable model-00002-of-00002.safetensors: the index names "
                             "this file but it does not exist"),
            std::string::npos)
      << outcome.out;
}

TEST_F(FixTest, NotQuantizedIsClean) {
  // Every tensor dense (the mini checkpoint packs its decoder layer, which without a config is
  // quantized_without_config: quantized_without_config_test.cpp).
  uint64_t size = 0;
  const std::string header = test::header_json(
      {{"model.layers.0.mlp.down_proj.weight", "BF16", {8, 8}}, {"mtp.fc.weight", "BF16", {8, 16}}},
      size);
  write("model.safetensors", test::shard_bytes(header, size));
  write("config.json", "{\"model_type\": \"x\"}\n");
  const Outcome outcome = run_qpatch({"DIR"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_EQ(outcome.out,
            "DIR: not quantized\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  status      clean\n");
}

TEST_F(FixTest, SymlinkedConfigBecomesAFileAndTheBlobIsUntouched) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir() / "snapshots" / "rev", {Head::dense, HeadFile::indexed_shard, config});
  write("blobs/abc123", config);
  fs::remove(dir() / "snapshots/rev/config.json");
  fs::create_symlink("../../blobs/abc123", dir() / "snapshots/rev/config.json");
  std::ostringstream out;
  std::ostringstream err;
  const int code = run({(dir() / "snapshots/rev").string()}, out, err, Terminal{});
  EXPECT_EQ(code, 0) << out.str() << err.str();
  EXPECT_FALSE(fs::is_symlink(dir() / "snapshots/rev/config.json"));
  EXPECT_EQ(read("blobs/abc123"), config);
  EXPECT_EQ(read("snapshots/rev/config.json.bak"), config);
  EXPECT_NE(out.str().find("config.json was a symlink (Hugging Face cache); it is now a regular "
                           "file and the blob it pointed to is unchanged, so this cache copy "
                           "now differs from the Hub (qpatch restore puts the original back)"),
            std::string::npos);
  EXPECT_NE(read("snapshots/rev/config.json").find("\"mtp.fc\""), std::string::npos);
}

TEST_F(FixTest, RestorePutsTheOriginalsBack) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::dense, HeadFile::unindexed_sidecar, config});
  const auto before = test::snapshot_tree(dir());
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  const Outcome restored = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(restored.code, 0);
  EXPECT_EQ(restored.out,
            "DIR: restored config.json from config.json.bak\n"
            "DIR: restored model.safetensors.index.json from model.safetensors.index.json.bak\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
  EXPECT_EQ(run_qpatch({"restore", "DIR"}).out, "DIR: no qpatch backups; nothing to restore\n");
}

TEST_F(FixTest, NoBackupWritesNoBackup) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config});
  EXPECT_EQ(run_qpatch({"--no-backup", "DIR"}).code, 0);
  EXPECT_FALSE(fs::exists(dir() / "config.json.bak"));
}

TEST_F(FixTest, OnlyLimitsTheModulesConsidered) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config});
  EXPECT_EQ(run_qpatch({"--only", "^mtp\\.fc$", "DIR"}).code, 0);
  EXPECT_EQ(ignore_of(), R"(["lm_head","mtp.fc"])");
}

TEST_F(FixTest, UnreadableCheckpointIsExitThreeAndWritesNothing) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config});
  write("model_extra_tensors.safetensors", "short");
  const auto before = test::snapshot_tree(dir());
  const Outcome outcome = run_qpatch({"DIR"});
  EXPECT_EQ(outcome.code, 3);
  EXPECT_EQ(outcome.out,
            "DIR: could not be judged (see the error)\n"
            "  status      error\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

TEST_F(FixTest, NoDirectoryIsAUsageError) {
  const Outcome outcome = run_qpatch({});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "qpatch: error: missing DIR; run 'qpatch --help' for usage\n");
}

TEST_F(FixTest, ExitCodeIsTheWorstOfSeveralCheckpoints) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir() / "a", {Head::dense, HeadFile::indexed_shard, config});
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(
      run({"--check", (dir() / "a").string(), (dir() / "missing").string()}, out, err, Terminal{}),
      2); // a DIR that is not a checkpoint is a usage error, checked before any is judged
  EXPECT_EQ(out.str(), "");
}

} // namespace
} // namespace qpatch::cli
