// SPDX-License-Identifier: Apache-2.0
// What every engine's naming row answers: renames, fused layers and the draft's names, asked of
// one ModelInfo whichever engine filled it (each engine's naming.cpp).
#include <qpatch/engine/model_info.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <iterator>

namespace qpatch::engine {

std::string_view ModelInfo::fused_for(std::string_view shard) const {
  for (const auto& [fused, shards] : packed) {
    for (const std::string& name : shards) {
      if (name == shard) {
        return fused;
      }
    }
  }
  return "";
}

namespace {

const std::vector<std::string>* find_shards(const PackedMapping& mapping, std::string_view fused) {
  for (const auto& [name, shards] : mapping) {
    if (name == fused) {
      return &shards;
    }
  }
  return nullptr;
}

std::string apply_renames(const std::vector<std::pair<std::string, std::string>>& renames,
                          std::string_view name) {
  // Every rename is tried in turn on the name as renamed so far (utils.py
  // WeightsMapper._map_name_with_shard: no break after a match).
  std::string out(name);
  for (const auto& [from, to] : renames) {
    if (out.compare(0, from.size(), from) == 0) {
      out = to + out.substr(from.size());
    }
  }
  return out;
}

// Every occurrence of each `from` replaced by its `to`, in turn (WeightsMapper's
// orig_to_new_substr: `key.replace(substr, new_key)`).
std::string apply_substrings(const std::vector<std::pair<std::string, std::string>>& renames,
                             std::string name) {
  for (const auto& [from, to] : renames) {
    for (size_t at = name.find(from); at != std::string::npos;
         at = name.find(from, at + to.size())) {
      name.replace(at, from.size(), to);
    }
  }
  return name;
}

// The layer index a name component spells ("61"), at most six digits; nothing otherwise.
std::optional<uint64_t> layer_index(std::string_view digits) {
  if (digits.empty() || digits.size() > 6) {
    return std::nullopt;
  }
  uint64_t index = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    index = index * 10 + static_cast<uint64_t>(c - '0');
  }
  return index;
}

// GlmMoeDsaForCausalLMNextN._NEXTN_SPEC_WEIGHT_NAMES (glm4_moe.py @07ef650e).
constexpr std::string_view k_nextn_spec_names[] = {"shared_head.norm", "eh_proj", "enorm", "hnorm"};

} // namespace

const std::vector<std::string>* ModelInfo::shards_of(std::string_view fused) const {
  return find_shards(quant_packed ? *quant_packed : packed, fused);
}

const std::vector<std::string>* ModelInfo::shards_of_layer(std::string_view prefix) const {
  const size_t dot = prefix.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? prefix : prefix.substr(dot + 1);
  if (draft_packed && !draft_layer_prefix.empty() &&
      prefix.substr(0, draft_layer_prefix.size()) == draft_layer_prefix) {
    return find_shards(*draft_packed, last);
  }
  return shards_of(last);
}

std::string ModelInfo::to_vllm(std::string_view name) const {
  if (!substring_renames.empty()) {
    return apply_renames(prefix_renames, apply_substrings(substring_renames, std::string(name)));
  }
  return apply_renames(prefix_renames, name);
}

std::string ModelInfo::draft_config_name(const std::string& entry) const {
  return draft_config_mapper.map(entry);
}

bool ConfigMapper::maps(std::string_view method) const {
  return !method.empty() && !(substrings.empty() && prefixes.empty()) &&
         util::contains_word(methods, method);
}

std::string ConfigMapper::map(std::string_view entry) const {
  // models/utils.py WeightsMapper._map_name: `if substr in key: key = key.replace(substr, new,
  // 1); break`, then `if key.startswith(prefix): key = key.replace(prefix, new, 1); break`.
  std::string out(entry);
  for (const auto& [from, to] : substrings) {
    if (const size_t at = out.find(from); at != std::string::npos) {
      out.replace(at, from.size(), to);
      break;
    }
  }
  for (const auto& [from, to] : prefixes) {
    if (out.compare(0, from.size(), from) == 0) {
      out.replace(0, from.size(), to);
      break;
    }
  }
  return out;
}

ModelInfo ModelInfo::without_target_config_mapper() const {
  ModelInfo draft = *this;
  draft.target_config_mapper = ConfigMapper{};
  return draft;
}

