// SPDX-License-Identifier: Apache-2.0
// The dense shape a graft checks DONOR's weight against, read from each packing: GPTQ's qweight
// [in*bits/32, out] (g_idx gives `in`), AWQ's qweight [in, out*bits/32], FP8's own shape.
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/graft/selection.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <gtest/gtest.h>

namespace qpatch::test {
namespace {

class LogicalShapeTest : public TempDirTest {
protected:
  // Return the dense shape of every quantized MTP module, as "name [rows, cols]" lines.
  std::string head_shapes(Packing packing, const std::string& config) {
    write_mini(dir(), {Head::packed, HeadFile::indexed_shard, config, packing});
    auto checkpoint = graft::read_checkpoint(dir(), "DIR");
    EXPECT_TRUE(checkpoint.ok()) << (checkpoint ? "" : checkpoint.error().to_string());
    std::string out;
    for (const uint32_t m : checkpoint->head.modules) {
      if (!checkpoint::is_quantized(checkpoint->modules[m].format)) {
        continue;
      }
      auto shape = graft::logical_shape(*checkpoint, m);
      out += std::string(checkpoint->modules[m].name) + " " +
             (shape ? safetensors::format_shape(*shape) : shape.error().to_string()) + "\n";
    }
    return out;
  }
};

constexpr const char* k_expected = "mtp.fc [64, 128]\n"
                                   "mtp.layers.0.self_attn.q_proj [128, 64]\n"
                                   "mtp.layers.0.self_attn.k_proj [32, 64]\n"
                                   "mtp.layers.0.self_attn.v_proj [32, 64]\n"
                                   "mtp.layers.0.self_attn.o_proj [64, 64]\n"
                                   "mtp.layers.0.mlp.gate_proj [128, 64]\n"
                                   "mtp.layers.0.mlp.up_proj [128, 64]\n"
                                   "mtp.layers.0.mlp.down_proj [64, 128]\n";

TEST_F(LogicalShapeTest, Gptq) {
  EXPECT_EQ(head_shapes(Packing::gptq, gptq_config("Qwen3_5ForCausalLM", "")), k_expected);
}

TEST_F(LogicalShapeTest, Awq) {
  const std::string config =
      "{\n  \"architectures\": [\"Qwen3_5ForCausalLM\"],\n  \"quantization_config\": {\n" +
      required_fields("awq", "") + "    \"quant_method\": \"awq\"\n  }\n}\n";
  EXPECT_EQ(head_shapes(Packing::awq, config), k_expected);
}

TEST_F(LogicalShapeTest, Fp8KeepsItsShape) {
  const std::string config =
      "{\n  \"architectures\": [\"Qwen3_5ForCausalLM\"],\n  \"quantization_config\": {\n" +
      required_fields("fp8", "") + "    \"quant_method\": \"fp8\"\n  }\n}\n";
  EXPECT_EQ(head_shapes(Packing::fp8, config), k_expected);
}

TEST_F(LogicalShapeTest, PackedWithoutBitsIsRefusedByName) {
  const std::string config =
      "{\n  \"architectures\": [\"Qwen3_5ForCausalLM\"],\n"
      "  \"quantization_config\": {\n    \"quant_method\": \"gptq\"\n  }\n}\n";
  const std::string shapes = head_shapes(Packing::gptq, config);
  EXPECT_EQ(shapes.substr(0, shapes.find('\n')),
            "mtp.fc DIR/model_extra_tensors.safetensors: module 'mtp.fc': cannot tell the dense "
            "shape of its packed weight (no bits in the quantization config)");
}

} // namespace
} // namespace qpatch::test
