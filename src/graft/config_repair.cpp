// SPDX-License-Identifier: Apache-2.0
#include <qpatch/graft/config_repair.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/jsonedit/scan.hpp>

#include <algorithm>

namespace qpatch::graft {
namespace {

// The object at `pointer` (no key, or "text_config") in `doc`, or nullptr.
const json::Json* object_at(const json::Json& doc, const std::vector<std::string>& pointer) {
  const json::Json* at = &doc;
  for (const std::string& key : pointer) {
    if (!at->is_object() || !at->contains(key)) {
      return nullptr;
    }
    at = &(*at)[key];
  }
  return at->is_object() ? at : nullptr;
}

// Add DONOR's head declaration where it sits in DONOR's config (the top level or text_config).
Status add_declaration(quant::ConfigFile& config, const Checkpoint& donor, ConfigRepair& repair) {
  const json::Json& donor_config = donor.configs.files.front().doc;
  const std::string& key = donor.head.declared_by;
  std::vector<std::string> pointer;
  if (!donor_config.contains(key) && config.doc.contains("text_config")) {
    pointer = {"text_config"};
  }
  QP_TRY_ASSIGN(config.text,
                jsonedit::append_member_raw(
                    config.text, pointer, key, std::to_string(donor.head.declared), config.name));
  QP_TRY_ASSIGN(config.doc, json::parse_strict(config.text, config.name));
  repair.declared_key = key;
  repair.declared_value = donor.head.declared;
  return ok_status();
}

struct Replacement {
  jsonedit::Span span; // in DIR's text
  std::string text;    // DONOR's value, as DONOR's file writes it
};

// Put back every list of DIR's config that is a proper prefix of DONOR's at the same key.
Status
put_back_lists(quant::ConfigFile& config, const quant::ConfigFile& donor, ConfigRepair& repair) {
  std::vector<Replacement> replacements;
  for (const std::vector<std::string>& pointer :
       {std::vector<std::string>{}, std::vector<std::string>{"text_config"}}) {
    const json::Json* mine = object_at(config.doc, pointer);
    const json::Json* theirs = object_at(donor.doc, pointer);
    if (mine == nullptr || theirs == nullptr) {
      continue;
    }
    for (const auto& [key, value] : mine->items()) {
      if (!value.is_array() || !theirs->contains(key) || !(*theirs)[key].is_array()) {
        continue;
      }
      const json::Json& full = (*theirs)[key];
      if (full.size() <= value.size() || !std::equal(value.begin(), value.end(), full.begin())) {
        continue;
      }
      std::vector<std::string> path = pointer;
      path.push_back(key);
      const auto span = jsonedit::find_value(config.text, path);
      const auto donor_span = jsonedit::find_value(donor.text, path);
      if (!span || !donor_span) {
        continue;
      }
      replacements.push_back(
          {*span, donor.text.substr(donor_span->begin, donor_span->end - donor_span->begin)});
      repair.lists.push_back((pointer.empty() ? "" : pointer.front() + ".") + key + ": " +
                             std::to_string(value.size()) + " -> " + std::to_string(full.size()) +
                             " items");
    }
  }
  if (replacements.empty()) {
    return ok_status();
  }
  // From the last span back, so the earlier spans stay where they were.
  std::sort(replacements.begin(), replacements.end(), [](const auto& a, const auto& b) {
    return a.span.begin > b.span.begin;
  });
  for (const Replacement& r : replacements) {
    config.text.replace(r.span.begin, r.span.end - r.span.begin, r.text);
  }
  QP_TRY_ASSIGN(config.doc, json::parse_strict(config.text, config.name));
  return ok_status();
}

} // namespace

std::vector<std::string> ConfigRepair::describe() const {
  std::vector<std::string> out;
  if (!declared_key.empty()) {
    out.push_back(declared_key + ": " + std::to_string(declared_value));
  }
  out.insert(out.end(), lists.begin(), lists.end());
  return out;
}

Result<ConfigRepair>
repair_config(quant::ConfigSet& configs, const Checkpoint& dir, const Checkpoint& donor) {
  ConfigRepair repair;
  if (configs.files.empty() || donor.configs.files.empty()) {
    return repair;
  }
  quant::ConfigFile& config = configs.files.front();
  if (dir.head.declared == 0 && donor.head.declared > 0) {
    if (auto added = add_declaration(config, donor, repair); !added) {
      return added.take_error();
    }
  }
  if (auto put_back = put_back_lists(config, donor.configs.files.front(), repair); !put_back) {
    return put_back.take_error();
  }
  return repair;
}

} // namespace qpatch::graft
