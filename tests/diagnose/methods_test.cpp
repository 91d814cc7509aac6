// SPDX-License-Identifier: Apache-2.0
// The method table: which names each row answers to, the engines modelled, and that a name no
// row owns is reported as unsupported instead of being judged as a neighbouring method.
#include "diagnose/judge_common.hpp"
#include "support/fixtures.hpp"
#include "support/loaded.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/diagnose/explain.hpp>
#include <qpatch/diagnose/methods.hpp>

#include <gtest/gtest.h>

namespace qpatch::diagnose {
namespace {

using engine::Engine;
using engine::EngineSet;
using engine::SkipListMethod;

std::vector<std::string> names_of(EngineSet engines) {
  return engines.names();
}

TEST(MethodsTest, RowsInTheOrderReportsListThem) {
  std::vector<std::string> names;
  for (const Method& method : methods()) {
    names.emplace_back(method.name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"compressed-tensors",
                                      "gptq",
                                      "auto-round",
                                      "awq",
                                      "fp8",
                                      "modelopt",
                                      "bitsandbytes",
                                      "quark"}));
  EXPECT_EQ(judged_methods_text(),
            "compressed-tensors, gptq, auto-round, awq, fp8, modelopt, bitsandbytes and quark");
}

TEST(MethodsTest, EveryRowHasAJudgeAndAnExplain) {
  for (const Method& method : methods()) {
    EXPECT_NE(method.judge, nullptr) << method.name;
    EXPECT_NE(method.explain, nullptr) << method.name;
    EXPECT_EQ(find_method(method.name), &method) << method.name;
  }
}

TEST(MethodsTest, AliasesFindTheirRow) {
  ASSERT_NE(find_method("compressed-tensors"), nullptr);
  EXPECT_EQ(find_method("compressed_tensors"), find_method("compressed-tensors"));
  ASSERT_NE(find_method("modelopt"), nullptr);
  EXPECT_EQ(find_method("modelopt_fp4"), find_method("modelopt"));
  EXPECT_EQ(find_method("modelopt_fp4")->name, "modelopt");
}

TEST(MethodsTest, NamesNoRowOwnsFindNothing) {
  // Near misses of judged names are not judged as them (vLLM has separate awq_marlin and
  // gptq_marlin methods; "" is a config without quant_method).
  for (const char* name : {"",
                           "awq_marlin",
                           "gptq_marlin",
                           "compressed",
                           "modelopt_fp8",
                           "mxfp4",
                           "auto_round",
                           "compressed-tensors "}) {
    EXPECT_EQ(find_method(name), nullptr) << '"' << name << '"';
  }
}

TEST(MethodsTest, EnginesModelledPerRow) {
  const auto engines = [](const char* name) { return names_of(find_method(name)->engines); };
  const std::vector<std::string> all{"vllm", "sglang", "transformers"};
  EXPECT_EQ(engines("compressed-tensors"), all);
  EXPECT_EQ(engines("gptq"), all);
  EXPECT_EQ(engines("awq"), all);
  EXPECT_EQ(engines("auto-round"), all);
  EXPECT_EQ(engines("fp8"), all);
  EXPECT_EQ(engines("modelopt"), all);
  EXPECT_EQ(engines("bitsandbytes"), all);
}

TEST(MethodsTest, ModelledEnginesFallBackToVllmAlone) {
  const Method* ct = find_method("compressed-tensors");
  const Method* awq = find_method("awq");
  const Method* fp8 = find_method("fp8");
  const auto only = [](Engine engine) { return EngineSet::only(engine); };
  EXPECT_EQ(names_of(modelled_engines(ct, only(Engine::transformers))),
            std::vector<std::string>{"transformers"});
  EXPECT_EQ(names_of(modelled_engines(awq, EngineSet::all())),
            (std::vector<std::string>{"vllm", "sglang", "transformers"}));
  EXPECT_EQ(names_of(modelled_engines(awq, only(Engine::sglang))),
            std::vector<std::string>{"sglang"});
  EXPECT_EQ(names_of(modelled_engines(awq, only(Engine::transformers))),
            std::vector<std::string>{"transformers"});
  EXPECT_EQ(names_of(modelled_engines(fp8, only(Engine::transformers))),
            std::vector<std::string>{"transformers"});
  EXPECT_EQ(names_of(modelled_engines(fp8, only(Engine::sglang))),
            std::vector<std::string>{"sglang"});
  EXPECT_EQ(names_of(modelled_engines(find_method("modelopt"), only(Engine::sglang))),
            std::vector<std::string>{"sglang"});
  EXPECT_EQ(names_of(modelled_engines(nullptr, EngineSet::all())),
            std::vector<std::string>{"vllm"});
}

TEST(MethodsTest, SkipListFamilyAndPackedTensors) {
  EXPECT_EQ(find_method("awq")->skip_list, SkipListMethod::awq);
  EXPECT_EQ(find_method("fp8")->skip_list, SkipListMethod::fp8);
  EXPECT_EQ(find_method("modelopt_fp4")->skip_list, SkipListMethod::modelopt);
  EXPECT_EQ(find_method("bitsandbytes")->skip_list, SkipListMethod::bitsandbytes);
  EXPECT_FALSE(find_method("compressed-tensors")->skip_list.has_value());
  EXPECT_FALSE(find_method("gptq")->skip_list.has_value());
  EXPECT_FALSE(find_method("auto-round")->skip_list.has_value());
  EXPECT_EQ(find_method("compressed_tensors")->packed_tensor, "weight_packed");
  EXPECT_EQ(find_method("gptq")->packed_tensor, "qweight");
  EXPECT_EQ(find_method("auto-round")->packed_tensor, "qweight");
  EXPECT_EQ(find_method("awq")->packed_tensor, "qweight");
  EXPECT_EQ(find_method("fp8")->packed_tensor, "weight_scale");
}

std::string method_config(const std::string& method) {
  return "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
         "  \"quantization_config\": {\n    \"bits\": 4,\n    \"quant_method\": \"" +
         method + "\"\n  }\n}\n";
}

// A checkpoint whose config declares "awq_marlin": vLLM's name for a kernel, not a config
// method any row judges.
class UnknownMethodTest : public test::TempDirTest {
protected:
  test::Loaded awq_marlin() {
    test::write_mini(dir(),
                     {test::Head::dense,
                      test::HeadFile::indexed_shard,
                      method_config("awq_marlin"),
                      test::Packing::awq});
    return test::load_checkpoint(dir());
  }
};

TEST_F(UnknownMethodTest, DiagnoseReportsItAndPlansNoEdit) {
  const test::Loaded ck = awq_marlin();
  DiagnoseOptions options;
  options.engines = EngineSet::only(Engine::sglang);
  auto diagnosis = diagnose(ck.inventory, ck.modules, ck.configs, options);
  ASSERT_TRUE(diagnosis.ok());
  EXPECT_EQ(diagnosis->quant_method, "awq_marlin");
  EXPECT_EQ(diagnosis->engines, std::vector<std::string>{"vllm"});
  EXPECT_EQ(diagnosis->engine_rules, "vllm main 017e9f4 (2026-08-17)");
  EXPECT_EQ(diagnosis->notes,
            std::vector<std::string>{"quant_method \"awq_marlin\": only vLLM's rules are modelled "
                                     "for this method, so it is judged as vLLM loads it"});
  ASSERT_EQ(diagnosis->findings.size(), 1U);
  const Finding& finding = diagnosis->findings.front();
  EXPECT_EQ(finding.kind, FindingKind::unsupported_method);
  EXPECT_FALSE(finding.fixable);
  EXPECT_EQ(finding.label, "config.json");
  EXPECT_EQ(
      finding.detail,
      "config.json: quant_method \"awq_marlin\" is not judged by this version of qpatch "
      "(compressed-tensors, gptq, auto-round, awq, fp8, modelopt, bitsandbytes and quark are)");
  EXPECT_EQ(finding.engines, std::vector<std::string>{"vllm"});
  EXPECT_TRUE(diagnosis->array_changes.empty());
  EXPECT_TRUE(diagnosis->object_changes.empty());
}

TEST_F(UnknownMethodTest, ExplainSaysItIsNotJudged) {
  const test::Loaded ck = awq_marlin();
  auto explanation = explain(ck.inventory, ck.modules, ck.configs, "mtp.fc");
  ASSERT_TRUE(explanation.ok());
  EXPECT_TRUE(explanation->consistent);
  EXPECT_EQ(explanation->lines,
            (std::vector<std::pair<std::string, std::string>>{
                {"stored", "dense BF16 [64, 128] in model_extra_tensors.safetensors"},
                {"layer", "mtp.fc (ColumnParallelLinear)"},
                {"config", "config.json /quantization_config (awq_marlin)"},
                {"verdict", "quant_method \"awq_marlin\" is not judged yet"}}));
}

// On main, a name that reached the skip-list reader without being one of its four methods was
// read as ModelOpt (`: SkipListMethod::modelopt`, its list from `ignore`): the callers' hand-kept
// name lists were all that stood between a new name and a wrong verdict.
TEST_F(UnknownMethodTest, SkipListReaderRefusesANameNoSkipListRowOwns) {
  const test::Loaded ck = awq_marlin();
  const quant::ConfigFile* active = ck.configs.active();
  ASSERT_NE(active, nullptr);
  auto setting = detail::skip_list_setting(*active, ck.configs, ck.modules, ck.inventory);
  ASSERT_FALSE(setting.ok());
  const Error error = setting.take_error();
  EXPECT_EQ(error.code, ErrorCode::internal);
  EXPECT_EQ(error.to_string(),
            "config.json: at /quantization_config: quant_method \"awq_marlin\" has no skip list");
}

TEST_F(UnknownMethodTest, SkipListReaderReadsEachRowsOwnList) {
  test::write_mini(
      dir(),
      {test::Head::dense,
       test::HeadFile::indexed_shard,
       "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
       "  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\"\n    ],\n"
       "    \"quant_algo\": \"NVFP4\",\n    \"quant_method\": \"modelopt_fp4\"\n  }\n}\n",
       test::Packing::fp8});
  const test::Loaded ck = test::load_checkpoint(dir());
  auto setting =
      detail::skip_list_setting(*ck.configs.active(), ck.configs, ck.modules, ck.inventory);
  ASSERT_TRUE(setting.ok());
  EXPECT_EQ(setting->method, SkipListMethod::modelopt);
  EXPECT_TRUE(setting->nvfp4);
  EXPECT_EQ(setting->list.key, "ignore");
  EXPECT_EQ(setting->list.entries, std::vector<std::string>{"lm_head"});
}

} // namespace
} // namespace qpatch::diagnose
