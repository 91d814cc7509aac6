// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/mtp_head.hpp>

#include <map>

namespace qpatch::checkpoint {
namespace {

// Read a non-negative integer field from the top level or from text_config.
std::pair<uint64_t, std::string> declared_layers(const json::Json& config) {
  for (const char* key : {"mtp_num_hidden_layers", "num_nextn_predict_layers", "num_mtp_layers"}) {
    for (const json::Json* scope :
         {&config,
          config.contains("text_config") && config["text_config"].is_object()
              ? &config["text_config"]
              : nullptr}) {
      if (scope != nullptr && scope->contains(key) && (*scope)[key].is_number_unsigned()) {
        return {(*scope)[key].get<uint64_t>(), key};
      }
    }
  }
  return {0, ""};
}

uint64_t hidden_layers(const json::Json& config) {
  for (const json::Json* scope :
       {&config,
        config.contains("text_config") && config["text_config"].is_object() ? &config["text_config"]
                                                                            : nullptr}) {
    if (scope != nullptr && scope->contains("num_hidden_layers") &&
        (*scope)["num_hidden_layers"].is_number_unsigned()) {
      return (*scope)["num_hidden_layers"].get<uint64_t>();
    }
  }
  return 0;
}

// True for model.layers.{k} with first <= k < first + count.
bool in_appended_layers(std::string_view name, uint64_t first, uint64_t count) {
  // Kimi-K3 (a VLM) stores its text layers, the draft's among them, under
  // language_model.model.layers.
  constexpr std::string_view vlm = "language_model.";
  if (!name.empty() && name[0] == 'l' && name.substr(0, vlm.size()) == vlm) {
    name.remove_prefix(vlm.size());
  }
  constexpr std::string_view prefix = "model.layers.";
  if (count == 0 || name.substr(0, prefix.size()) != prefix) {
    return false;
  }
  uint64_t k = 0;
  size_t i = prefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') {
    return false;
  }
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && k < 1'000'000; ++i) {
    k = k * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return (i == name.size() || name[i] == '.') && k >= first && k < first + count;
}

// The newer `mtp.` layouts of public checkpoints that no engine naming row models yet (issue 12
// item 6): engines' draft-model sources for them were not traced, so their layer names are
// assumed to be the checkpoint's. (DeepSeek-V4's mtp.{i}.* is vLLM's DeepSeekV4MTP, traced in
// vllm/naming.cpp; an engine without a row for it says so in its own note.)
std::string unmodelled_layout(std::string_view name) {
  if (name == "mtp.fc_embedding" || name == "mtp.fc_hidden") {
    return "Qwen3.8 split mtp.fc_embedding/mtp.fc_hidden";
  }
  return "";
}

} // namespace

MtpHead
find_mtp_head(const json::Json& config, const ModuleList& modules, const Inventory& inventory) {
  MtpHead head;
  std::tie(head.declared, head.declared_by) = declared_layers(config);
  const uint64_t main_layers = hidden_layers(config);
  head.main_layers = main_layers;
  // Per-expert modules of one layer share their experts_name view (module.hpp), and every test
  // below reads no further into a name than its layer index, which that view ("<...>.experts")
  // holds: the previous module's answer stands, without reading 70k names (each a cache miss).
  std::string_view experts_seen;
  bool experts_in_head = false;
  for (uint32_t m = 0; m < modules.size(); ++m) {
    const std::string_view name = modules[m].name;
    const std::string_view experts = modules[m].experts_name;
    const bool same_experts = !experts.empty() && modules[m].shares_experts_view(experts_seen);
    const bool in_head =
        same_experts
            ? experts_in_head
            : name.substr(0, 4) == "mtp." || name.substr(0, 16) == "model.mtp_layers" ||
                  name.substr(0, 10) == "model.mtp." ||
                  in_appended_layers(name, main_layers, main_layers > 0 ? head.declared : 0);
    if (!experts.empty()) {
      experts_seen = experts;
      experts_in_head = in_head;
    }
    if (in_head) {
      head.modules.push_back(m);
      if (head.unmodelled_layout.empty()) {
        head.unmodelled_layout = unmodelled_layout(name);
      }
    }
  }
  if (head.modules.empty()) {
    return head;
  }
  std::map<std::string, size_t> counts;
  std::vector<std::string> order;
  std::vector<std::string> files;
  for (const uint32_t m : head.modules) {
    const Module& module = modules[m];
    std::string key = std::string(to_string(module.kind));
    if (module.kind == ModuleKind::linear || module.kind == ModuleKind::experts) {
      key += " " + (is_quantized(module.format)
                        ? std::string(to_string(module.format))
                        : std::string(to_string(inventory.tensors[module.primary].dtype)));
    }
    if (counts[key]++ == 0) {
      order.push_back(key);
    }
    for (const uint32_t f : module.files) {
      const std::string& file = inventory.files[f].name;
      if (std::find(files.begin(), files.end(), file) == files.end()) {
        files.push_back(file);
      }
    }
  }
  for (const std::string& key : order) {
    // "8 linears BF16", "1 linear BF16": the kind is the first word of the key.
    std::string words = key;
    if (counts[key] != 1) {
      const size_t space = words.find(' ');
      words.insert(space == std::string::npos ? words.size() : space, "s");
    }
    head.summary += (head.summary.empty() ? "" : ", ") + std::to_string(counts[key]) + " " + words;
  }
  std::string in;
  for (const std::string& file : files) {
    in += (in.empty() ? "" : ", ") + file;
  }
  head.summary += " in " + in;
  if (!head.unmodelled_layout.empty()) {
    head.summary += "; " + head.unmodelled_layout + " layout: engine layer names assumed";
  }
  return head;
}

} // namespace qpatch::checkpoint
