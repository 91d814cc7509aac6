// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/layers.hpp>
#include <qpatch/util/name_index.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace qpatch::engine {

using util::last_component;
using util::parent_of;

using checkpoint::Module;
using checkpoint::ModuleKind;
using checkpoint::ModuleList;

namespace {

// vLLM's layer classes for a Linear, by the (fused) layer's last name component. Only the
// class-name target rule reads this, as a case-insensitive substring test.
std::string_view linear_class(std::string_view last) {
  if (last == "qkv_proj" || last == "qkv") {
    return "QKVParallelLinear";
  }
  if (last == "gate_up_proj" || last == "in_proj_qkvz" || last == "in_proj_ba" ||
      last == "fused_qkv_a_proj" || last == "wk_weights_proj" || last == "fused_wqa_wkv") {
    return "MergedColumnParallelLinear";
  }
  if (last == "in_proj_qkvgfab") {
    return "_KimiGDNMergedColumnParallelLinear"; // kimi_k3/nvidia/kda.py, a subclass of the above
  }
  if (last == "o_proj" || last == "down_proj" || last == "out_proj" || last == "proj" ||
      last == "linear_fc2" || last == "fc2" || last == "dense") {
    return "RowParallelLinear";
  }
  return "ColumnParallelLinear";
}

// With an MTP head on disk, the draft's own ParallelLMHead over the checkpoint's lm_head, where
// it is named differently from the target's (ModelInfo::draft_lm_head). Not indexed by name: it
// is the same checkpoint layer judged a second time.
void add_draft_lm_head(std::vector<Layer>& layers,
                       const ModuleList& modules,
                       const ModelInfo& model) {
  if (model.draft_lm_head.empty() || !model.engine_layers) {
    return;
  }
  const bool has_mtp = std::any_of(modules.begin(), modules.end(), [](const Module& module) {
    return module.name.substr(0, 4) == "mtp.";
  });
  const auto head = std::find_if(layers.begin(), layers.end(), [](const Layer& layer) {
    return layer.cls == "ParallelLMHead" && layer.name == "lm_head";
  });
  if (!has_mtp || head == layers.end() || head->prefix == model.draft_lm_head) {
    return;
  }
  Layer draft = *head;
  draft.prefix = model.draft_lm_head;
  draft.draft = true;
  layers.push_back(std::move(draft));
}

// Shards fused only beside a sibling (ModelInfo::shard_needs_sibling): the module names,
// gathered only for a model that has such shards.
class SiblingIndex {
public:
  SiblingIndex(const ModuleList& modules, const ModelInfo& model) : m_model(model) {
    if (!model.shard_needs_sibling.empty()) {
      for (const Module& module : modules) {
        m_names.insert(module.name);
      }
    }
  }
  // Whether shard `last` of module `name` has the sibling it is fused beside (true for a shard
  // that needs none).
  bool present(std::string_view name, std::string_view last) const {
    for (const auto& [shard, sibling] : m_model.shard_needs_sibling) {
      if (shard == last) {
        return m_names.count(parent_of(name) + sibling) > 0;
      }
    }
    return true;
  }

private:
  const ModelInfo& m_model;
  std::unordered_set<std::string_view> m_names;
};

struct LinearLayer {
  std::string name; // checkpoint naming, fused where the model fuses it
  LayerKind kind = LayerKind::linear;
};

// The layer an ordinary linear module `name` is built into, and whether it gets a quant config.
LinearLayer
linear_layer(std::string_view name, const ModelInfo& model, const SiblingIndex& siblings) {
  const std::string_view last = last_component(name);
  // A dense component's modules keep their own names (DeepSeek-V4's compressor wkv/wgate).
  std::string_view fused =
      model.in_built_dense_component(name) ? std::string_view() : model.fused_for(last);
  if (!fused.empty() && !siblings.present(name, last)) {
    fused = {}; // Kimi-K3's MLA g_proj: no q_proj beside it, a layer of its own
  }
  LinearLayer out;
  out.name = fused.empty() ? std::string(name) : parent_of(name) + std::string(fused);
  const auto& dense = model.built_dense_layers;
  if (model.built_without_quant_config_for(name) || model.dense_but_bitsandbytes_for(name) ||
      std::find(dense.begin(), dense.end(), last_component(out.name)) != dense.end()) {
    out.kind = LayerKind::built_dense;
  }
  return out;
}

// Only embed_tokens can get a quant config, and only where the class gives it one.
LayerKind embedding_kind(std::string_view last, const ModelInfo& model) {
  return last == "embed_tokens" && model.embedding_quant_config ? LayerKind::embedding
                                                                : LayerKind::built_dense;
}

// Convolutions and routers are built without a quant config, except the router `gate` of a
// class that gives it one (ModelInfo::router_quant_config: vLLM's Qwen3-MoE family).
LayerKind router_or_conv_kind(ModuleKind kind, std::string_view last, const ModelInfo& model) {
  return kind == ModuleKind::router && model.router_quant_config && last == "gate"
             ? LayerKind::linear
             : LayerKind::built_dense;
}

// The checkpoint's lm_head, or a draft's own head stored as a linear of its layer.
bool is_lm_head(std::string_view name, std::string_view last, const ModelInfo& model) {
  return last == "lm_head" || (!model.draft_head_prefix.empty() &&
                               (model.layer_prefix(name) == model.draft_head_prefix ||
                                model.is_draft_shared_head(name)));
}

} // namespace

