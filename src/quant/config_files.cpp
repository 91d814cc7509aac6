// SPDX-License-Identifier: Apache-2.0
#include <qpatch/limits.hpp>
#include <qpatch/quant/config_files.hpp>

namespace qpatch::quant {
namespace fs = std::filesystem;

bool ConfigFile::has_config() const {
  const json::Json* node = &doc;
  for (const std::string& token : pointer) {
    if (!node->is_object() || !node->contains(token)) {
      return false;
    }
    node = &(*node)[token];
  }
  return node->is_object();
}

const json::Json& ConfigFile::config() const {
  const json::Json* node = &doc;
  for (const std::string& token : pointer) {
    node = &(*node)[token];
  }
  return *node;
}

const ConfigFile* ConfigSet::active() const {
  for (const ConfigFile& file : files) {
    if (file.name == "config.json" && file.has_config()) {
      return &file;
    }
  }
  // Then ModelOpt's legacy file, then the method's own file (engines.md §2).
  for (const char* name : {"hf_quant_config.json", "quantize_config.json"}) {
    for (const ConfigFile& file : files) {
      if (file.name == name && file.has_config()) {
        return &file;
      }
    }
  }
  return nullptr;
}

std::string declared_method(const ConfigFile& file) {
  if (!file.has_config()) {
    return "";
  }
  const json::Json& config = file.config();
  const auto it = config.find("quant_method");
  if (it != config.end() && it->is_string()) {
    return it->get<std::string>();
  }
  if (file.name == "hf_quant_config.json") {
    return "modelopt";
  }
  return file.name == "quantize_config.json" ? "gptq" : "";
}

const ConfigFile* ConfigSet::find(const std::string& name) const {
  for (const ConfigFile& file : files) {
    if (file.name == name) {
      return &file;
    }
  }
  return nullptr;
}

Error field_error(const ConfigFile& file, const std::string& pointer, const std::string& message) {
  Error error = make_error(ErrorCode::invalid_json, file.name, std::nullopt, pointer, message);
  error.subject_kind = "at";
  return error;
}

std::string pointer_text(const std::vector<std::string>& pointer) {
  std::string out;
  for (const std::string& token : pointer) {
    out += "/" + token;
  }
  return out;
}

namespace {

Result<ConfigFile> read_config_file(const fs::path& dir, const std::string& name) {
  ConfigFile file;
  file.name = name;
  std::error_code ec;
  file.is_symlink = fs::is_symlink(dir / name, ec);
  QP_TRY_ASSIGN(file.text, json::read_file(dir / name, name, limits::k_max_config_size));
  QP_TRY_ASSIGN(file.doc, json::parse_strict(file.text, name));
  if (!file.doc.is_object()) {
    Error error = make_error(
        ErrorCode::invalid_json, name, std::nullopt, "", "expected a JSON object at the top level");
    return error;
  }
  return file;
}

} // namespace

Result<ConfigSet> load_config_files(const fs::path& dir) {
  ConfigSet set;
  QP_TRY_ASSIGN(ConfigFile config, read_config_file(dir, "config.json"));
  config.pointer = {"quantization_config"};
  if (!config.has_config() && config.doc.contains("text_config") &&
      config.doc["text_config"].is_object() &&
      config.doc["text_config"].contains("quantization_config")) {
    config.pointer = {"text_config", "quantization_config"};
  }
  // vLLM reads quantization_config as a dict (model_arch_config_convertor.py
  // _normalize_quantization_config calls quant_cfg.get, vLLM main 017e9f4); null counts as absent
  // (getattr(..., None)). Anything else would crash it, and qpatch would otherwise read "not
  // quantized" into it.
  for (const std::vector<std::string>& where :
       {std::vector<std::string>{"quantization_config"},
        std::vector<std::string>{"text_config", "quantization_config"}}) {
    const json::Json* node = &config.doc;
    for (const std::string& token : where) {
      node =
          node != nullptr && node->is_object() && node->contains(token) ? &(*node)[token] : nullptr;
    }
    if (node != nullptr && !node->is_object() && !node->is_null()) {
      return field_error(config,
                         pointer_text(where),
                         std::string("quantization_config must be a JSON object, not ") +
                             node->type_name());
    }
  }
  const auto& architectures = config.doc.value("architectures", json::Json::array());
  if (architectures.is_array() && !architectures.empty() && architectures[0].is_string()) {
    set.architecture = architectures[0].get<std::string>();
  }
  for (const json::Json* scope :
       {&config.doc,
        config.doc.contains("text_config") && config.doc["text_config"].is_object()
            ? &config.doc["text_config"]
            : nullptr}) {
    if (scope != nullptr && set.num_hidden_layers == 0 && scope->contains("num_hidden_layers") &&
        (*scope)["num_hidden_layers"].is_number_unsigned()) {
      set.num_hidden_layers = (*scope)["num_hidden_layers"].get<uint64_t>();
    }
  }
  set.files.push_back(std::move(config));
  for (const std::string& name : sidecar_names()) {
    std::error_code ec;
    if (!fs::exists(dir / name, ec)) {
      continue;
    }
    QP_TRY_ASSIGN(ConfigFile sidecar, read_config_file(dir, name));
    if (name == "hf_quant_config.json") {
      sidecar.pointer = {"quantization"}; // ModelOpt nests its config one level down
    }
    set.files.push_back(std::move(sidecar));
  }
  return set;
}

} // namespace qpatch::quant
