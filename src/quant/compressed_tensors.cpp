// SPDX-License-Identifier: Apache-2.0
#include <qpatch/quant/compressed_tensors.hpp>

namespace qpatch::quant {
namespace {

Result<std::vector<std::string>>
string_list(const ConfigFile& file, const json::Json& value, const std::string& pointer) {
  if (!value.is_array()) {
    return field_error(
        file, pointer, "expected a list of strings, found " + std::string(value.type_name()));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) {
      return field_error(file,
                         pointer + "/" + std::to_string(i),
                         "expected a string, found " + std::string(value[i].type_name()));
    }
    out.push_back(value[i].get<std::string>());
  }
  return out;
}

} // namespace

std::string quant_method(const json::Json& config) {
  const auto it = config.find("quant_method");
  return it != config.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<CtConfig> read_compressed_tensors(const ConfigFile& file) {
  const json::Json& config = file.config();
  const std::string base = pointer_text(file.pointer);
  CtConfig ct;
  if (const auto it = config.find("format"); it != config.end() && it->is_string()) {
    ct.format = it->get<std::string>();
  }
  if (const auto it = config.find("ignore"); it != config.end() && !it->is_null()) {
    QP_TRY_ASSIGN(ct.ignore, string_list(file, *it, base + "/ignore"));
    ct.has_ignore = true;
  }
  const auto groups = config.find("config_groups");
  if (groups == config.end() || groups->is_null()) {
    return ct;
  }
  if (!groups->is_object()) {
    return field_error(file, base + "/config_groups", "expected an object of config groups");
  }
  for (const auto& [name, group] : groups->items()) {
    const std::string pointer = base + "/config_groups/" + name;
    if (!group.is_object()) {
      return field_error(file, pointer, "expected an object");
    }
    CtGroup out;
    out.name = name;
    out.format = ct.format;
    if (const auto it = group.find("format"); it != group.end() && it->is_string()) {
      out.format = it->get<std::string>();
    }
    if (const auto it = group.find("targets"); it != group.end()) {
      QP_TRY_ASSIGN(out.targets, string_list(file, *it, pointer + "/targets"));
    }
    ct.groups.push_back(std::move(out));
  }
  return ct;
}

} // namespace qpatch::quant