std::vector<Layer> build_layers(const ModuleList& modules, const ModelInfo& model) {
  std::vector<Layer> layers;
  // Keyed by the layers' own names: a lookup builds no string.
  util::NameIndex by_name;
  const auto name_of = [&](uint32_t id) { return std::string_view(layers[id].name); };
  // The layer the previous module went to: consecutive modules (a layer's shards, an MoE
  // layer's experts) mostly share one, though it is seldom the newest layer (the Kimi layout's
  // 71k modules come in 4,700 runs, whose layers were mostly made by an earlier shard's run).
  std::optional<uint32_t> previous;
  const auto layer_for =
      [&](std::string_view name, LayerKind kind, std::string_view cls) -> Layer& {
    if (previous && layers[*previous].name == name) {
      return layers[*previous];
    }
    if (const auto found = by_name.find(name, name_of)) {
      previous = *found;
      return layers[*found];
    }
    Layer layer;
    layer.kind = kind;
    layer.name = std::string(name);
    layer.prefix = model.layer_prefix(name);
    layer.cls = std::string(cls);
    layers.push_back(std::move(layer));
    previous = static_cast<uint32_t>(layers.size() - 1);
    by_name.insert(name, *previous, name_of);
    return layers.back();
  };
  const SiblingIndex siblings(modules, model);
  std::string_view experts_seen; // the last per-expert module's experts_name, and its layer
  uint32_t experts_layer = 0;
  for (uint32_t m = 0; m < modules.size(); ++m) {
    const Module& module = modules[m];
    const std::string_view name = module.name;
    if (!model.engine_layers && module.experts_name.empty()) {
      // transformers: every linear module is its own nn.Linear. Per-expert modules stay grouped
      // and are judged through expert 0, as for vLLM: 1T-parameter MoEs have ~70k of them.
      if (module.kind == ModuleKind::linear) {
        // lm_head too: the library's "Linear" target reaches every nn.Linear.
        layer_for(name, LayerKind::linear, "Linear").modules.push_back(m);
      } else if (module.kind == ModuleKind::embedding) {
        layer_for(name, LayerKind::embedding, "Embedding").modules.push_back(m);
      }
      continue;
    }
    if (!module.experts_name.empty()) {
      // Per-expert modules share their experts_name view (module.hpp): the same address is the
      // same layer, told without reading the name.
      if (!module.shares_experts_view(experts_seen)) {
        experts_seen = module.experts_name;
        experts_layer = static_cast<uint32_t>(
            &layer_for(experts_seen, LayerKind::experts, "RoutedExperts") - layers.data());
      }
      layers[experts_layer].modules.push_back(m);
      continue;
    }
    const std::string_view last = last_component(name);
    switch (module.kind) {
    case ModuleKind::experts:
      layer_for(name, LayerKind::experts, "RoutedExperts").modules.push_back(m);
      break;
    case ModuleKind::embedding:
      layer_for(name, embedding_kind(last, model), "VocabParallelEmbedding").modules.push_back(m);
      break;
    case ModuleKind::router:
    case ModuleKind::conv:
      layer_for(name, router_or_conv_kind(module.kind, last, model), "ReplicatedLinear")
          .modules.push_back(m);
      break;
    case ModuleKind::linear: {
      if (model.is_plain_linear(name)) {
        layer_for(name, LayerKind::built_dense, "Linear").modules.push_back(m);
        break;
      }
      if (is_lm_head(name, last, model)) {
        layer_for(name,
                  model.lm_head_quant_config ? LayerKind::lm_head : LayerKind::built_dense,
                  "ParallelLMHead")
            .modules.push_back(m);
        break;
      }
      const LinearLayer linear = linear_layer(name, model, siblings);
      layer_for(linear.name, linear.kind, linear_class(last_component(linear.name)))
          .modules.push_back(m);
      break;
    }
    case ModuleKind::norm:
    case ModuleKind::other:
      break;
    }
  }
  add_draft_lm_head(layers, modules, model);
  return layers;
}

} // namespace qpatch::engine
