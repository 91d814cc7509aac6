// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/util/hash_sort.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>

namespace qpatch::checkpoint {

using util::ends_with;
using util::last_component;

using safetensors::Dtype;

std::string_view to_string(ModuleKind kind) {
  switch (kind) {
  case ModuleKind::linear:
    return "linear";
  case ModuleKind::embedding:
    return "embedding";
  case ModuleKind::norm:
    return "norm";
  case ModuleKind::conv:
    return "conv";
  case ModuleKind::router:
    return "router";
  case ModuleKind::experts:
    return "experts";
  case ModuleKind::other:
    return "other";
  }
  return "other";
}

std::string_view to_string(StorageFormat format) {
  switch (format) {
  case StorageFormat::dense:
    return "dense";
  case StorageFormat::ct_pack_quantized:
    return "ct-pack-quantized";
  case StorageFormat::ct_int8:
    return "ct-int8";
  case StorageFormat::fp8:
    return "fp8";
  case StorageFormat::ct_nvfp4:
    return "ct-nvfp4";
  case StorageFormat::ct_mxfp4:
    return "ct-mxfp4";
  case StorageFormat::ct_mxfp8:
    return "ct-mxfp8";
  case StorageFormat::gptq:
    return "gptq";
  case StorageFormat::awq:
    return "awq";
  case StorageFormat::fp8_block:
    return "fp8-block";
  case StorageFormat::modelopt_nvfp4:
    return "modelopt-nvfp4";
  case StorageFormat::mxfp4:
    return "mxfp4";
  case StorageFormat::mx_fp4:
    return "mx-fp4";
  case StorageFormat::bnb_4bit:
    return "bnb-4bit";
  case StorageFormat::bnb_int8:
    return "bnb-int8";
  case StorageFormat::inconsistent:
    return "inconsistent";
  }
  return "inconsistent";
}

namespace {

// bitsandbytes 4-bit quant state hangs below `weight` (quant-formats.md §1.2). Each ends in 'x',
// 'p' or '4': split_tensor_name tests the suffixes only then.
constexpr std::array<std::string_view, 6> k_bnb_state = {".weight.absmax",
                                                         ".weight.quant_map",
                                                         ".weight.nested_absmax",
                                                         ".weight.nested_quant_map",
                                                         ".weight.quant_state.bitsandbytes__nf4",
                                                         ".weight.quant_state.bitsandbytes__fp4"};
static_assert(std::all_of(k_bnb_state.begin(), k_bnb_state.end(), [](std::string_view suffix) {
  return suffix.back() == 'x' || suffix.back() == 'p' || suffix.back() == '4';
}));

// Parameters that, next to or instead of `weight`, mean "stored quantized" (§1.4). bias,
// k_scale and v_scale are not evidence: the last two belong to the KV-cache scheme.
constexpr std::array<std::string_view, 20> k_companions = {"weight_packed",
                                                           "weight_scale",
                                                           "weight_scale_inv",
                                                           "weight_scale_2",
                                                           "weight_global_scale",
                                                           "weight_zero_point",
                                                           "weight_g_idx",
                                                           "weight_shape",
                                                           "input_scale",
                                                           "input_global_scale",
                                                           "input_zero_point",
                                                           "activation_scale",
                                                           "qweight",
                                                           "qzeros",
                                                           "scales",
                                                           "g_idx",
                                                           "pre_quant_scale",
                                                           "svdquant_lora_a",
                                                           "svdquant_lora_b",
                                                           "SCB"};

bool is_companion(std::string_view param) {
  return std::find(k_companions.begin(), k_companions.end(), param) != k_companions.end() ||
         param.substr(0, 7) == "weight." || ends_with(param, "_blocks") ||
         (ends_with(param, "_scales") && param != "scales");
}

struct Param {
  std::string_view name;
  uint32_t tensor;
};

struct Params {
  util::SmallVector<Param, 6> items;
  const Tensor* get(const Inventory& inventory, std::string_view param) const {
    for (const auto& [name, index] : items) {
      if (name == param) {
        return &inventory.tensors[index];
      }
    }
    return nullptr;
  }
  bool has(std::string_view param) const {
    return std::any_of(items.begin(), items.end(), [&](const Param& p) { return p.name == param; });
  }
};

bool is_float_scale(const Tensor* t) {
  return t != nullptr && safetensors::is_dense_float(t->dtype);
}

bool is_e8m0_scale(const Tensor* t) {
  return t != nullptr && (t->dtype == Dtype::U8 || t->dtype == Dtype::F8_E8M0);
}

// FP4 values stored two a byte: as U8 (shape counts bytes) or, since safetensors #839, as F4
// (shape counts elements).
bool is_fp4_storage(Dtype dtype) {
  return dtype == Dtype::U8 || dtype == Dtype::F4;
}

struct Verdict {
  StorageFormat format = StorageFormat::dense;
  std::string detail;
  std::string_view primary; // parameter name of the deciding weight
};

Verdict inconsistent(std::string detail, std::string_view primary) {
  return {StorageFormat::inconsistent, std::move(detail), primary};
}

Verdict classify_packed(const Inventory& inv, const Params& params, const Tensor& packed) {
  const Tensor* scale = params.get(inv, "weight_scale");
  if (params.has("weight")) {
    return inconsistent("weight_packed and weight are both stored", "weight_packed");
  }
  if (scale == nullptr) {
    return inconsistent("weight_packed without weight_scale", "weight_packed");
  }
  if (packed.dtype == Dtype::I32 || packed.dtype == Dtype::I16 || packed.dtype == Dtype::I8) {
    return {StorageFormat::ct_pack_quantized, "", "weight_packed"};
  }
  if (is_fp4_storage(packed.dtype) && scale->dtype == Dtype::F8_E4M3) {
    return {StorageFormat::ct_nvfp4, "", "weight_packed"};
  }
  if (is_fp4_storage(packed.dtype) && is_e8m0_scale(scale)) {
    return {StorageFormat::ct_mxfp4, "", "weight_packed"};
  }
  return inconsistent("weight_packed " + std::string(to_string(packed.dtype)) +
                          " with weight_scale " + std::string(to_string(scale->dtype)) +
                          " matches no known format",
                      "weight_packed");
}

Verdict classify_qweight(const Inventory& inv, const Params& params, const Tensor& qweight) {
  const Tensor* scales = params.get(inv, "scales");
  if (params.has("weight")) {
    return inconsistent("qweight and weight are both stored", "qweight");
  }
  if (scales == nullptr || !params.has("qzeros")) {
    return inconsistent("qweight without qzeros and scales", "qweight");
  }
  // GPTQ packs the input dimension (qweight [in*bits/32, out]), AWQ the output dimension
  // (qweight [in, out*bits/32]); both store scales [groups, out] (quant-formats.md §2.4).
  if (!params.has("g_idx") && qweight.shape.size() == 2 && scales->shape.size() == 2 &&
      qweight.shape[1] != scales->shape[1]) {
    return {StorageFormat::awq, "", "qweight"};
  }
  return {StorageFormat::gptq, "", "qweight"};
}

// DeepSeek-V4's own format names a quantized linear's scales `scale`, beside `weight` (vLLM
// 017e9f4, models/deepseek_v4/nvidia/dspark.py load_weights: a name ending ".scale" becomes
// ".weight_scale_inv", or the experts' scale parameter for ".experts.N.wK.scale"). FP8 block
// linears: an F8_E4M3 weight with one scale per 128x128 block (F8_E8M0 beside FP4 experts, F32
// beside FP8 ones: DeepseekV4FP8Config.is_scale_e8m0); routed experts: FP4 values two to a
// byte in I8 with one E8M0 exponent per 32 values (MXFP4). Real headers: DeepSeek-V4-Flash
// layers.0.attn.wq_a.weight F8_E4M3 [1024, 4096] + .scale F8_E8M0 [8, 32];
// layers.0.ffn.experts.0.w1.weight I8 [2048, 2048] + .scale F8_E8M0 [2048, 128].
std::optional<Verdict>
classify_sibling_scale(const Inventory& inv, const Params& params, Dtype dtype) {
  const Tensor* scale = params.get(inv, "scale");
  if (scale == nullptr) {
    return std::nullopt;
  }
  if (safetensors::is_float8(dtype) &&
      (scale->dtype == Dtype::F8_E8M0 || scale->dtype == Dtype::F32 || scale->dtype == Dtype::U8)) {
    return Verdict{StorageFormat::fp8_block, "", "weight"};
  }
  if ((dtype == Dtype::I8 || is_fp4_storage(dtype)) &&
      (scale->dtype == Dtype::F8_E8M0 || scale->dtype == Dtype::U8)) {
    return Verdict{StorageFormat::mx_fp4, "", "weight"};
  }
  return std::nullopt;
}

Verdict classify_weight(const Inventory& inv,
                        const Params& params,
                        const Tensor& weight,
                        bool has_companion) {
  const Dtype dtype = weight.dtype;
  if (!has_companion) {
    if (safetensors::is_dense_float(dtype)) {
      return {StorageFormat::dense, "", "weight"};
    }
    if (const auto deepseek_v4 = classify_sibling_scale(inv, params, dtype)) {
      return *deepseek_v4;
    }
    return inconsistent("weight is " + std::string(to_string(dtype)) + " without any scale",
                        "weight");
  }
  if (safetensors::is_dense_float(dtype)) {
    std::string names;
    for (const auto& [param, index] : params.items) {
      if (is_companion(param)) {
        names += (names.empty() ? "" : ", ") + std::string(param);
      }
    }
    return inconsistent("float weight (" + std::string(to_string(dtype)) +
                            ") stored with quantization tensors " + names,
                        "weight");
  }
  const Tensor* scale = params.get(inv, "weight_scale");
  if (safetensors::is_float8(dtype)) {
    if (params.has("weight_scale_inv")) {
      return {StorageFormat::fp8_block, "", "weight"};
    }
    if (is_float_scale(scale)) {
      return {StorageFormat::fp8, "", "weight"};
    }
    if (is_e8m0_scale(scale)) {
      return {StorageFormat::ct_mxfp8, "", "weight"};
    }
  } else if (is_fp4_storage(dtype)) {
    if (dtype == Dtype::U8 && params.has("weight.absmax")) {
      return {StorageFormat::bnb_4bit, "", "weight"};
    }
    if (scale != nullptr && scale->dtype == Dtype::F8_E4M3 && params.has("weight_scale_2")) {
      return {StorageFormat::modelopt_nvfp4, "", "weight"};
    }
    // OCP MX FP4: one E8M0 exponent per 32 values (Quark and ModelOpt MXFP4 exports).
    if (scale != nullptr && (scale->dtype == Dtype::F8_E8M0 || scale->dtype == Dtype::U8)) {
      return {StorageFormat::mx_fp4, "", "weight"};
    }
  } else if (dtype == Dtype::I8) {
    if (scale != nullptr) {
      return {StorageFormat::ct_int8, "", "weight"};
    }
    if (params.has("SCB")) {
      return {StorageFormat::bnb_int8, "", "weight"};
    }
  }
  return inconsistent("weight " + std::string(to_string(dtype)) +
                          " with these scales matches no known format",
                      "weight");
}

Verdict classify(const Inventory& inv, const Params& params) {
  bool has_companion = false;
  bool has_blocks = false;
  for (const auto& [param, index] : params.items) {
    has_companion = has_companion || is_companion(param);
    has_blocks = has_blocks || ends_with(param, "_blocks");
  }
  if (has_blocks) {
    return {StorageFormat::mxfp4, "", params.items.front().name};
  }
  if (const Tensor* packed = params.get(inv, "weight_packed")) {
    return classify_packed(inv, params, *packed);
  }
  if (const Tensor* qweight = params.get(inv, "qweight")) {
    return classify_qweight(inv, params, *qweight);
  }
  if (const Tensor* weight = params.get(inv, "weight")) {
    return classify_weight(inv, params, *weight, has_companion);
  }
  if (has_companion) {
    return inconsistent("quantization tensors without a weight", params.items.front().name);
  }
  // No weight: fused 3-D experts (gate_up_proj, down_proj), GDN state (A_log, dt_bias), biases.
  for (const auto& [param, index] : params.items) {
    if (!safetensors::is_floating(inv.tensors[index].dtype)) {
      return inconsistent(std::string(param) + " is " +
                              std::string(to_string(inv.tensors[index].dtype)) +
                              " without any scale",
                          param);
    }
  }
  return {StorageFormat::dense, "", params.items.front().name};
}

bool is_embedding_name(std::string_view last) {
  return last == "embed_tokens" || last == "embeddings" || last == "word_embeddings" ||
         last == "wte" || last == "wpe" || last == "tok_embeddings" || last == "pos_embed" ||
         last == "embed" || last == "emb" || last == "position_embedding" ||
         last == "token_embedding";
}

ModuleKind kind_of(std::string_view name,
                   const Tensor& primary,
                   std::string_view param,
                   StorageFormat format) {
  const std::string_view last = last_component(name);
  if (last == "experts") {
    return ModuleKind::experts;
  }
  if (is_embedding_name(last)) {
    return ModuleKind::embedding;
  }
  if (last == "gate" || last == "router" || last == "shared_expert_gate") {
    return ModuleKind::router;
  }
  if (is_quantized(format) || param == "weight_packed" || param == "qweight") {
    return ModuleKind::linear;
  }
  if (param != "weight") {
    return ModuleKind::other;
  }
  const size_t rank = primary.shape.size();
  if (rank == 1) {
    return name.find("norm") != std::string_view::npos ? ModuleKind::norm : ModuleKind::other;
  }
  if (rank >= 3) {
    return ModuleKind::conv;
  }
  return rank == 2 ? ModuleKind::linear : ModuleKind::other;
}

// "x.experts.12.gate_proj" -> ("x.experts", 12); also Mixtral's "experts.3.w1".
void set_expert(Module& module) {
  const std::string_view name = module.name;
  const size_t dot_last = util::last_dot(name);
  if (dot_last == std::string_view::npos) {
    return;
  }
  const std::string_view head = name.substr(0, dot_last);
  const size_t dot_index = util::last_dot(head);
  if (dot_index == std::string_view::npos) {
    return;
  }
  const std::string_view index = head.substr(dot_index + 1);
  const std::string_view parent = head.substr(0, dot_index);
  if (index.empty() ||
      !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      last_component(parent) != "experts" || index.size() > 9) {
    return;
  }
  uint64_t number = 0;
  std::from_chars(index.data(), index.data() + index.size(), number); // at most 9 digits
  module.experts_name = parent;
  module.expert_index = number;
}

} // namespace

std::pair<std::string_view, std::string_view> split_tensor_name(std::string_view tensor) {
  // Every bitsandbytes state name ends in 'x', 'p' or '4'; the suffix tests run only then (this
  // runs for each of 200k tensors on a 1T-parameter checkpoint).
  const char last = tensor.empty() ? '\0' : tensor.back();
  if (last == 'x' || last == 'p' || last == '4') {
    for (const std::string_view suffix : k_bnb_state) {
      if (ends_with(tensor, suffix)) {
        const size_t cut = tensor.size() - suffix.size();
        return {tensor.substr(0, cut), tensor.substr(cut + 1)};
      }
    }
  }
  const size_t dot = util::last_dot(tensor);
  if (dot == std::string_view::npos) {
    return {std::string_view(), tensor};
  }
  return {tensor.substr(0, dot), tensor.substr(dot + 1)};
}

std::string_view fused_layer_for(std::string_view last) {
  if (last == "q_proj" || last == "k_proj" || last == "v_proj") {
    return "qkv_proj";
  }
  if (last == "gate_proj" || last == "up_proj") {
    return "gate_up_proj";
  }
  if (last == "q_a_proj" || last == "kv_a_proj_with_mqa") {
    return "fused_qkv_a_proj";
  }
  if (last == "in_proj_qkv" || last == "in_proj_z") {
    return "in_proj_qkvz";
  }
  if (last == "in_proj_b" || last == "in_proj_a") {
    return "in_proj_ba";
  }
  return "";
}

namespace {

// The files of a module and whether an engine loads them all: known only once every header and
// the index are read (file ids follow the index's file order).
void locate(Module& module, const Inventory& inventory) {
  module.files.clear();
  module.loaded = true;
  for (const uint32_t id : module.tensors) {
    const uint32_t file = inventory.tensors[id].file;
    if (std::find(module.files.begin(), module.files.end(), file) == module.files.end()) {
      module.files.push_back(file);
    }
    module.loaded = module.loaded && inventory.loaded(file);
  }
}

// Classify a module from its tensors; run again after merge_split_modules adds to it.
void describe(Module& module, const Inventory& inventory) {
  // The parameters, re-derived from the tensor names rather than kept for every module: each
  // name is "<module name>.<parameter>" (split_tensor_name), or the bare parameter when the
  // module name is empty.
  Params params;
  const size_t cut = module.name.empty() ? 0 : module.name.size() + 1;
  for (const uint32_t t : module.tensors) {
    params.items.push_back({inventory.tensors[t].name.substr(cut), t});
  }
  const Verdict verdict = classify(inventory, params);
  module.format = verdict.format;
  module.detail = verdict.detail;
  for (const auto& [param, index] : params.items) {
    if (param == verdict.primary) {
      module.primary = index;
      break;
    }
  }
  module.kind =
      kind_of(module.name, inventory.tensors[module.primary], verdict.primary, module.format);
  module.experts_name = {};
  module.expert_index.reset();
  set_expert(module);
  module.fused_name.clear();
  if (module.kind == ModuleKind::linear && !module.expert_index) {
    const std::string_view last = last_component(module.name);
    const std::string_view fused = fused_layer_for(last);
    if (!fused.empty()) {
      module.fused_name =
          std::string(module.name.substr(0, module.name.size() - last.size())) + std::string(fused);
    }
  }
}

// A module stored partly in indexed files and partly in a file the index does not name, whose
// tensors together contradict each other (mtp.fc.qweight indexed, a stray dense mtp.fc.weight in
// an unindexed sidecar: issue 24 item 1). Every engine opens only the files the index names
// (vLLM model_loader/weight_utils.py filter_duplicate_safetensors_files, main 017e9f4; SGLang's
// copy of it in the same file, read at 57003bea; transformers loads the shards of weight_map), so
// the module is what the indexed files hold: judged so, and the other copies left out of it (the
// unindexed-file finding names them and never indexes them). One exception is not modelled:
// SGLang's maybe_add_mtp_safetensors (#17166) also loads an unindexed mtp.safetensors for GLM-4.x
// MoE checkpoints with nextn layers.
void keep_what_engines_load(Module& module, const Inventory& inventory) {
  if (module.loaded || module.format != StorageFormat::inconsistent) {
    return;
  }
  util::SmallVector<uint32_t, 6> loaded;
  for (const uint32_t t : module.tensors) {
    if (inventory.loaded(inventory.tensors[t].file)) {
      loaded.push_back(t);
    }
  }
  if (loaded.empty()) {
    return; // nothing indexed: judged whole, as the patch would index it
  }
  Module indexed = module;
  indexed.tensors = loaded;
  describe(indexed, inventory);
  if (indexed.format == StorageFormat::inconsistent) {
    return; // inconsistent in the indexed files already
  }
  locate(indexed, inventory);
  module = std::move(indexed);
}

// An owner whose tensors are not contiguous (rare: writers group a module's tensors) starts one
// run per stretch; fold every later run into the first, keeping tensors in checkpoint order, and
// classify the grown module again.
// Found by sorting the names' hashes: a hash table probe per module missed the cache every time.
void merge_split_modules(ModuleList& modules, const Inventory& inventory) {
  const auto name_of = [&](uint32_t id) { return modules[id].name; };
  const auto sorted = util::sort_by_hash(modules.size(), name_of);
  std::vector<std::pair<uint32_t, uint32_t>> merges; // (later run, first run)
  for (size_t i = 1; i < sorted.size(); ++i) {
    for (size_t j = i; j-- > 0 && sorted[j].hash == sorted[i].hash;) {
      if (name_of(sorted[j].id) == name_of(sorted[i].id)) {
        merges.emplace_back(sorted[i].id, sorted[j].id);
        break;
      }
    }
  }
  if (merges.empty()) {
    return;
  }
  // Runs of one name sort by id, so each later run's first run is already final.
  std::sort(merges.begin(), merges.end());
  std::vector<uint32_t> first_run(modules.size());
  std::vector<bool> merged(modules.size(), false);
  for (uint32_t id = 0; id < modules.size(); ++id) {
    first_run[id] = id;
  }
  std::vector<uint32_t> grown;
  for (const auto& [later, first] : merges) {
    first_run[later] = first_run[first];
    merged[later] = true;
    for (const uint32_t t : modules[later].tensors) {
      modules[first_run[later]].tensors.push_back(t);
    }
    grown.push_back(first_run[later]);
  }
  for (const uint32_t id : grown) {
    describe(modules[id], inventory);
  }
  size_t kept = 0;
  for (size_t id = 0; id < modules.size(); ++id) {
    if (!merged[id]) {
      if (kept != id) { // a self-move would empty the module's short strings
        modules[kept] = std::move(modules[id]);
      }
      ++kept;
    }
  }
  modules.resize(kept);
}

} // namespace

void ModuleBuilder::add(const Inventory& inventory, uint32_t begin, uint32_t end) {
  if (m_modules.empty()) {
    m_modules.reserve(inventory.tensors.capacity() / 2 + 1);
  }
  for (uint32_t i = begin; i < end; ++i) {
    const Tensor& tensor = inventory.tensors[i];
    if (tensor.shadowed) {
      ++m_shadowed;
      continue;
    }
    const std::string_view owner = split_tensor_name(tensor.name).first;
    if (m_modules.empty() || m_modules.back().name != owner) {
      if (!m_modules.empty()) {
        describe(m_modules.back(), inventory); // complete: the next tensor starts another
        share_experts_name(m_modules.back());  // its name is in cache now
      }
      m_modules.emplace_back();
      m_modules.back().name = owner;
    }
    m_modules.back().tensors.push_back(i);
  }
  m_added = end;
}

ModuleList ModuleBuilder::finish(const Inventory& inventory) {
  const auto shadowed = static_cast<size_t>(
      std::count_if(inventory.tensors.begin(), inventory.tensors.end(), [](const Tensor& t) {
        return t.shadowed;
      }));
  if (m_added != inventory.tensors.size() || inventory.renumbered || shadowed != m_shadowed) {
    // Fed while reading, and the inventory changed since: start over on the final one.
    ModuleBuilder fresh;
    fresh.add(inventory, 0, static_cast<uint32_t>(inventory.tensors.size()));
    return fresh.complete(inventory);
  }
  return complete(inventory);
}

void ModuleBuilder::share_experts_name(Module& module) {
  if (module.experts_name.empty()) {
    return;
  }
  if (module.experts_name != m_experts_name) {
    m_experts_name = *m_experts_names.insert(module.experts_name).first;
  }
  module.experts_name = m_experts_name;
}

ModuleList ModuleBuilder::complete(const Inventory& inventory) {
  if (!m_modules.empty()) {
    describe(m_modules.back(), inventory);
    share_experts_name(m_modules.back());
  }
  merge_split_modules(m_modules, inventory);
  for (Module& module : m_modules) {
    locate(module, inventory);
    keep_what_engines_load(module, inventory);
  }
  return std::move(m_modules);
}

Result<Inventory>
read_inventory(const std::filesystem::path& dir, std::string display_dir, ModuleBuilder& modules) {
  InventoryOptions options;
  options.on_tensors = [&](const Inventory& partial, uint32_t first, uint32_t end) {
    modules.add(partial, first, end);
  };
  return read_inventory(dir, std::move(display_dir), options);
}

ModuleList build_modules(const Inventory& inventory) {
  ModuleBuilder builder;
  builder.add(inventory, 0, static_cast<uint32_t>(inventory.tensors.size()));
  return builder.complete(inventory);
}

const Tensor* scale_tensor(const Inventory& inventory, const Module& module) {
  if (!is_quantized(module.format)) {
    return nullptr;
  }
  for (const std::string_view wanted :
       {"weight_scale", "scales", "weight_scale_inv", "weight.absmax", "SCB", "scale"}) {
    for (const uint32_t t : module.tensors) {
      if (split_tensor_name(inventory.tensors[t].name).second == wanted) {
        return &inventory.tensors[t];
      }
    }
  }
  for (const uint32_t t : module.tensors) {
    if (ends_with(split_tensor_name(inventory.tensors[t].name).second, "_scales")) {
      return &inventory.tensors[t];
    }
  }
  return nullptr;
}

} // namespace qpatch::checkpoint
