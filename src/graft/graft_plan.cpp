// SPDX-License-Identifier: Apache-2.0
#include <qpatch/graft/config_repair.hpp>
#include <qpatch/graft/graft_plan.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/plan/patch_plan.hpp>

#include <sys/statvfs.h>

#include <algorithm>
#include <map>
#include <set>

namespace qpatch::graft {
namespace fs = std::filesystem;
using checkpoint::Inventory;
using checkpoint::ShardFile;
using checkpoint::Tensor;

namespace {

// Where the grafted shard goes: a name no file in DIR has (a `-2`, `-3`... before the extension
// otherwise), so a graft never clobbers anything.
constexpr std::string_view k_head_stem = "model-mtp-grafted";
constexpr std::string_view k_rewritten_suffix = "-rewritten";

std::string joined(const std::string& display, const std::string& file) {
  if (display.empty()) {
    return file;
  }
  return display.back() == '/' ? display + file : display + "/" + file;
}

Error refused(const std::string& path, const std::string& message) {
  return make_error(ErrorCode::graft_refused, path, std::nullopt, "", message);
}

std::string
free_name(const Inventory& inventory, const std::string& stem, const std::set<std::string>& taken) {
  for (int n = 1;; ++n) {
    const std::string name =
        stem + (n == 1 ? "" : "-" + std::to_string(n)) + std::string(".safetensors");
    std::error_code ec;
    if (taken.count(name) == 0 && !fs::exists(fs::symlink_status(inventory.dir / name, ec))) {
      return name;
    }
  }
}

uint64_t tensor_bytes(safetensors::Dtype dtype, const safetensors::Shape& shape) {
  uint64_t elements = 1;
  for (const uint64_t d : shape) {
    elements *= d; // the reader checked the product for overflow
  }
  return elements * safetensors::bits_of(dtype) / 8;
}

// Headers re-read for their data offsets (the inventory keeps none), one per file.
class Headers {
public:
  Result<const safetensors::Header*> get(const Checkpoint& checkpoint, uint32_t file) {
    const auto key = std::make_pair(&checkpoint, file);
    if (auto it = m_headers.find(key); it != m_headers.end()) {
      return &it->second;
    }
    const std::string& name = checkpoint.inventory.files[file].name;
    QP_TRY_ASSIGN(safetensors::Header header,
                  m_parser.read(checkpoint.inventory.dir / name, joined(checkpoint.display, name)));
    return &m_headers.emplace(key, std::move(header)).first->second;
  }

private:
  safetensors::HeaderParser m_parser;
  std::map<std::pair<const Checkpoint*, uint32_t>, safetensors::Header> m_headers;
};

struct Sources {
  std::vector<SourceFile> files;
  std::map<std::pair<const Checkpoint*, uint32_t>, uint32_t> ids;
  uint32_t id(const Checkpoint& checkpoint, uint32_t file) {
    const auto key = std::make_pair(&checkpoint, file);
    if (auto it = ids.find(key); it != ids.end()) {
      return it->second;
    }
    const std::string& name = checkpoint.inventory.files[file].name;
    files.push_back({checkpoint.inventory.dir / name, joined(checkpoint.display, name)});
    return ids[key] = static_cast<uint32_t>(files.size() - 1);
  }
};

// The checkpoint as it will be: DIR's files less the removed tensors, under their new names,
// plus the grafted shard. Names point into DIR's and DONOR's name blocks, kept alive by sharing.
Inventory after_graft(const Checkpoint& dir,
                      const Checkpoint& donor,
                      const GraftPlan& plan,
                      const std::set<std::string_view>& removed) {
  std::map<std::string, std::string> renamed;
  std::set<std::string> dropped;
  for (const ShardChange& change : plan.shard_changes) {
    if (change.action == ShardAction::drop) {
      dropped.insert(change.file);
    } else {
      renamed[change.file] = change.new_file;
    }
  }
  struct Entry {
    ShardFile file;
    std::vector<Tensor> tensors;
  };
  std::map<std::string, Entry> by_name; // files sorted by name, as read_inventory orders them
  const Inventory& before = dir.inventory;
  for (uint32_t f = 0; f < before.files.size(); ++f) {
    const ShardFile& file = before.files[f];
    if (dropped.count(file.name) != 0) {
      continue;
    }
    const auto it = renamed.find(file.name);
    Entry& entry = by_name[it == renamed.end() ? file.name : it->second];
    entry.file = file;
    entry.file.name = it == renamed.end() ? file.name : it->second;
    entry.file.indexed = entry.file.indexed || plan.index_created; // the new index names it
  }
  for (const Tensor& tensor : before.tensors) {
    const std::string& name = before.files[tensor.file].name;
    if (dropped.count(name) != 0 || removed.count(tensor.name) != 0) {
      continue;
    }
    const auto it = renamed.find(name);
    by_name[it == renamed.end() ? name : it->second].tensors.push_back(tensor);
  }
  Entry& head = by_name[plan.head_file];
  head.file.name = plan.head_file;
  head.file.indexed = true;
  head.file.readable = true;
  std::set<std::string_view> grafted;
  for (const TensorCopy& copy : plan.new_shards.front().tensors) {
    grafted.insert(copy.name);
  }
  for (const Tensor& tensor : donor.inventory.tensors) {
    if (!tensor.shadowed && grafted.count(tensor.name) != 0) {
      head.tensors.push_back(tensor);
    }
  }
  Inventory after;
  after.dir = before.dir;
  after.display_dir = before.display_dir;
  after.has_index = true;
  after.name_storage = before.name_storage;
  after.name_storage.insert(after.name_storage.end(),
                            donor.inventory.name_storage.begin(),
                            donor.inventory.name_storage.end());
  // Indexed files first, by name, then the others: read_inventory's order.
  for (const bool indexed : {true, false}) {
    for (auto& [name, entry] : by_name) {
      if (entry.file.indexed != indexed) {
        continue;
      }
      const auto f = static_cast<uint32_t>(after.files.size());
      entry.file.tensor_count = entry.tensors.size();
      after.files.push_back(entry.file);
      for (Tensor tensor : entry.tensors) {
        tensor.file = f;
        after.tensors.push_back(tensor);
      }
    }
  }
  return after;
}

uint64_t indexed_bytes(const Inventory& after) {
  uint64_t total = 0;
  for (const Tensor& tensor : after.tensors) {
    if (after.files[tensor.file].indexed && !tensor.shadowed) {
      total += tensor_bytes(tensor.dtype, tensor.shape);
    }
  }
  return total;
}

// Return the index a single-file checkpoint is given before the graft: every tensor -> the file
// holding it, keys sorted and indented as transformers' save_pretrained writes an index
// (json.dumps(index, indent=2, sort_keys=True) + "\n"). It changes what no engine loads: vLLM
// loads every *.safetensors in a folder without an index and, with one, exactly the files its
// weight_map names (weight_utils.py filter_duplicate_safetensors_files, vLLM 017e9f4; it
// raises on a named file that is missing); transformers loads model.safetensors while it exists
// and the index only when it does not (modeling_utils.py _get_resolved_checkpoint_files). With
// it, the graft is the sharded one: new shards under names the index does not name, then the
// index swapped (the commit point), then the replaced file moved aside; a single file has no
// instant at which vLLM would load the old and the new shards together.
std::string identity_index(const Inventory& inventory) {
  std::map<std::string_view, const std::string*> map; // sorted; the first file's copy
  uint64_t total = 0;
  for (const Tensor& tensor : inventory.tensors) {
    if (!tensor.shadowed && map.emplace(tensor.name, &inventory.files[tensor.file].name).second) {
      total += tensor_bytes(tensor.dtype, tensor.shape);
    }
  }
  json::Json weight_map = json::Json::object();
  for (const auto& [name, file] : map) {
    weight_map[std::string(name)] = *file;
  }
  json::Json doc = json::Json::object();
  doc["metadata"] = {{"total_size", total}};
  doc["weight_map"] = std::move(weight_map);
  return doc.dump(2, ' ', true) + "\n";
}

// Return the new index text: every entry but the removed ones, kept in order and renamed with
// their shard, then the grafted tensors; total_size the sum of every indexed tensor's bytes.
Result<std::string> new_index(const Checkpoint& dir,
                              const Inventory& after,
                              const std::set<std::string_view>& removed,
                              GraftPlan& plan) {
  const std::string name(checkpoint::k_index_file_name);
  if (plan.index_created) {
    plan.index.before = identity_index(dir.inventory);
  } else {
    QP_TRY_ASSIGN(plan.index.before,
                  json::read_file(dir.inventory.dir / name, name, limits::k_max_index_size));
  }
  QP_TRY_ASSIGN(json::Json doc, json::parse_strict(plan.index.before, joined(dir.display, name)));
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    return refused(joined(dir.display, name), "has no weight_map object to rewrite");
  }
  std::map<std::string, std::string> renamed;
  for (const ShardChange& change : plan.shard_changes) {
    if (change.action == ShardAction::rewrite) {
      renamed[change.file] = change.new_file;
    }
  }
  json::Json map = json::Json::object();
  for (auto& [tensor, file] : doc["weight_map"].items()) {
    if (removed.count(tensor) != 0) {
      ++plan.index_removed;
      continue;
    }
    if (file.is_string()) {
      const auto it = renamed.find(file.get<std::string>());
      if (it != renamed.end()) {
        file = it->second;
      }
    }
    map[tensor] = file;
  }
  for (const TensorCopy& copy : plan.new_shards.front().tensors) {
    map[copy.name] = plan.head_file;
    ++plan.index_added;
  }
  const uint64_t total = indexed_bytes(after);
  if (doc.contains("metadata") && doc["metadata"].is_object() &&
      doc["metadata"].contains("total_size") &&
      doc["metadata"]["total_size"].is_number_unsigned()) {
    plan.total_size_before = doc["metadata"]["total_size"].get<uint64_t>();
  }
  if (!doc.contains("metadata") || !doc["metadata"].is_object()) {
    doc["metadata"] = json::Json::object();
  }
  doc["metadata"]["total_size"] = total;
  plan.total_size_after = total;
  doc["weight_map"] = std::move(map);
  // transformers' save_pretrained writes json.dumps(index, indent=2, sort_keys=True) + "\n".
  return doc.dump(2, ' ', true) + "\n";
}

// Judge the checkpoint as it will be and plan the config patch, exactly as `qpatch DIR` does;
// refuse when a problem the patch cannot fix remains on a grafted module.
Status plan_configs(const Checkpoint& dir,
                    const Inventory& after,
                    quant::ConfigSet configs,
                    const PlanOptions& options,
                    GraftPlan& plan) {
  const auto modules = checkpoint::build_modules(after);
  QP_TRY_ASSIGN(const diagnose::Diagnosis diagnosis,
                diagnose::diagnose(after, modules, configs, options.diagnose));
  std::vector<plan::FileChange> changes;
  if (diagnosis.has_fixable()) {
    QP_TRY_ASSIGN(plan::PatchPlan patch,
                  plan::plan_patch(diagnosis, configs, after, options.diagnose));
    changes = std::move(patch.changes);
  }
  for (plan::FileChange& change : changes) {
    quant::ConfigFile* file = nullptr;
    for (quant::ConfigFile& candidate : configs.files) {
      file = candidate.name == change.file ? &candidate : file;
    }
    if (file == nullptr) {
      return make_error(ErrorCode::internal,
                        joined(dir.display, change.file),
                        std::nullopt,
                        "",
                        "the config patch names a file the graft does not write");
    }
    file->text = change.after;
    QP_TRY_ASSIGN(file->doc, json::parse_strict(file->text, file->name));
  }
  QP_TRY_ASSIGN(const diagnose::Diagnosis judged,
                diagnose::diagnose(after, modules, configs, options.diagnose));
  std::set<std::string> grafted;
  for (const Selected& selected : plan.modules) {
    grafted.insert(selected.name);
  }
  for (const diagnose::Finding& finding : judged.findings) {
    for (const std::string& module : finding.modules) {
      if (grafted.count(module) != 0) {
        Error error = refused(joined(dir.display, "config.json"),
                              "after the graft, " + finding.detail +
                                  " (no config patch fixes it; nothing was written)");
        error.subject = module;
        error.subject_kind = "module";
        return error;
      }
    }
  }
  for (const quant::ConfigFile& file : configs.files) {
    const quant::ConfigFile* original = dir.configs.find(file.name);
    if (original == nullptr || original->text == file.text) {
      continue;
    }
    ConfigEdit edit{file.name, original->text, file.text, {}, {}};
    for (const plan::FileChange& change : changes) {
      if (change.file == file.name) {
        edit.added = change.added;
        edit.removed = change.removed;
      }
    }
    if (file.name == "config.json") {
      const std::vector<std::string> repaired = plan.config_repair.describe();
      edit.added.insert(edit.added.begin(), repaired.begin(), repaired.end());
    }
    plan.configs.push_back(std::move(edit));
  }
  return ok_status();
}

// Fill the shard changes and the new shards' layouts.
Status plan_shards(const Checkpoint& dir,
                   const Checkpoint& donor,
                   const std::set<std::string_view>& removed,
                   GraftPlan& plan) {
  Headers headers;
  Sources sources;
  std::set<std::string> taken;
  plan.head_file = free_name(dir.inventory, std::string(k_head_stem), taken);
  taken.insert(plan.head_file);
  ShardLayout head{plan.head_file, {{"format", "pt"}}, {}};
  std::set<std::string_view> wanted;
  for (const Selected& selected : plan.modules) {
    for (const uint32_t t : donor.modules[selected.in_donor].tensors) {
      wanted.insert(donor.inventory.tensors[t].name);
    }
  }
  for (uint32_t f = 0; f < donor.inventory.files.size(); ++f) {
    bool holds = false;
    for (const Tensor& tensor : donor.inventory.tensors) {
      holds = holds || (tensor.file == f && !tensor.shadowed && wanted.count(tensor.name) != 0);
    }
    if (!holds) {
      continue;
    }
    QP_TRY_ASSIGN(const safetensors::Header* header, headers.get(donor, f));
    for (const auto& entry : header->tensors) {
      if (wanted.count(entry.name) != 0) {
        head.tensors.push_back({std::string(entry.name),
                                entry.dtype,
                                entry.shape,
                                sources.id(donor, f),
                                header->data_start() + entry.begin,
                                entry.end - entry.begin});
        wanted.erase(entry.name); // the engine-loaded copy is the first file's
      }
    }
  }
  std::sort(head.tensors.begin(), head.tensors.end(), [](const TensorCopy& a, const TensorCopy& b) {
    return a.name < b.name;
  });
  plan.new_shards.push_back(std::move(head));
  for (uint32_t f = 0; f < dir.inventory.files.size(); ++f) {
    const ShardFile& file = dir.inventory.files[f];
    bool holds = false;
    for (const Tensor& tensor : dir.inventory.tensors) {
      holds = holds || (tensor.file == f && removed.count(tensor.name) != 0);
    }
    if (!holds) {
      continue;
    }
    QP_TRY_ASSIGN(const safetensors::Header* header, headers.get(dir, f));
    ShardChange change{file.name, ShardAction::rewrite, "", {}, 0};
    ShardLayout layout{"", header->metadata, {}};
    for (const auto& entry : header->tensors) {
      if (removed.count(entry.name) != 0) {
        change.removed.emplace_back(entry.name);
        continue;
      }
      layout.tensors.push_back({std::string(entry.name),
                                entry.dtype,
                                entry.shape,
                                sources.id(dir, f),
                                header->data_start() + entry.begin,
                                entry.end - entry.begin});
    }
    change.kept = layout.tensors.size();
    if (layout.tensors.empty()) {
      change.action = ShardAction::drop;
    } else {
      const std::string stem = file.name.substr(0, file.name.size() - 12);
      change.new_file = free_name(dir.inventory, stem + std::string(k_rewritten_suffix), taken);
      taken.insert(change.new_file);
      layout.file = change.new_file;
      plan.new_shards.push_back(std::move(layout));
    }
    plan.shard_changes.push_back(std::move(change));
  }
  plan.sources = std::move(sources.files);
  return ok_status();
}

} // namespace

