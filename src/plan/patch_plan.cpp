// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/jsonedit/scan.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/plan/patch_plan.hpp>

#include <algorithm>
#include <set>

namespace qpatch::plan {

using diagnose::ArrayChange;
using json::Json;

namespace {

Error internal(const std::string& file, const std::string& message) {
  return make_error(ErrorCode::internal,
                    file,
                    std::nullopt,
                    "",
                    "internal error: the planned edit " + message + "; nothing was written");
}

Json::json_pointer to_pointer(const std::vector<std::string>& tokens) {
  Json::json_pointer pointer;
  for (const std::string& token : tokens) {
    pointer /= token;
  }
  return pointer;
}

// Give the key at `pointer` the empty container `raw` ("[]" or "{}"): a member that holds
// null (or any other non-container, which the engines read as absent) is replaced in place, an
// absent one is appended to its object.
Result<std::string> create_container(const std::string& text,
                                     const std::vector<std::string>& pointer,
                                     const std::string& raw,
                                     const std::string& file) {
  if (const auto span = jsonedit::find_value(text, pointer)) {
    return text.substr(0, span->begin) + raw + text.substr(span->end);
  }
  const std::vector<std::string> parent(pointer.begin(), pointer.end() - 1);
  return jsonedit::append_member_raw(text, parent, pointer.back(), raw, file);
}

// Apply `change` to `text` (creating the array first when the key is absent or null).
Result<std::string> apply_change(const std::string& text, const ArrayChange& change) {
  std::string current = text;
  if (change.create) {
    QP_TRY_ASSIGN(current, create_container(current, change.pointer, "[]", change.file));
  }
  jsonedit::ArrayEdit edit{change.pointer, change.remove, change.append};
  return jsonedit::edit_array(current, edit, change.file);
}

// The document `change` should produce, computed on the parsed form.
void apply_change(Json& doc, const ArrayChange& change) {
  Json& array = doc[to_pointer(change.pointer)];
  if (!array.is_array()) {
    array = Json::array();
  }
  Json kept = Json::array();
  for (size_t i = 0; i < array.size(); ++i) {
    if (std::find(change.remove.begin(), change.remove.end(), i) == change.remove.end()) {
      kept.push_back(array[i]);
    }
  }
  for (const std::string& value : change.append) {
    kept.push_back(value);
  }
  array = std::move(kept);
}

// Apply an object change to `text` (creating the object first when the key is absent or null).
Result<std::string> apply_change(const std::string& text, const diagnose::ObjectChange& change) {
  std::string current = text;
  if (change.create) {
    QP_TRY_ASSIGN(current, create_container(current, change.pointer, "{}", change.file));
  }
  jsonedit::ObjectEdit edit{change.pointer, change.remove, {}, change.append};
  for (const std::string& key : change.prepend) {
    edit.prepend.emplace_back(key, "{}");
  }
  return jsonedit::edit_object(current, edit, change.file);
}

void apply_change(Json& doc, const diagnose::ObjectChange& change) {
  Json& object = doc[to_pointer(change.pointer)];
  Json rebuilt = Json::object();
  for (const std::string& key : change.prepend) {
    rebuilt[key] = Json::object();
  }
  if (object.is_object()) {
    for (const auto& [key, value] : object.items()) {
      if (std::find(change.remove.begin(), change.remove.end(), key) == change.remove.end()) {
        rebuilt[key] = value;
      }
    }
  }
  for (const auto& [key, raw] : change.append) {
    rebuilt[key] = Json::parse(raw);
  }
  object = std::move(rebuilt);
}

// Parse `after` and compare it with `intended`: anything else changed means a bug.
Status verify(const std::string& file, const std::string& after, const Json& intended) {
  auto parsed = json::parse_strict(after, file);
  if (!parsed) {
    return internal(file, "does not parse (" + parsed.error().message + ")");
  }
  if (!json::same_document(*parsed, intended)) {
    return internal(file, "changed more than intended");
  }
  return ok_status();
}

// The sidecar's config object as a member value of config.json's top-level object: the
// sidecar's own bytes (after its edits, with `quant_method` added when it declares none), each
// line moved one indent unit in so it nests like config.json's other members. A config.json on
// one line gets the object on one line.
// Assumes the sidecar indents like config.json (both come from json.dumps(indent=2) in practice).
Result<std::string> inserted_value(const std::string& config_text,
                                   const quant::ConfigFile& sidecar,
                                   const diagnose::ConfigInsert& insert) {
  std::string text = sidecar.text;
  if (!insert.quant_method.empty()) {
    QP_TRY_ASSIGN(text,
                  jsonedit::append_member_raw(text,
                                              sidecar.pointer,
                                              "quant_method",
                                              jsonedit::encode_string(insert.quant_method, true),
                                              sidecar.name));
  }
  const auto span = jsonedit::find_value(text, sidecar.pointer);
  if (!span) {
    return internal(sidecar.name, "found no quantization config to copy");
  }
  const std::string object = text.substr(span->begin, span->end - span->begin);
  const jsonedit::FileStyle style = jsonedit::detect_style(config_text);
  std::string out;
  if (config_text.find('\n') == std::string::npos) {
    // One line as json.dumps writes it: a line break and its indent become one space after a
    // comma, nothing elsewhere (strings hold no raw line breaks, so this touches no value).
    for (size_t i = 0; i < object.size(); ++i) {
      if (object[i] == '\r' || object[i] == '\n') {
        while (i + 1 < object.size() && (object[i + 1] == ' ' || object[i + 1] == '\t' ||
                                         object[i + 1] == '\r' || object[i + 1] == '\n')) {
          ++i;
        }
        out += !out.empty() && out.back() == ',' ? " " : "";
      } else {
        out += object[i];
      }
    }
    return out;
  }
  for (size_t i = 0; i < object.size(); ++i) {
    if (object[i] == '\r' && i + 1 < object.size() && object[i + 1] == '\n') {
      continue;
    }
    if (object[i] == '\n') {
      out += style.newline + style.indent_unit;
    } else {
      out += object[i];
    }
  }
  return out;
}

// Copy the sidecar's config into config.json (diagnose's quantized_without_config), after the
// sidecar's own edits so that both say the same.
Status
apply_insert(const diagnose::ConfigInsert& insert, quant::ConfigSet& patched, PatchPlan& plan) {
  quant::ConfigFile* target = nullptr;
  const quant::ConfigFile* sidecar = nullptr;
  for (quant::ConfigFile& file : patched.files) {
    target = file.name == insert.file ? &file : target;
    sidecar = file.name == insert.from ? &file : sidecar;
  }
  if (target == nullptr || sidecar == nullptr) {
    return internal(insert.file, "names a file that was not read");
  }
  QP_TRY_ASSIGN(const std::string value, inserted_value(target->text, *sidecar, insert));
  const std::vector<std::string> parent(insert.pointer.begin(), insert.pointer.end() - 1);
  QP_TRY_ASSIGN(std::string after,
                jsonedit::append_member_raw(
                    target->text, parent, insert.pointer.back(), value, target->name));
  Json intended = target->doc;
  Json copied = sidecar->config();
  if (!insert.quant_method.empty()) {
    copied["quant_method"] = insert.quant_method;
  }
  intended[to_pointer(insert.pointer)] = std::move(copied);
  if (auto status = verify(target->name, after, intended); !status) {
    return status;
  }
  auto existing = std::find_if(plan.changes.begin(), plan.changes.end(), [&](const FileChange& c) {
    return c.file == target->name;
  });
  if (existing == plan.changes.end()) {
    FileChange change;
    change.file = target->name;
    change.before = target->text;
    change.is_symlink = target->is_symlink;
    existing = plan.changes.insert(plan.changes.begin(), std::move(change)); // configs first
  }
  existing->added.push_back(quant::pointer_text(insert.pointer).substr(1));
  existing->after = after;
  QP_TRY_ASSIGN(target->doc, json::parse_strict(after, target->name));
  target->text = std::move(after);
  target->pointer = insert.pointer;
  return ok_status();
}

} // namespace

namespace {

// The diagnosis' edits of one config file applied to its text (`after`) and to its document
// (`intended`), which verify() compares; `change` records what was added and removed.
Status apply_edits(const diagnose::Diagnosis& diagnosis,
                   const quant::ConfigFile& file,
                   std::string& after,
                   Json& intended,
                   FileChange& change) {
  for (const ArrayChange& edit : diagnosis.array_changes) {
    if (edit.file != file.name) {
      continue;
    }
    QP_TRY_ASSIGN(after, apply_change(after, edit));
    apply_change(intended, edit);
    change.added.insert(change.added.end(), edit.append.begin(), edit.append.end());
    change.removed.insert(
        change.removed.end(), edit.removed_values.begin(), edit.removed_values.end());
  }
  for (const diagnose::ObjectChange& edit : diagnosis.object_changes) {
    if (edit.file != file.name) {
      continue;
    }
    QP_TRY_ASSIGN(after, apply_change(after, edit));
    apply_change(intended, edit);
    if (edit.reported) {
      const auto& [added, removed] = *edit.reported;
      change.added.insert(change.added.end(), added.begin(), added.end());
      change.removed.insert(change.removed.end(), removed.begin(), removed.end());
      continue;
    }
    change.added.insert(change.added.end(), edit.prepend.begin(), edit.prepend.end());
    for (const auto& [key, raw] : edit.append) {
      change.added.push_back(key);
    }
    change.removed.insert(change.removed.end(), edit.remove.begin(), edit.remove.end());
  }
  return ok_status();
}

// The index entries the diagnosis adds (tensors of a file it does not list), appended to
// weight_map and verified on the index's own parser; `reindexed` is the inventory as an engine
// will read it after the patch (the added files indexed).
Result<FileChange> add_index_entries(const diagnose::Diagnosis& diagnosis,
                                     const checkpoint::Inventory& inventory,
                                     checkpoint::Inventory& reindexed) {
  const std::string name(checkpoint::k_index_file_name);
  QP_TRY_ASSIGN(std::string text,
                json::read_file(inventory.dir / name, name, limits::k_max_index_size));
  FileChange change;
  change.file = name;
  change.before = text;
  std::error_code ec;
  change.is_symlink = std::filesystem::is_symlink(inventory.dir / name, ec);
  QP_TRY_ASSIGN(change.after,
                jsonedit::append_members(text, {"weight_map"}, diagnosis.index_additions, name));
  // Verify on the index's own parser (nlohmann's ordered_json would be quadratic on 200k
  // entries): every old entry kept in order, the new ones appended.
  QP_TRY_ASSIGN(const checkpoint::IndexFile old_index, checkpoint::parse_index(text, name));
  auto new_index = checkpoint::parse_index(change.after, name);
  if (!new_index) {
    return internal(name, "does not parse (" + new_index.error().message + ")");
  }
  const size_t old_count = old_index.entries.size();
  bool same = new_index->entries.size() == old_count + diagnosis.index_additions.size();
  for (size_t i = 0; same && i < new_index->entries.size(); ++i) {
    const auto& entry = new_index->entries[i];
    const std::string& shard = new_index->shards[entry.shard];
    if (i < old_count) {
      same = entry.tensor == old_index.entries[i].tensor &&
             shard == old_index.shards[old_index.entries[i].shard];
    } else {
      same = entry.tensor == diagnosis.index_additions[i - old_count].first &&
             shard == diagnosis.index_additions[i - old_count].second;
    }
  }
  if (!same) {
    return internal(name, "changed more than intended");
  }
  for (const auto& [tensor, file] : diagnosis.index_additions) {
    change.added.push_back(tensor);
  }
  // Judge the patched checkpoint as an engine will load it: the added file is indexed now.
  reindexed = inventory;
  std::set<std::string> added_files;
  for (const auto& [tensor, file] : diagnosis.index_additions) {
    added_files.insert(file);
  }
  for (auto& file : reindexed.files) {
    file.indexed = file.indexed || added_files.count(file.name) > 0;
  }
  reindexed.problems.erase(std::remove_if(reindexed.problems.begin(),
                                          reindexed.problems.end(),
                                          [&](const checkpoint::InventoryProblem& p) {
                                            return p.code ==
                                                       checkpoint::ProblemCode::unindexed_file &&
                                                   added_files.count(p.path) > 0;
                                          }),
                           reindexed.problems.end());
  return change;
}

} // namespace

Result<PatchPlan> plan_patch(const diagnose::Diagnosis& diagnosis,
                             const quant::ConfigSet& configs,
                             const checkpoint::Inventory& inventory,
                             const diagnose::DiagnoseOptions& options,
                             const checkpoint::ModuleList* modules) {
  PatchPlan plan;
  for (const diagnose::Finding& finding : diagnosis.findings) {
    if (!finding.fixable) {
      plan.left_unfixable.push_back(finding);
    }
  }
  quant::ConfigSet patched = configs;
  for (quant::ConfigFile& file : patched.files) {
    std::string after = file.text;
    Json intended = file.doc;
    FileChange change;
    change.file = file.name;
    change.before = file.text;
    change.is_symlink = file.is_symlink;
    if (auto status = apply_edits(diagnosis, file, after, intended, change); !status) {
      return status.take_error();
    }
    if (after == file.text) {
      continue;
    }
    if (auto status = verify(file.name, after, intended); !status) {
      return status.take_error();
    }
    QP_TRY_ASSIGN(file.doc, json::parse_strict(after, file.name));
    file.text = after;
    change.after = std::move(after);
    plan.changes.push_back(std::move(change));
  }
  if (diagnosis.config_insert) {
    if (auto status = apply_insert(*diagnosis.config_insert, patched, plan); !status) {
      return status.take_error();
    }
  }
  checkpoint::Inventory reindexed;
  const checkpoint::Inventory* judged = &inventory;
  if (!diagnosis.index_additions.empty()) {
    QP_TRY_ASSIGN(FileChange change, add_index_entries(diagnosis, inventory, reindexed));
    judged = &reindexed;
    plan.changes.push_back(std::move(change));
  }
  if (plan.empty()) {
    return plan;
  }
  // Re-judge: every finding the patch claimed to fix must be gone.
  const checkpoint::ModuleList rebuilt = modules != nullptr && judged == &inventory
                                             ? checkpoint::ModuleList{}
                                             : checkpoint::build_modules(*judged);
  const checkpoint::ModuleList& judged_modules =
      modules != nullptr && judged == &inventory ? *modules : rebuilt;
  QP_TRY_ASSIGN(const diagnose::Diagnosis again,
                diagnose::diagnose(*judged, judged_modules, patched, options));
  plan.left_unfixable.clear();
  for (const auto& finding : again.findings) {
    if (finding.fixable) {
      return internal(plan.changes.front().file,
                      "leaves a finding it meant to fix: " + finding.detail);
    }
    plan.left_unfixable.push_back(finding);
  }
  return plan;
}

} // namespace qpatch::plan