bool ModelInfo::in_draft_model(std::string_view prefix) const {
  if (!draft_layer_prefix.empty() &&
      prefix.substr(0, draft_layer_prefix.size()) == draft_layer_prefix) {
    return true;
  }
  // The NextN model's own linears (SGLang's model.eh_proj): the renamed plain linears.
  for (const auto& [from, to] : draft_renames) {
    const std::string_view last =
        std::string_view(to).substr(std::min(to.rfind('.') + 1, to.size()));
    if (prefix == to &&
        std::find(plain_linears.begin(), plain_linears.end(), last) != plain_linears.end()) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> ModelInfo::draft_quark_copies(const std::string& entry) const {
  const std::string& layer = draft_quark_nextn_layer;
  if (layer.empty() || entry.size() <= layer.size() || entry.compare(0, layer.size(), layer) != 0 ||
      entry[layer.size()] != '.') {
    return {};
  }
  // _map_mtp_ckpt_name: the spec weights (shared_head.norm, eh_proj, enorm, hnorm) sit on the
  // NextN model, everything else on its decoder; str.replace(layer_prefix, ..., 1).
  const bool spec =
      std::any_of(std::begin(k_nextn_spec_names),
                  std::end(k_nextn_spec_names),
                  [&](std::string_view part) { return entry.find(part) != std::string::npos; });
  std::vector<std::string> copies = {(spec ? "model" : "model.decoder") +
                                     entry.substr(layer.size())};
  if (entry.find(".mlp.experts.") != std::string::npos) {
    copies.emplace_back("model.decoder.mlp.experts");
  }
  return copies;
}

std::string ModelInfo::layer_prefix(std::string_view name) const {
  if (!renumbered_from.empty() && name.substr(0, renumbered_from.size()) == renumbered_from) {
    const std::string_view rest = name.substr(renumbered_from.size());
    const size_t dot = std::min(rest.find('.'), rest.size());
    if (const auto index = layer_index(rest.substr(0, dot))) {
      return "model.layers." + std::to_string(renumber_base + *index) +
             std::string(rest.substr(dot));
    }
  }
  // Each rename names one draft layer's checkpoint prefix (DeepSeek-V4: mtp.1. ->
  // model.layers.{N+1}.); only names under their common prefix are tried.
  const std::string& renamed_under =
      draft_renames_under.empty() ? draft_prefix : draft_renames_under;
  if (!draft_renames.empty() && name.substr(0, renamed_under.size()) == renamed_under) {
    for (const auto& [from, to] : draft_renames) {
      if (name.substr(0, from.size()) == from) {
        return apply_substrings(substring_renames, to + std::string(name.substr(from.size())));
      }
    }
  }
  // DeepSeek/GLM build the draft's shared head as model.layers.{N}.head (engines.md §10.2).
  if (is_draft_shared_head(name)) {
    return draft_layer_of(name) + "head";
  }
  // vLLM names a layer by where the model class builds it, which is where the mapper sends its
  // weights: "lm_head.weight" goes to "language_model.lm_head.weight", so the Qwen3.5 VLM's head
  // is built as language_model.lm_head (qwen3_5.py Qwen3_5ForConditionalGeneration.__init__:
  // Qwen3_5ForCausalLM(prefix="language_model")), although a config entry "lm_head" is never
  // renamed ("lm_head." does not prefix it; utils.py WeightsMapper._map_name_with_shard).
  std::string renamed = apply_renames(separate_layer_names ? layer_renames : prefix_renames,
                                      apply_substrings(substring_renames, std::string(name)) + ".");
  renamed.pop_back();
  for (const auto& [under, from, to] : component_renames) {
    if (renamed.compare(0, under.size(), under) == 0 && renamed.size() > from.size() &&
        renamed.compare(renamed.size() - from.size(), from.size(), from) == 0 &&
        renamed[renamed.size() - from.size() - 1] == '.') {
      renamed = renamed.substr(0, renamed.size() - from.size()) + to;
    }
  }
  return renamed;
}

std::string ModelInfo::draft_layer_of(std::string_view name) const {
  if (draft_prefix.empty()) {
    return "";
  }
  if (name.substr(0, draft_prefix.size()) == draft_prefix) {
    return draft_prefix;
  }
  constexpr std::string_view k_layers = "model.layers.";
  if (num_hidden_layers == 0 || draft_prefix.substr(0, k_layers.size()) != k_layers ||
      name.substr(0, k_layers.size()) != k_layers) {
    return "";
  }
  const std::string_view rest = name.substr(k_layers.size());
  const size_t dot = rest.find('.');
  const auto index =
      dot == std::string_view::npos ? std::nullopt : layer_index(rest.substr(0, dot));
  // At most 64 draft layers after the main ones: no published head has more than 3.
  if (!index || *index < num_hidden_layers || *index >= num_hidden_layers + 64) {
    return "";
  }
  return std::string(name.substr(0, k_layers.size() + dot + 1));
}

bool ModelInfo::is_draft_shared_head(std::string_view name) const {
  constexpr std::string_view k_shared_head = "shared_head.head";
  const std::string layer = draft_layer_of(name);
  return !layer.empty() && name.substr(layer.size()) == k_shared_head;
}

bool ModelInfo::is_plain_linear(std::string_view name) const {
  const size_t dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  const bool in_mtp = !draft_layer_of(name).empty();
  return in_mtp &&
         std::find(plain_linears.begin(), plain_linears.end(), last) != plain_linears.end();
}

bool ModelInfo::dense_but_bitsandbytes_for(std::string_view name) const {
  const auto& [part, lasts] = dense_but_bitsandbytes;
  return !part.empty() && name.find(part) != std::string_view::npos &&
         std::find(lasts.begin(), lasts.end(), util::last_component(name)) != lasts.end();
}

bool ModelInfo::built_without_compressed_tensors_config_for(std::string_view name) const {
  return std::any_of(
      built_without_compressed_tensors_config.begin(),
      built_without_compressed_tensors_config.end(),
      [&](const std::string& prefix) { return name.substr(0, prefix.size()) == prefix; });
}

std::string_view ModelInfo::needs_quantized_because(std::string_view prefix) const {
  const size_t dot = prefix.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? prefix : prefix.substr(dot + 1);
  for (const auto& [component, why] : needs_quantized) {
    if (component == last) {
      return why;
    }
  }
  return "";
}

bool ModelInfo::in_built_dense_component(std::string_view name) const {
  return std::any_of(
      built_dense_components.begin(), built_dense_components.end(), [&](const std::string& c) {
        const size_t at = name.find(c);
        return at != std::string_view::npos && (at == 0 || name[at - 1] == '.') &&
               at + c.size() < name.size() && name[at + c.size()] == '.';
      });
}

bool ModelInfo::built_without_quant_config_for(std::string_view name) const {
  if (in_built_dense_component(name)) {
    return true;
  }
  return std::any_of(
      built_without_quant_config.begin(),
      built_without_quant_config.end(),
      [&](const std::string& prefix) { return name.substr(0, prefix.size()) == prefix; });
}

} // namespace qpatch::engine
