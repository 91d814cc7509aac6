// SPDX-License-Identifier: Apache-2.0
// Module grouping and classification for every on-disk format (quant-formats.md §2, §3).
#include <qpatch/checkpoint/module.hpp>

#include <gtest/gtest.h>

namespace qpatch::checkpoint {
namespace {

struct T {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
};

Inventory inventory_of(const std::vector<T>& tensors) {
  Inventory inventory;
  inventory.files.push_back(ShardFile{"model.safetensors", false, true, true, 0, 0, 0, 0, {}, {}});
  size_t names_size = 0;
  for (const T& t : tensors) {
    names_size += t.name.size();
  }
  // The inventory owns its names, as read_inventory's does.
  inventory.name_storage.push_back(std::make_unique<char[]>(names_size + 1));
  char* cursor = inventory.name_storage.back().get();
  for (const T& t : tensors) {
    Tensor tensor;
    std::copy(t.name.begin(), t.name.end(), cursor);
    tensor.name = std::string_view(cursor, t.name.size());
    cursor += t.name.size();
    tensor.dtype = *safetensors::parse_dtype(t.dtype);
    tensor.shape = safetensors::Shape::from(t.shape);
    inventory.tensors.push_back(tensor);
  }
  return inventory;
}

// Return "name: kind format [detail]" for each module.
std::vector<std::string> classify(const std::vector<T>& tensors) {
  const Inventory inventory = inventory_of(tensors);
  std::vector<std::string> out;
  for (const Module& m : build_modules(inventory)) {
    std::string line = std::string(m.name) + ": " + std::string(to_string(m.kind)) + " " +
                       std::string(to_string(m.format));
    if (!m.detail.empty()) {
      line += " (" + m.detail + ")";
    }
    out.push_back(line);
  }
  return out;
}

using Lines = std::vector<std::string>;

TEST(Module, SplitsTensorNames) {
  EXPECT_EQ(split_tensor_name("mtp.fc.weight"),
            std::pair(std::string_view("mtp.fc"), std::string_view("weight")));
  EXPECT_EQ(split_tensor_name("x.weight.quant_state.bitsandbytes__nf4").first, "x");
  EXPECT_EQ(split_tensor_name("x.weight.absmax").second, "weight.absmax");
  EXPECT_EQ(split_tensor_name("lm_head").first, "");
}

TEST(Module, DenseLinearNormConvRouterEmbedding) {
  EXPECT_EQ(classify({{"model.embed_tokens.weight", "BF16", {100, 8}},
                      {"mtp.fc.weight", "BF16", {8, 16}},
                      {"mtp.norm.weight", "BF16", {8}},
                      {"l.linear_attn.conv1d.weight", "BF16", {32, 1, 4}},
                      {"l.linear_attn.A_log", "F32", {4}},
                      {"l.linear_attn.dt_bias", "BF16", {4}},
                      {"l.mlp.gate.weight", "BF16", {4, 8}},
                      {"l.mlp.shared_expert_gate.weight", "BF16", {1, 8}}}),
            (Lines{"model.embed_tokens: embedding dense",
                   "mtp.fc: linear dense",
                   "mtp.norm: norm dense",
                   "l.linear_attn.conv1d: conv dense",
                   "l.linear_attn: other dense",
                   "l.mlp.gate: router dense",
                   "l.mlp.shared_expert_gate: router dense"}));
}

TEST(Module, CompressedTensorsPackQuantized) {
  EXPECT_EQ(classify({{"q.weight_packed", "I32", {12288, 640}},
                      {"q.weight_scale", "BF16", {12288, 40}},
                      {"q.weight_shape", "I64", {2}},
                      {"q.weight_zero_point", "I32", {1536, 40}}}),
            (Lines{"q: linear ct-pack-quantized"}));
}

TEST(Module, CompressedTensorsNvfp4AndMxfp4) {
  EXPECT_EQ(classify({{"a.weight_packed", "U8", {8192, 1024}},
                      {"a.weight_scale", "F8_E4M3", {8192, 128}},
                      {"a.weight_global_scale", "F32", {1}},
                      {"b.weight_packed", "U8", {64, 32}},
                      {"b.weight_scale", "U8", {64, 2}}}),
            (Lines{"a: linear ct-nvfp4", "b: linear ct-mxfp4"}));
}

// safetensors #839's F4 (two values a byte, the shape counting values) and F8_E8M0 (MX scale
// exponents) beside the U8 forms: NVFP4 is told from MX by the scales' dtype alone.
TEST(Module, Fp4WeightsAreToldApartByTheirScalesDtype) {
  EXPECT_EQ(
      classify({{"a.weight_packed", "F4", {8192, 2048}},
                {"a.weight_scale", "F8_E4M3", {8192, 128}},
                {"a.weight_global_scale", "F32", {1}},
                {"b.weight_packed", "F4", {64, 64}},
                {"b.weight_scale", "F8_E8M0", {64, 2}},
                {"n.weight", "F4", {64, 64}},
                {"n.weight_scale", "F8_E4M3", {64, 4}},
                {"n.weight_scale_2", "F32", {}},
                {"x.weight", "U8", {64, 32}},
                {"x.weight_scale", "F8_E8M0", {64, 2}},
                {"y.weight", "F4", {64, 64}},
                {"y.weight_scale", "U8", {64, 2}},
                {"z.weight", "F4", {64, 64}},
                {"z.weight_scale", "BF16", {64, 2}}}),
      (Lines{"a: linear ct-nvfp4",
             "b: linear ct-mxfp4",
             "n: linear modelopt-nvfp4",
             "x: linear mx-fp4",
             "y: linear mx-fp4",
             "z: linear inconsistent (weight F4 with these scales matches no known format)"}));
}

// DeepSeek-V4's own names (DeepSeek-V4-Flash's headers): a sibling `scale` is an FP8 linear's
// block scales or the FP4 experts' E8M0 exponents (vLLM's load_weights reads ".scale" as
// ".weight_scale_inv"); they used to be "F8_E4M3 without any scale", inconsistent. A float
// weight beside a `scale` (a norm's, in other families) stays dense, and `hc_attn_scale` is a
// parameter of the layer, not a scale of a linear.
TEST(Module, DeepSeekV4SiblingScalesAreBlockFp8AndMxfp4) {
  EXPECT_EQ(classify({{"layers.0.attn.wq_a.weight", "F8_E4M3", {1024, 4096}},
                      {"layers.0.attn.wq_a.scale", "F8_E8M0", {8, 32}},
                      {"layers.0.ffn.experts.0.w1.weight", "I8", {2048, 2048}},
                      {"layers.0.ffn.experts.0.w1.scale", "F8_E8M0", {2048, 128}},
                      {"layers.0.ffn.shared_experts.w2.weight", "F8_E4M3", {4096, 2048}},
                      {"layers.0.ffn.shared_experts.w2.scale", "F32", {32, 16}},
                      {"layers.0.hc_attn_scale", "F32", {3}},
                      {"norm.weight", "BF16", {4096}},
                      {"norm.scale", "F32", {4096}},
                      {"odd.weight", "F8_E4M3", {64, 64}},
                      {"odd.scale", "BF16", {1, 1}}}),
            (Lines{"layers.0.attn.wq_a: linear fp8-block",
                   "layers.0.ffn.experts.0.w1: linear mx-fp4",
                   "layers.0.ffn.shared_experts.w2: linear fp8-block",
                   "layers.0: other dense",
                   "norm: norm dense",
                   "odd: linear inconsistent (weight is F8_E4M3 without any scale)"}));
  const Inventory inventory = inventory_of({{"layers.0.attn.wq_a.weight", "F8_E4M3", {1024, 4096}},
                                            {"layers.0.attn.wq_a.scale", "F8_E8M0", {8, 32}}});
  const ModuleList modules = build_modules(inventory);
  ASSERT_EQ(modules.size(), 1U);
  EXPECT_EQ(scale_tensor(inventory, modules[0])->name, "layers.0.attn.wq_a.scale");
}

TEST(Module, ScaleTensorIsTheOneThatTellsFormatsApart) {
  const Inventory inventory = inventory_of({{"a.weight", "F4", {64, 64}},
                                            {"a.weight_scale", "F8_E8M0", {64, 2}},
                                            {"g.qweight", "I32", {8, 64}},
                                            {"g.qzeros", "I32", {1, 8}},
                                            {"g.scales", "F16", {1, 64}},
                                            {"d.weight", "BF16", {64, 64}}});
  const ModuleList modules = build_modules(inventory);
  ASSERT_EQ(modules.size(), 3U);
  EXPECT_EQ(scale_tensor(inventory, modules[0])->name, "a.weight_scale");
  EXPECT_EQ(scale_tensor(inventory, modules[1])->name, "g.scales");
  EXPECT_EQ(scale_tensor(inventory, modules[2]), nullptr);
}

TEST(Module, GptqAndAwqAreToldApartByShape) {
  EXPECT_EQ(classify({{"g.qweight", "I32", {512, 4096}}, // [in*4/32, out]
                      {"g.qzeros", "I32", {32, 512}},
                      {"g.scales", "F16", {32, 4096}},
                      {"g.g_idx", "I32", {4096}},
                      {"a.qweight", "I32", {4096, 512}}, // [in, out*4/32]
                      {"a.qzeros", "I32", {32, 512}},
                      {"a.scales", "F16", {32, 4096}}}),
            (Lines{"g: linear gptq", "a: linear awq"}));
}

TEST(Module, Fp8Flavours) {
  EXPECT_EQ(classify({{"b.weight", "F8_E4M3", {256, 256}},
                      {"b.weight_scale_inv", "F32", {2, 2}},
                      {"t.weight", "F8_E4M3", {256, 256}},
                      {"t.weight_scale", "F32", {1}},
                      {"m.weight", "F8_E4M3", {256, 256}},
                      {"m.weight_scale", "U8", {256, 8}}}),
            (Lines{"b: linear fp8-block", "t: linear fp8", "m: linear ct-mxfp8"}));
}

TEST(Module, ModelOptNvfp4BitsandbytesAndInt8) {
  EXPECT_EQ(classify({{"n.weight", "U8", {64, 32}},
                      {"n.weight_scale", "F8_E4M3", {64, 4}},
                      {"n.weight_scale_2", "F32", {}},
                      {"n.input_scale", "F32", {}},
                      {"q.weight", "U8", {2048, 1}},
                      {"q.weight.absmax", "F32", {64}},
                      {"q.weight.quant_map", "F32", {16}},
                      {"q.weight.quant_state.bitsandbytes__nf4", "U8", {100}},
                      {"i.weight", "I8", {64, 64}},
                      {"i.weight_scale", "BF16", {64, 1}}}),
            (Lines{"n: linear modelopt-nvfp4", "q: linear bnb-4bit", "i: linear ct-int8"}));
}

TEST(Module, GptOssMxfp4Experts) {
  EXPECT_EQ(classify({{"l.mlp.experts.gate_up_proj_blocks", "U8", {32, 5760, 90, 16}},
                      {"l.mlp.experts.gate_up_proj_scales", "U8", {32, 5760, 90}},
                      {"l.mlp.experts.gate_up_proj_bias", "BF16", {32, 5760}}}),
            (Lines{"l.mlp.experts: experts mxfp4"}));
}

TEST(Module, FusedThreeDimensionalExpertsAreDense) {
  EXPECT_EQ(classify({{"mtp.layers.0.mlp.experts.gate_up_proj", "BF16", {256, 1024, 2048}},
                      {"mtp.layers.0.mlp.experts.down_proj", "BF16", {256, 2048, 512}}}),
            (Lines{"mtp.layers.0.mlp.experts: experts dense"}));
}

TEST(Module, PerExpertModulesNameTheirExpertsLayer) {
  const Inventory inventory = inventory_of({{"m.mlp.experts.12.gate_proj.weight", "BF16", {4, 8}},
                                            {"m.mlp.experts.12.up_proj.weight", "BF16", {4, 8}}});
  const auto modules = build_modules(inventory);
  ASSERT_EQ(modules.size(), 2U);
  EXPECT_EQ(modules[0].experts_name, "m.mlp.experts");
  EXPECT_EQ(modules[0].expert_index, 12U);
  EXPECT_EQ(modules[0].fused_name, ""); // experts fuse into the experts layer, not gate_up_proj
}

// One view per experts layer (module.hpp): build_layers tells the 70k per-expert modules of a
// 1T-parameter MoE apart by the view's address, without reading their names.
TEST(Module, PerExpertModulesOfOneLayerShareOneExpertsNameView) {
  const Inventory inventory = inventory_of({{"a.mlp.experts.0.up_proj.weight", "BF16", {4, 8}},
                                            {"a.mlp.experts.1.up_proj.weight", "BF16", {4, 8}},
                                            {"b.mlp.experts.0.up_proj.weight", "BF16", {4, 8}},
                                            {"a.mlp.experts.2.up_proj.weight", "BF16", {4, 8}}});
  const ModuleList modules = build_modules(inventory);
  ASSERT_EQ(modules.size(), 4U);
  EXPECT_EQ(modules[0].experts_name, "a.mlp.experts");
  EXPECT_EQ(modules[2].experts_name, "b.mlp.experts");
  EXPECT_EQ(modules[1].experts_name.data(), modules[0].experts_name.data());
  EXPECT_EQ(modules[3].experts_name.data(), modules[0].experts_name.data());
  EXPECT_NE(modules[2].experts_name.data(), modules[0].experts_name.data());
}

// A module whose tensors are interleaved with another's (or split across shards) is still one
// module, at the place of its first tensor, with its tensors in checkpoint order.
TEST(Module, ScatteredTensorsOfOneModuleAreGroupedInCheckpointOrder) {
  EXPECT_EQ(classify({{"a.weight_packed", "I32", {8, 1}},
                      {"b.weight", "BF16", {8, 8}},
                      {"a.weight_scale", "BF16", {8, 1}},
                      {"c.weight", "BF16", {8}},
                      {"a.weight_shape", "I64", {2}},
                      {"b.bias", "BF16", {8}}}),
            (Lines{"a: linear ct-pack-quantized", "b: linear dense", "c: other dense"}));
  const Inventory inventory = inventory_of({{"a.weight_packed", "I32", {8, 1}},
                                            {"b.weight", "BF16", {8, 8}},
                                            {"a.weight_scale", "BF16", {8, 1}},
                                            {"b.bias", "BF16", {8}},
                                            {"a.weight_shape", "I64", {2}}});
  const auto modules = build_modules(inventory);
  ASSERT_EQ(modules.size(), 2U);
  EXPECT_EQ(modules[0].tensors, (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_EQ(modules[1].tensors, (std::vector<uint32_t>{1, 3}));
}

TEST(Module, FusedShardsNameTheirLayer) {
  const Inventory inventory = inventory_of({{"a.self_attn.k_proj.weight", "BF16", {4, 8}},
                                            {"a.mlp.up_proj.weight", "BF16", {4, 8}},
                                            {"a.mlp.down_proj.weight", "BF16", {8, 4}},
                                            {"a.linear_attn.in_proj_z.weight", "BF16", {4, 8}},
                                            {"a.linear_attn.in_proj_b.weight", "BF16", {4, 8}}});
  const auto modules = build_modules(inventory);
  EXPECT_EQ(modules[0].fused_name, "a.self_attn.qkv_proj");
  EXPECT_EQ(modules[1].fused_name, "a.mlp.gate_up_proj");
  EXPECT_EQ(modules[2].fused_name, "");
  EXPECT_EQ(modules[3].fused_name, "a.linear_attn.in_proj_qkvz");
  EXPECT_EQ(modules[4].fused_name, "a.linear_attn.in_proj_ba");
}

TEST(Module, KvCacheScalesAndBiasAreNotQuantizationEvidence) {
  EXPECT_EQ(classify({{"a.k_proj.weight", "BF16", {4, 8}},
                      {"a.k_proj.bias", "BF16", {4}},
                      {"a.k_proj.k_scale", "F32", {}}}),
            (Lines{"a.k_proj: linear dense"}));
}

TEST(Module, InconsistentEvidenceIsReportedNotGuessed) {
  EXPECT_EQ(classify({{"a.weight", "BF16", {4, 8}},
                      {"a.weight_scale", "BF16", {4, 1}},
                      {"b.weight_packed", "I32", {4, 1}},
                      {"b.weight", "BF16", {4, 8}},
                      {"b.weight_scale", "BF16", {4, 1}},
                      {"c.weight_scale", "BF16", {4, 1}},
                      {"d.weight", "I8", {4, 8}}}),
            (Lines{"a: linear inconsistent (float weight (BF16) stored with quantization "
                   "tensors weight_scale)",
                   "b: linear inconsistent (weight_packed and weight are both stored)",
                   "c: other inconsistent (quantization tensors without a weight)",
                   "d: linear inconsistent (weight is I8 without any scale)"}));
}

} // namespace
} // namespace qpatch::checkpoint
