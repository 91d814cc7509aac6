// SPDX-License-Identifier: Apache-2.0
// Which files carry a quantization config, where in each the config sits, which one the engines
// read, and the method each declares.
#include "support/temp_dir.hpp"

#include <qpatch/quant/config_files.hpp>

#include <gtest/gtest.h>

#include <fstream>

namespace qpatch::quant {
namespace {

class ConfigFilesTest : public test::TempDirTest {
protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name, std::ios::binary) << text;
  }
  std::vector<std::string> names(const ConfigSet& set) {
    std::vector<std::string> out;
    for (const ConfigFile& file : set.files) {
      out.push_back(file.name);
    }
    return out;
  }
};

TEST_F(ConfigFilesTest, ConfigJsonFirstThenSidecarsInTheirOrder) {
  write("config.json",
        R"({"architectures": ["Qwen3_5ForCausalLM"], "num_hidden_layers": 64,)"
        R"( "quantization_config": {"quant_method": "modelopt", "ignore": []}})");
  write("hf_quant_config.json", R"({"quantization": {"quant_algo": "NVFP4"}})");
  write("quantization_config.json", R"({"quant_method": "modelopt"})");
  auto set = load_config_files(dir());
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(names(*set),
            (std::vector<std::string>{
                "config.json", "quantization_config.json", "hf_quant_config.json"}));
  EXPECT_EQ(set->architecture, "Qwen3_5ForCausalLM");
  EXPECT_EQ(set->num_hidden_layers, 64U);
  EXPECT_EQ(set->files[0].pointer, std::vector<std::string>{"quantization_config"});
  EXPECT_TRUE(set->files[1].pointer.empty());
  EXPECT_EQ(set->files[2].pointer, std::vector<std::string>{"quantization"});
  ASSERT_NE(set->active(), nullptr);
  EXPECT_EQ(set->active()->name, "config.json");
  EXPECT_EQ(declared_method(set->files[0]), "modelopt");
  // hf_quant_config.json declares no quant_method: it is ModelOpt's own file.
  EXPECT_EQ(declared_method(set->files[2]), "modelopt");
  EXPECT_EQ(set->find("hf_quant_config.json"), &set->files[2]);
  EXPECT_EQ(set->find("quantize_config.json"), nullptr);
}

TEST_F(ConfigFilesTest, TextConfigHoldsAVlmsConfig) {
  write("config.json",
        R"({"architectures": ["Qwen3_5ForConditionalGeneration"],)"
        R"( "text_config": {"num_hidden_layers": 48,)"
        R"( "quantization_config": {"quant_method": "compressed-tensors"}}})");
  auto set = load_config_files(dir());
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->files[0].pointer,
            (std::vector<std::string>{"text_config", "quantization_config"}));
  EXPECT_EQ(set->num_hidden_layers, 48U);
  ASSERT_NE(set->active(), nullptr);
  EXPECT_EQ(declared_method(*set->active()), "compressed-tensors");
  EXPECT_EQ(pointer_text(set->active()->pointer), "/text_config/quantization_config");
}

TEST_F(ConfigFilesTest, WithoutConfigJsonsConfigTheMethodsOwnFileIsRead) {
  write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  write("quantize_config.json", R"({"bits": 4, "group_size": 128})");
  auto set = load_config_files(dir());
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(set->files[0].has_config());
  EXPECT_EQ(declared_method(set->files[0]), "");
  ASSERT_NE(set->active(), nullptr);
  EXPECT_EQ(set->active()->name, "quantize_config.json");
  // AutoGPTQ writes quantize_config.json without a quant_method.
  EXPECT_EQ(declared_method(*set->active()), "gptq");
}

TEST_F(ConfigFilesTest, HfQuantConfigComesBeforeQuantizeConfig) {
  write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  write("quantize_config.json", R"({"bits": 4})");
  write("hf_quant_config.json", R"({"quantization": {"quant_algo": "FP8"}})");
  auto set = load_config_files(dir());
  ASSERT_TRUE(set.ok());
  ASSERT_NE(set->active(), nullptr);
  EXPECT_EQ(set->active()->name, "hf_quant_config.json");
}

TEST_F(ConfigFilesTest, NotQuantizedHasNoActiveFile) {
  write("config.json", R"({"architectures": ["LlamaForCausalLM"], "quantization_config": null})");
  auto set = load_config_files(dir());
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->active(), nullptr);
  EXPECT_EQ(set->architecture, "LlamaForCausalLM");
  EXPECT_EQ(set->num_hidden_layers, 0U);
}

TEST_F(ConfigFilesTest, ASidecarThatIsNotAnObjectIsAnError) {
  write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  write("quantization_config.json", "[1, 2]");
  auto set = load_config_files(dir());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.take_error().to_string(),
            "quantization_config.json: expected a JSON object at the top level");
}

TEST_F(ConfigFilesTest, FieldErrorNamesTheJsonPath) {
  write("config.json", R"({"quantization_config": {"quant_method": "awq"}})");
  auto set = load_config_files(dir());
  ASSERT_TRUE(set.ok());
  const Error error =
      field_error(set->files[0], "/quantization_config/modules_to_not_convert", "expected a list");
  EXPECT_EQ(error.code, ErrorCode::invalid_json);
  EXPECT_EQ(error.to_string(),
            "config.json: at /quantization_config/modules_to_not_convert: expected a list");
}

} // namespace
} // namespace qpatch::quant
