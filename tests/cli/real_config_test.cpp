// SPDX-License-Identifier: Apache-2.0
// Judging real configs (testdata/real-configs, copied verbatim from public checkpoints) on
// synthetic checkpoints with the real layouts, and the flagship case end to end.
#include "run.hpp"
#include "support/engine_labels.hpp"
#include "support/golden.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;

const fs::path k_real = fs::path(QPATCH_TESTDATA_DIR) / "real-configs";

int run_in(const fs::path& dir, std::vector<std::string> args, std::string* out_text = nullptr) {
  args.push_back(dir.string());
  std::ostringstream out;
  std::ostringstream err;
  const int code = run(args, out, err, Terminal{});
  if (out_text != nullptr) {
    *out_text = out.str();
  }
  return code;
}

nlohmann::ordered_json ignore_of(const fs::path& dir) {
  return nlohmann::ordered_json::parse(
      test::read_bytes(dir / "config.json"))["quantization_config"]["ignore"];
}

class RealConfigTest : public test::TempDirTest {
protected:
  // The real Qwen3.6-27B W4A16 config on its real layout (packed head, dense mtp.fc), with
  // `edit` applied to the config text first.
  void write_packed_head(const std::function<void(std::string&)>& edit = {}) {
    synth::CheckpointSpec spec = synth::qwen35_27b_w4a16_mtp(true);
    spec.config_json = test::read_bytes(k_real / "qwen3.6-27b-w4a16-awq-ct-packed-mtp.config.json");
    if (edit) {
      edit(spec.config_json);
    }
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
};

TEST_F(RealConfigTest, CorrectPartialHeadConfigIsCleanForVllm) {
  write_packed_head();
  std::string out;
  EXPECT_EQ(run_in(dir(), {"--check", "--engine", "vllm"}, &out), 0); // every version
  EXPECT_EQ(
      out,
      dir().string() + ": compressed-tensors, judged for " +
          test::judged_for(engine::Engine::vllm, "Qwen3_5ForConditionalGeneration") +
          "\n"
          "  mtp head    1 linear BF16, 7 norms, 7 linears ct-pack-quantized in "
          "model-mtp.safetensors (mtp_num_hidden_layers: 1)\n"
          // The 48 parents (…layers.N.linear_attn) and their 48 norms name no Linear vLLM
          // builds, in any version (issue 23 item 6: the README's figures).
          "  lint        ignore: 304 entries; 96 dead (no verdict changes without them, in any "
          "version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built "
          "dense by them); qpatch --prune " +
          dir().string() +
          " removes the dead and duplicate ones\n"
          "  status      clean\n");
}

// --prune removes what the lint line counts, as an ordinary patch: every other entry stays in its
// order, and the pruned config judges as the original did (clean), with nothing left to prune.
TEST_F(RealConfigTest, PruneRemovesTheDeadEntriesOfTheRealConfig) {
  write_packed_head();
  const auto before = ignore_of(dir());
  EXPECT_EQ(run_in(dir(), {"--prune", "-q", "--engine", "vllm"}), 0);
  nlohmann::ordered_json expected = nlohmann::ordered_json::array();
  for (const auto& item : before) {
    const std::string entry = item.get<std::string>();
    const bool parent =
        entry.size() > 12 && entry.compare(entry.size() - 12, 12, ".linear_attn") == 0;
    const bool norm = entry.find(".linear_attn.norm") != std::string::npos;
    if (!parent && !norm) {
      expected.push_back(entry);
    }
  }
  EXPECT_EQ(before.size(), 304U);
  EXPECT_EQ(expected.size(), 208U);
  EXPECT_EQ(ignore_of(dir()), expected);
  std::string out;
  EXPECT_EQ(run_in(dir(), {"--check", "--engine", "vllm"}, &out), 0);
  EXPECT_EQ(out.find("lint"), std::string::npos) << out;
  EXPECT_EQ(run_in(dir(), {"--prune", "--check", "--engine", "vllm"}), 0);
}

// The same real config lists 48 parent modules ("model.language_model.layers.0.linear_attn")
// and every linear-attention in_proj_a/in_proj_b by its checkpoint name. SGLang reads plain
// entries as case-insensitive substrings (compressed_tensors/utils.py should_ignore_layer,
// check_contains). Before #18926 it built those layers as model.layers.N.linear_attn.*
// with in_proj_b/_a apart. Until #23471 (2026-04-28) the classes inherit Qwen3-VL's
// hf_to_sglang_mapper, which renames every entry before it is matched: model.language_model.X
// becomes language_model.model.X, which is part of no layer's name, so neither the parent
// entries nor the checkpoint names reach in_proj_b/_a (or, from #21019, the fused in_proj_ba):
// SGLang builds them quantized over BF16 weights (sglang#22287). The vision entries
// (model.visual.X, attn.qkv) become visual.X and attn.qkv_proj, the tower's own names before
// #18926 (quantized by the config then, never after). From #23471 the text layers carry the
// checkpoint names: the parent entries are then substrings of every quantized linear_attn
// projection (in_proj_qkvz, out_proj: 144 modules), which SGLang builds dense over packed int4
// weights, until #32736 (2026-07-29) reads a plain entry as the name or a dotted suffix of it:
// the parent entries then reach nothing, and the checkpoint names reach the shards they name.
// The patch satisfies every version: one readable pattern (a "re:" entry, which the mapper
// leaves as written) for the in_proj shards and their fused layer, and the 48 parent entries
// removed (vLLM matches them exactly and transformers by module name: they reach no layer).
TEST_F(RealConfigTest, SglangIsJudgedUnderItsOwnLayerNames) {
  write_packed_head();
  const auto before = ignore_of(dir());
  std::string out;
  EXPECT_EQ(run_in(dir(), {"--check", "--engine", "sglang"}, &out), 1);
  std::string parents;
  nlohmann::ordered_json expected = nlohmann::ordered_json::array();
  for (const auto& item : before) {
    const std::string entry = item.get<std::string>();
    if (entry.size() > 12 && entry.compare(entry.size() - 12, 12, ".linear_attn") == 0) {
      parents += (parents.empty() ? "" : ", ") + entry;
    } else {
      expected.push_back(entry);
    }
  }
  EXPECT_EQ(
      out,
      dir().string() + ": compressed-tensors, judged for " +
          test::judged_for(engine::Engine::sglang, "Qwen3_5ForConditionalGeneration") +
          "\n"
          "  mtp head    1 linear BF16, 7 norms, 7 linears ct-pack-quantized in "
          "model-mtp.safetensors (mtp_num_hidden_layers: 1)\n" +
          test::k_sglang_qwen35_assumed_note + test::k_sglang_qwen3_vl_mapper_note +
          // The 50 dead: 48 linear_attn.norm entries (no layer), lm_head (a ParallelLMHead,
          // which SGLang's compressed-tensors gives no method) and mtp.fc (a plain nn.Linear).
          "  lint        ignore: 304 entries; 50 dead (no verdict changes without them, in any "
          "version judged), 0 duplicates, 48 over-broad (a layer stored quantized is built "
          "dense by them); qpatch --prune " +
          dir().string() +
          " removes the dead and duplicate ones\n"
          "  fixable     model.language_model.layers: 96 modules stored BF16 but quantized by "
          "targets [\"Linear\"] (group_0, class name); ignore lists their checkpoint names, but "
          "Qwen3-VL's hf_to_sglang_mapper (qwen3_vl.py; the Qwen3.5 classes inherit it until "
          "#23471) renames those entries to names no layer has (explain shows them) (SGLang "
          "before 2026-04-28 only)\n"
          "  breaks      SGLang: loads, and drops the stored weights silently\n"
          "  fixable     model.language_model.layers: 144 modules stored ct-pack-quantized "
          "but made dense by plain ignore entries that name a parent module or part of a "
          "name (SGLang reads plain entries as case-insensitive substrings) (SGLang "
          "2026-04-28..2026-07-28 only)\n"
          "  breaks      SGLang: loads, and drops the stored weights silently\n"
          "  would patch config.json +1: re:.*linear_attn\\.in_proj_(a|b|ba)$; -48: " +
          parents +
          "\n"
          "  status      needs-patch\n"
          "  apply       qpatch " +
          dir().string() + "\n");
  EXPECT_EQ(std::count(parents.begin(), parents.end(), ',') + 1, 48);
  EXPECT_EQ(run_in(dir(), {}), 0);
  expected.push_back("re:.*linear_attn\\.in_proj_(a|b|ba)$");
  EXPECT_EQ(ignore_of(dir()), expected);
  for (const char* engine : {"vllm", "sglang", "transformers", "all"}) {
    EXPECT_EQ(run_in(dir(), {"--check", "--engine", engine}), 0) << engine;
  }
}

TEST_F(RealConfigTest, BlanketRegexAddedLaterIsRemovedAndNothingElse) {
  write_packed_head([](std::string& text) {
    text.replace(text.find("\"mtp.fc\"\n"), 9, "\"mtp.fc\",\n      \"re:^mtp.*\"\n");
  });
  const auto before = ignore_of(dir());
  EXPECT_EQ(run_in(dir(), {"--engine", "vllm"}), 0);
  auto expected = before;
  expected.erase(expected.size() - 1);
  EXPECT_EQ(ignore_of(dir()), expected);
  EXPECT_EQ(ignore_of(dir()).size(), 304U);
}

TEST_F(RealConfigTest, DroppingMtpFcFromIgnoreIsCaughtByTheLinearTarget) {
  write_packed_head(
      [](std::string& text) { text.replace(text.find(",\n      \"mtp.fc\"\n"), 17, "\n"); });
  std::string out;
  EXPECT_EQ(run_in(dir(), {"--check", "--engine", "vllm"}, &out), 1);
  EXPECT_NE(out.find("  fixable     mtp.fc: 1 module stored BF16 but quantized by targets "
                     "[\"Linear\"] (group_0, class name); not in ignore\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(run_in(dir(), {"--engine", "vllm"}), 0);
  EXPECT_EQ(ignore_of(dir()).back(), "mtp.fc");
}

TEST_F(RealConfigTest, FlagshipEndToEnd) {
  test::write_sample(dir());
  const std::string original = test::read_bytes(dir() / "config.json");
  ASSERT_EQ(ignore_of(dir()).size(), 207U);
  EXPECT_EQ(run_in(dir(), {"--check"}), 1);
  EXPECT_EQ(run_in(dir(), {"--dry-run"}), 1);
  EXPECT_EQ(test::read_bytes(dir() / "config.json"), original);
  EXPECT_EQ(run_in(dir(), {}), 0);
  const auto ignore = ignore_of(dir());
  ASSERT_EQ(ignore.size(), 218U);
  const std::vector<std::string> added(ignore.begin() + 207, ignore.end());
  // The 8 checkpoint names, the draft's fused names for SGLang without #35887, and one pattern
  // for the linear-attention shards: SGLang before #23471 reads the checkpoint's entries through
  // Qwen3-VL's mapper, which sends model.language_model.X to language_model.model.X (no layer)
  // and model.visual.X to visual.X (the vision tower's own names before #18926).
  EXPECT_EQ(added,
            (std::vector<std::string>{"re:.*linear_attn\\.in_proj_(a|b|ba)$",
                                      "mtp.fc",
                                      "mtp.layers.0.self_attn.q_proj",
                                      "mtp.layers.0.self_attn.k_proj",
                                      "mtp.layers.0.self_attn.v_proj",
                                      "mtp.layers.0.self_attn.qkv_proj",
                                      "mtp.layers.0.self_attn.o_proj",
                                      "mtp.layers.0.mlp.gate_proj",
                                      "mtp.layers.0.mlp.up_proj",
                                      "mtp.layers.0.mlp.gate_up_proj",
                                      "mtp.layers.0.mlp.down_proj"}));
  EXPECT_EQ(test::read_bytes(dir() / "config.json.bak"), original);
  const auto patched = test::snapshot_tree(dir());
  EXPECT_EQ(run_in(dir(), {}), 0);
  EXPECT_EQ(test::snapshot_tree(dir()), patched); // a second run changes nothing
  EXPECT_EQ(run_in(dir(), {"--check"}), 0);
  EXPECT_EQ(run(std::vector<std::string>{"restore", dir().string()}, std::cout, std::cerr), 0);
  EXPECT_EQ(test::read_bytes(dir() / "config.json"), original);
  EXPECT_FALSE(fs::exists(dir() / "config.json.bak"));
}

// A REAP-pruned Qwen3.5 that kept mtp_num_hidden_layers but no MTP tensor (issue 23 item 4):
// vLLM's Qwen3_5MTP checks nothing itself, but an unquantized model's loader tracks every
// parameter (model_loader/default_loader.py track_weights_loading, 017e9f4), so speculative
// decoding fails at start-up; SGLang's draft keeps its weights as built. No config patch helps.
TEST_F(RealConfigTest, DeclaredButAbsentMtpHeadIsAFindingWithGraftAsTheNextStep) {
  synth::CheckpointSpec spec;
  spec.config_json = test::read_bytes(k_real / "qwen3.5-18b-reap-a3b-bf16-no-mtp.config.json");
  spec.shards.push_back({"model.safetensors", {{"lm_head.weight", "BF16", {8, 4}}}, true});
  ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  const auto before = test::snapshot_tree(dir());
  std::string out;
  EXPECT_EQ(run_in(dir(), {}, &out), 1);
  EXPECT_EQ(out,
            dir().string() +
                ": not quantized\n"
                "  not fixable config.json declares mtp_num_hidden_layers: 1 but no file stores "
                "the MTP head (mtp.layers.0): no config patch can help; graft the head from the "
                "base model [vllm, sglang]\n"
                "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
                "\"ValueError: Following weights were not initialized from checkpoint: {...}\"; "
                "SGLang: starts with the draft's weights as built, never loaded: its drafts are "
                "rejected (\"accept len 1.000\", SGLang #35797), so speculative decoding only "
                "slows serving down\n"
                "  status      unfixable\n"
                "  graft       qpatch graft --from BASE " +
                dir().string() + "  (BASE: the unquantized model, a directory or Hub id)\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

} // namespace
} // namespace qpatch::cli