std::string_view to_string(ShardAction action) {
  return action == ShardAction::drop ? "drop" : "rewrite";
}

std::vector<commit::WriteRequest> GraftPlan::json_writes() const {
  std::vector<commit::WriteRequest> out{index};
  for (const ConfigEdit& edit : configs) {
    out.push_back({edit.file, edit.before, edit.after});
  }
  return out;
}

std::optional<uint64_t> statvfs_free_space(const fs::path& dir) {
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(info.f_bavail) * static_cast<uint64_t>(info.f_frsize);
}

Result<GraftPlan>
plan_graft(const Checkpoint& dir, const Checkpoint& donor, const PlanOptions& options) {
  std::error_code ec;
  if (fs::equivalent(dir.inventory.dir, donor.inventory.dir, ec)) {
    return refused(donor.display,
                   "is the checkpoint being grafted (" + dir.display +
                       "); graft from the base model's directory");
  }
  GraftPlan plan;
  QP_TRY_ASSIGN(plan.modules, select_modules(dir, donor, options.only));
  if (plan.modules.empty()) {
    return plan;
  }
  if (!dir.inventory.has_index) {
    // A single-file checkpoint gets the index a second shard needs; a file it could not read
    // would be left out of it, so none is allowed.
    for (const ShardFile& file : dir.inventory.files) {
      if (!file.readable) {
        return refused(joined(dir.display, file.name),
                       "cannot be read, and the index the graft creates would leave it out");
      }
    }
    plan.index_created = true;
  }
  std::set<std::string_view> removed;
  for (const Selected& selected : plan.modules) {
    if (selected.in_dir) {
      for (const uint32_t t : dir.modules[*selected.in_dir].tensors) {
        removed.insert(dir.inventory.tensors[t].name);
      }
    }
  }
  if (auto shards = plan_shards(dir, donor, removed, plan); !shards) {
    return shards.take_error();
  }
  quant::ConfigSet configs = dir.configs;
  QP_TRY_ASSIGN(plan.config_repair, repair_config(configs, dir, donor));
  const Inventory after = after_graft(dir, donor, plan, removed);
  if (auto planned = plan_configs(dir, after, configs, options, plan); !planned) {
    return planned.take_error();
  }
  plan.index.file = std::string(checkpoint::k_index_file_name);
  QP_TRY_ASSIGN(plan.index.after, new_index(dir, after, removed, plan));
  for (const ShardLayout& layout : plan.new_shards) {
    for (const TensorCopy& tensor : layout.tensors) {
      plan.bytes_to_copy += tensor.size;
    }
    plan.disk_needed += shard_size(layout);
  }
  plan.disk_needed += plan.index.after.size() + (plan.index_created ? plan.index.before.size() : 0);
  for (const ConfigEdit& edit : plan.configs) {
    plan.disk_needed += edit.after.size();
  }
  const auto free_space = options.free_space ? options.free_space(dir.inventory.dir)
                                             : statvfs_free_space(dir.inventory.dir);
  plan.disk_free = free_space.value_or(0);
  if (free_space && *free_space < plan.disk_needed) {
    return make_error(ErrorCode::no_space,
                      dir.display,
                      std::nullopt,
                      "",
                      "not enough free space: the graft writes " +
                          std::to_string(plan.disk_needed) + " bytes, the file system has " +
                          std::to_string(*free_space) + " free; nothing was written");
  }
  return plan;
}

} // namespace qpatch::graft
