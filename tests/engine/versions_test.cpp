// SPDX-License-Identifier: Apache-2.0
// Engine versions as data (versions.hpp): which changes a version has, which versions are
// judged for a method and architecture, how REF resolves, and how a subset of versions reads.
#include <qpatch/engine/versions.hpp>

#include <gtest/gtest.h>

namespace qpatch::engine {
namespace {

std::vector<std::string> froms(const std::vector<EngineVersion>& versions) {
  std::vector<std::string> out;
  for (const EngineVersion& version : versions) {
    std::string text = version.from;
    for (const std::string_view pr : version.with) {
      text += "+" + std::string(pr);
    }
    out.push_back(text);
  }
  return out;
}

TEST(Versions, ChangesInForceOnADay) {
  EngineVersion version;
  version.engine = Engine::vllm;
  version.from = "2026-05-06";
  EXPECT_TRUE(version.has("#37291"));
  EXPECT_FALSE(version.has("#41965"));
  version.from = "2026-05-07";
  EXPECT_TRUE(version.has("#41965"));
  EXPECT_FALSE(version.has("#99999")); // not in the history: never in force
}

TEST(Versions, OneVersionPerEraOfTheChangesThatConcernTheMethodAndArchitecture) {
  EXPECT_EQ(froms(versions_to_judge(
                Engine::vllm, "compressed-tensors", "Qwen3_5ForConditionalGeneration")),
            (std::vector<std::string>{
                "2026-02-28", "2026-03-30", "2026-05-07", "2026-05-26", "2026-07-28"}));
  // #42124 (the Qwen3.5 head) concerns no DeepSeek checkpoint.
  EXPECT_EQ(froms(versions_to_judge(Engine::vllm, "compressed-tensors", "DeepseekV3ForCausalLM")),
            (std::vector<std::string>{"2026-02-28", "2026-03-30", "2026-05-07", "2026-07-28"}));
  // The text-only classes are registered from #50210 on; #50355 gave them their mapper.
  EXPECT_EQ(froms(versions_to_judge(Engine::vllm, "fp8", "Qwen3_5ForCausalLM")),
            (std::vector<std::string>{"2026-07-29", "2026-08-06"}));
  // bitsandbytes is modelled from #43529 on (vllm-bnb-plugin's rules).
  EXPECT_EQ(
      froms(versions_to_judge(Engine::vllm, "bitsandbytes", "Qwen3_5ForConditionalGeneration")),
      (std::vector<std::string>{"2026-08-09"}));
  // SGLang: before #18926, before #21019, before #23471, after it, and the newest with the
  // unmerged #35887.
  EXPECT_EQ(froms(versions_to_judge(Engine::sglang, "awq", "Qwen3_5MoeForConditionalGeneration")),
            (std::vector<std::string>{
                "2026-02-09", "2026-02-17", "2026-03-23", "2026-04-28", "2026-04-28+#35887"}));
  EXPECT_EQ(froms(versions_to_judge(Engine::sglang, "awq", "LlamaForCausalLM")),
            (std::vector<std::string>{"2026-02-09"}));
}

// SGLang's Quark gate (#23146, 2026-04-20) falls between #21019 and #23471: the newest SGLang
// is judged with both. (Listed after #23471, it once made the newest era start on 04-20,
// without #23471's packed mapping: sglang_diff seeds 185,000,000+, 110 of 311 detections.)
// #19425 (2026-02-26) gives QuarkConfig the apply_weight_name_mapper Qwen3-VL's mapper runs.
TEST(Versions, ErasFollowTheDatesOfTheChanges) {
  EXPECT_EQ(froms(versions_to_judge(Engine::sglang, "quark", "Qwen3_5ForConditionalGeneration")),
            (std::vector<std::string>{"2026-02-09",
                                      "2026-02-17",
                                      "2026-02-26",
                                      "2026-03-23",
                                      "2026-04-20",
                                      "2026-04-28",
                                      "2026-04-28+#35887"}));
  VersionPins pins;
  pins.of(Engine::sglang) = "2026-08-31";
  const auto newest =
      versions_to_judge(Engine::sglang, "quark", "Qwen3_5ForConditionalGeneration", pins);
  ASSERT_EQ(newest.size(), 1U);
  EXPECT_TRUE(newest.front().has("#23146"));
  EXPECT_TRUE(newest.front().has("#23471"));
}

// Each history lists its merged changes in date order, as the README's tables print them.
TEST(Versions, HistoriesListTheirChangesInDateOrder) {
  for (const Engine engine : {Engine::vllm, Engine::sglang, Engine::transformers}) {
    std::string_view previous;
    for (const Change& change : history(engine).changes) {
      if (!change.merged()) {
        continue;
      }
      EXPECT_LE(previous, change.date) << to_string(engine) << " " << change.id;
      previous = change.date;
    }
  }
}

TEST(Versions, APinSelectsTheEraItFallsIn) {
  VersionPins pins;
  pins.of(Engine::vllm) = "2026-06-20";
  const auto versions = versions_to_judge(
      Engine::vllm, "compressed-tensors", "Qwen3_5ForConditionalGeneration", pins);
  ASSERT_EQ(versions.size(), 1U);
  EXPECT_EQ(versions.front().from, "2026-05-26");
  EXPECT_EQ(versions.front().until, "2026-07-27");
  EXPECT_EQ(versions.front().label(), "vLLM main 2026-05-26..2026-07-27");
  EXPECT_EQ(one_version(Engine::sglang, "gptq", "Qwen3_5ForConditionalGeneration", {}).with.size(),
            0U);
}

TEST(Versions, RefsResolveToADay) {
  EXPECT_EQ(resolve_ref(Engine::vllm, "main").day, "2026-08-17");
  EXPECT_EQ(resolve_ref(Engine::vllm, "2026-05-06").day, "2026-05-06");
  EXPECT_EQ(resolve_ref(Engine::vllm, "0.21").day, "2026-05-13");
  EXPECT_EQ(resolve_ref(Engine::vllm, "0.21.1").day, "2026-05-13");
  EXPECT_EQ(resolve_ref(Engine::vllm, "v0.26").day, "2026-07-24");
  EXPECT_EQ(resolve_ref(Engine::vllm, "2025-12-01").error,
            "vllm@2025-12-01: qpatch models vLLM main from 2026-02-28 to 2026-08-17 (017e9f4)");
  const ResolvedRef later = resolve_ref(Engine::vllm, "0.30");
  EXPECT_EQ(later.day, "2026-09-23");
  EXPECT_EQ(later.note,
            "vllm@0.30 (cut 2026-09-23) is judged as vllm main of 2026-08-17 (017e9f4), the newest "
            "source read: changes merged since then are not modelled");
  EXPECT_EQ(resolve_ref(Engine::sglang, "0.5.9").error,
            "sglang@0.5.9: not a release qpatch knows (none); give main, a day YYYY-MM-DD, or one "
            "of those");
}

TEST(Versions, SubsetsReadAsRangesWithTheirReleases) {
  const auto all =
      versions_to_judge(Engine::vllm, "compressed-tensors", "Qwen3_5ForConditionalGeneration");
  EXPECT_EQ(subset_text({all[0], all[1]}, all), "vLLM before 2026-05-07 (0.20 and older)");
  EXPECT_EQ(subset_text({all[4]}, all), "vLLM from 2026-07-28 (0.27 and newer)");
  EXPECT_EQ(subset_text({all[2], all[3]}, all), "vLLM 2026-05-07..2026-07-27 (0.21 to 0.26)");
  EXPECT_EQ(subset_text({all[0], all[2]}, all),
            "vLLM before 2026-03-30 (0.17 and older), 2026-05-07..2026-05-25 (0.21)");
  EXPECT_EQ(subset_text(all, all), "vLLM");
  const auto sglang =
      versions_to_judge(Engine::sglang, "compressed-tensors", "Qwen3_5ForConditionalGeneration");
  EXPECT_EQ(subset_text({sglang[0]}, sglang), "SGLang before 2026-02-17");
  EXPECT_EQ(subset_text({sglang[1], sglang[2], sglang[3], sglang[4], sglang[5]}, sglang),
            "SGLang from 2026-02-17");
  EXPECT_EQ(subset_text({sglang[1]}, sglang), "SGLang 2026-02-17..2026-03-22");
  EXPECT_EQ(subset_text({sglang[2]}, sglang), "SGLang 2026-03-23..2026-04-27");
  EXPECT_EQ(subset_text({sglang[3]}, sglang), "SGLang 2026-04-28..2026-07-28");
  EXPECT_EQ(subset_text({sglang[4]}, sglang), "SGLang from 2026-07-29 without #35887");
  EXPECT_EQ(subset_text({sglang[5]}, sglang), "SGLang with #35887");
  EXPECT_EQ(subset_text({sglang[0], sglang[1], sglang[2], sglang[3], sglang[4]}, sglang),
            "SGLang without #35887");
}

TEST(Versions, EngineChoices) {
  const auto parsed = parse_engine_choice("sglang,vllm@0.22");
  ASSERT_TRUE(parsed.choice.has_value());
  EXPECT_EQ(parsed.choice->engines.names(), (std::vector<std::string>{"vllm", "sglang"}));
  EXPECT_EQ(parsed.choice->pins.of(Engine::vllm), std::optional<std::string>("2026-05-28"));
  EXPECT_FALSE(parsed.choice->pins.of(Engine::sglang).has_value());
  EXPECT_EQ(parse_engine_choice("vllm,al").error, "unknown engine 'al'");
}

} // namespace
} // namespace qpatch::engine
