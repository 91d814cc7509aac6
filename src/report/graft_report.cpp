// SPDX-License-Identifier: Apache-2.0
#include <qpatch/report/fix_report.hpp>
#include <qpatch/report/graft_report.hpp>

namespace qpatch::report {
namespace {

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

std::string line(const std::string& label, const std::string& text) {
  std::string padded = "  " + label;
  padded.resize(std::max<size_t>(padded.size() + 1, 14), ' ');
  return padded + text + "\n";
}

std::string plural(size_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

std::string plan_lines(const GraftOutcome& outcome) {
  const graft::GraftPlan& plan = *outcome.plan;
  std::vector<std::string> modules;
  for (const auto& selected : plan.modules) {
    modules.push_back(selected.name);
  }
  std::string out = outcome.path + ": graft " + plural(modules.size(), "module") + " from " +
                    outcome.donor + ": " + list(modules) + "\n";
  for (size_t i = 0; i < plan.new_shards.size(); ++i) {
    const graft::ShardLayout& layout = plan.new_shards[i];
    if (i != 0) {
      continue;
    }
    uint64_t bytes = 0;
    std::vector<std::string> from;
    for (const auto& tensor : layout.tensors) {
      bytes += tensor.size;
      const std::string& source = plan.sources.at(tensor.source).display;
      if (std::find(from.begin(), from.end(), source) == from.end()) {
        from.push_back(source);
      }
    }
    out += line("new shard",
                layout.file + ": " + plural(layout.tensors.size(), "tensor") + ", " +
                    std::to_string(bytes) + " bytes from " + list(from));
  }
  for (const graft::ShardChange& change : plan.shard_changes) {
    if (change.action == graft::ShardAction::drop) {
      out += line("drop", change.file + ": " + plural(change.removed.size(), "tensor") + " out");
    } else {
      out += line("rewrite",
                  change.file + " -> " + change.new_file + ": " +
                      plural(change.removed.size(), "tensor") + " out, " +
                      std::to_string(change.kept) + " kept");
    }
  }
  out += line("index",
              plan.index.file + (plan.index_created ? " (new: the checkpoint had one file)" : "") +
                  ": " + std::to_string(plan.index_removed) + " entries out, " +
                  std::to_string(plan.index_added) + " in; total_size " +
                  std::to_string(plan.total_size_before) + " -> " +
                  std::to_string(plan.total_size_after));
  for (const graft::ConfigEdit& edit : plan.configs) {
    std::string text = edit.file + " +" + std::to_string(edit.added.size());
    if (!edit.removed.empty()) {
      text += " -" + std::to_string(edit.removed.size());
    }
    out += line("config",
                text + ": " + list(edit.added) +
                    (edit.removed.empty() ? "" : "; removed " + list(edit.removed)));
  }
  out += line("disk",
              std::to_string(plan.disk_needed) + " bytes to write (" +
                  std::to_string(plan.bytes_to_copy) + " of tensor data), " +
                  std::to_string(plan.disk_free) + " free");
  return out;
}

} // namespace

std::string_view to_string(GraftStatus status) {
  switch (status) {
  case GraftStatus::would_graft:
    return "would-graft";
  case GraftStatus::grafted:
    return "grafted";
  case GraftStatus::nothing_to_graft:
    break;
  }
  return "nothing-to-graft";
}

std::string render_graft_text(const GraftOutcome& outcome) {
  std::string out;
  if (outcome.recovered != graft::Recovery::none) {
    out += outcome.path + ": an interrupted graft was " +
           (outcome.recovered == graft::Recovery::finished ? "finished" : "rolled back") + "\n";
  }
  if (outcome.status == GraftStatus::nothing_to_graft) {
    out += outcome.path + ": nothing to graft from " + outcome.donor +
           ": no selected module is stored quantized or missing\n";
    if (outcome.config_needs_patch) {
      out += line("config",
                  "needs a patch, not a graft: " + shell_command("qpatch --dry-run", outcome.path) +
                      " shows it, " + shell_command("qpatch", outcome.path) + " applies it");
    }
    return out;
  }
  out += plan_lines(outcome);
  out += line("status", std::string(to_string(outcome.status)));
  if (outcome.status == GraftStatus::would_graft) {
    out += line("apply", shell_command("qpatch graft --from " + outcome.donor, outcome.path));
    return out;
  }
  if (!outcome.result.backups.empty()) {
    out += line("backups", list(outcome.result.backups));
    out += line("undo", shell_command("qpatch restore", outcome.path));
  }
  return out;
}

json::Json render_graft_json(const GraftOutcome& outcome) {
  json::Json checkpoint;
  checkpoint["path"] = outcome.path;
  checkpoint["donor"] = outcome.donor;
  checkpoint["status"] = std::string(to_string(outcome.status));
  checkpoint["recovered"] = std::string(graft::to_string(outcome.recovered));
  checkpoint["config_needs_patch"] = outcome.config_needs_patch;
  json::Json modules = json::Json::array();
  json::Json new_shards = json::Json::array();
  json::Json shards = json::Json::array();
  json::Json configs = json::Json::array();
  json::Json index;
  if (outcome.plan != nullptr && !outcome.plan->empty()) {
    const graft::GraftPlan& plan = *outcome.plan;
    for (const auto& selected : plan.modules) {
      modules.push_back({{"name", selected.name},
                         {"missing", !selected.in_dir.has_value()},
                         {"shape",
                          json::Json(std::vector<uint64_t>(selected.logical_shape.begin(),
                                                           selected.logical_shape.end()))}});
    }
    for (const auto& layout : plan.new_shards) {
      uint64_t bytes = 0;
      for (const auto& tensor : layout.tensors) {
        bytes += tensor.size;
      }
      new_shards.push_back(
          {{"file", layout.file}, {"tensors", layout.tensors.size()}, {"tensor_bytes", bytes}});
    }
    for (const auto& change : plan.shard_changes) {
      shards.push_back(
          {{"file", change.file},
           {"action", std::string(graft::to_string(change.action))},
           {"new_file", change.new_file.empty() ? json::Json() : json::Json(change.new_file)},
           {"tensors_removed", change.removed},
           {"tensors_kept", change.kept}});
    }
    index = {{"file", plan.index.file},
             {"created", plan.index_created},
             {"entries_removed", plan.index_removed},
             {"entries_added", plan.index_added},
             {"total_size_before", plan.total_size_before},
             {"total_size_after", plan.total_size_after}};
    for (const auto& edit : plan.configs) {
      configs.push_back({{"file", edit.file}, {"added", edit.added}, {"removed", edit.removed}});
    }
    checkpoint["bytes_to_copy"] = plan.bytes_to_copy;
    checkpoint["disk_needed"] = plan.disk_needed;
    checkpoint["disk_free"] = plan.disk_free;
  } else {
    checkpoint["bytes_to_copy"] = 0;
    checkpoint["disk_needed"] = 0;
    checkpoint["disk_free"] = json::Json();
  }
  checkpoint["modules"] = std::move(modules);
  checkpoint["new_shards"] = std::move(new_shards);
  checkpoint["shards"] = std::move(shards);
  checkpoint["index"] = std::move(index);
  checkpoint["configs"] = std::move(configs);
  checkpoint["backups"] = outcome.result.backups;
  checkpoint["diff"] = outcome.diff.empty() ? json::Json() : json::Json(outcome.diff);
  json::Json doc;
  doc["schema_version"] = k_fix_schema_version;
  doc["checkpoints"] = json::Json::array({std::move(checkpoint)});
  return doc;
}

} // namespace qpatch::report
