// SPDX-License-Identifier: Apache-2.0
// Modules: tensors grouped by owner (the tensor name minus its parameter, with the bitsandbytes
// quant-state exception) and classified from names, dtypes and shapes alone, following the
// evidence table of shared/reference/quant-formats.md §3. A module is dense, quantized in a
// named format, or inconsistent (evidence that contradicts itself: reported, never guessed).
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/util/small_vector.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace qpatch::checkpoint {

enum class ModuleKind : uint8_t { linear, embedding, norm, conv, router, experts, other };
std::string_view to_string(ModuleKind kind);

enum class StorageFormat : uint8_t {
  dense,
  ct_pack_quantized, // compressed-tensors pack-quantized (WNA16): weight_packed I32
  ct_int8,           // compressed-tensors int/naive-quantized: weight I8 + weight_scale
  fp8,               // weight F8 + float weight_scale (compressed-tensors or ModelOpt FP8)
  ct_nvfp4,          // compressed-tensors nvfp4-pack-quantized: weight_packed U8/F4 + F8_E4M3
  ct_mxfp4,          // compressed-tensors mxfp4-pack-quantized: weight_packed + E8M0 scale
  ct_mxfp8,          // weight F8 + U8 (E8M0) weight_scale
  gptq,              // qweight [in*bits/32, out] + qzeros + scales (AutoGPTQ, auto-round)
  awq,               // qweight [in, out*bits/32] + qzeros + scales
  fp8_block,         // weight F8 + weight_scale_inv (DeepSeek, transformers FP8Linear), or + scale
                     // (DeepSeek-V4)
  modelopt_nvfp4,    // weight U8/F4 + F8_E4M3 weight_scale + weight_scale_2
  mxfp4,             // gpt-oss experts: *_blocks + *_scales
  mx_fp4,   // weight U8/F4 + E8M0 weight_scale (OCP MX: Quark, ModelOpt MXFP4), or I8 + scale
            // (DeepSeek-V4 experts)
  bnb_4bit, // bitsandbytes: weight U8 + weight.absmax family
  bnb_int8, // bitsandbytes LLM.int8: weight I8 + SCB
  inconsistent,
};
std::string_view to_string(StorageFormat format);
inline bool is_quantized(StorageFormat format) {
  return format != StorageFormat::dense && format != StorageFormat::inconsistent;
}

// One per module (71k on a 1T-parameter MoE): the fields are ordered so that no padding is left
// between them.
struct Module {
  std::string_view name;  // points into the inventory's tensor names
  std::string detail;     // why a module is inconsistent
  std::string fused_name; // "x.self_attn.qkv_proj" when the module is one shard
  // "x.mlp.experts" for per-expert modules: a prefix of name, or the same text in the name of
  // the first module of that experts layer (the builder shares one view among them, so that a
  // pass over 70k per-expert modules can tell their layer by its address without reading
  // names: each read is a cache miss on a 1T-parameter layout).
  std::string_view experts_name;
  // True when `other` is the very view this module's experts_name is (the same address and
  // length, so the same experts layer), without reading the name.
  bool shares_experts_view(std::string_view other) const {
    return experts_name.data() == other.data() && experts_name.size() == other.size();
  }
  std::optional<uint64_t> expert_index;
  util::SmallVector<uint32_t, 6> tensors; // every tensor of the module, in checkpoint order
  util::SmallVector<uint32_t, 2> files;   // distinct files, in checkpoint order
  uint32_t primary = 0; // tensor index of the weight that decides (weight, qweight...)
  ModuleKind kind = ModuleKind::other;
  StorageFormat format = StorageFormat::dense;
  bool loaded = true; // every tensor is in a file an engine loads
};

// Every module of a checkpoint (tens of thousands on a 1T-parameter layout).
using ModuleList = util::LargeVector<Module>;

// Return the owner module and parameter of a tensor name ("a.b.weight" -> "a.b", "weight").
std::pair<std::string_view, std::string_view> split_tensor_name(std::string_view tensor);

// The tensor holding a quantized module's scales (weight_scale, scales, weight_scale_inv, a
// gpt-oss *_scales, bitsandbytes' absmax or SCB), or nullptr for a dense module. Its dtype tells
// formats apart that share a weight dtype: F8_E4M3 (NVFP4) or F8_E8M0 (MX) beside F4 weights.
const Tensor* scale_tensor(const Inventory& inventory, const Module& module);

// Group and classify every tensor of `inventory`, in checkpoint order. Shadowed duplicates are
// left out: the copy an engine loads decides.
ModuleList build_modules(const Inventory& inventory);

// build_modules, a file at a time: fed from InventoryOptions::on_tensors while later headers are
// still being read, so that grouping and classifying 70k modules overlaps the reading. finish()
// returns exactly what build_modules returns for the final inventory; when the inventory changed
// after a file was fed (tensors renumbered to follow the index's file order, duplicates
// shadowed), it starts over on the final inventory.
class ModuleBuilder {
public:
  // Group tensors [begin, end), which follow the tensors of the previous call.
  void add(const Inventory& inventory, uint32_t begin, uint32_t end);
  ModuleList finish(const Inventory& inventory);

private:
  friend ModuleList build_modules(const Inventory& inventory);
  // Classify the last module, merge split ones, and place every module in its files.
  ModuleList complete(const Inventory& inventory);

  // Give `module` the experts_name view of the first module of its experts layer.
  void share_experts_name(Module& module);

  ModuleList m_modules;                                 // every module but the last is classified
  std::string_view m_experts_name;                      // the last one shared
  std::unordered_set<std::string_view> m_experts_names; // every one shared, by text
  uint32_t m_added = 0;                                 // tensors [0, m_added) were grouped
  size_t m_shadowed = 0; // of which this many were shadowed, and left out
};

// read_inventory, feeding `modules` as each file's tensors arrive; modules.finish(inventory)
// then gives the modules.
Result<Inventory>
read_inventory(const std::filesystem::path& dir, std::string display_dir, ModuleBuilder& modules);

// Return the fused layer vLLM builds from shard name `last` ("q_proj" -> "qkv_proj").
std::string_view fused_layer_for(std::string_view last);

} // namespace qpatch::checkpoint
