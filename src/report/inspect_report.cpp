// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/versions.hpp>
#include <qpatch/report/fit_width.hpp>
#include <qpatch/report/inspect_report.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <random>

namespace qpatch::report {

using checkpoint::Inventory;
using checkpoint::Module;
using checkpoint::ModuleKind;
using checkpoint::StorageFormat;

std::string_view colour_marker() {
  static const std::string marker = [] {
    std::random_device random;
    std::string out = "\x1b[";
    constexpr std::string_view k_hex = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
      out += k_hex[random() % k_hex.size()];
    }
    return out;
  }();
  return marker;
}

std::string TextStyle::paint(std::string_view text, Role role) const {
  if (!color) {
    return std::string(text);
  }
  const char* code = ""; // the code after "\x1b[", written after colour_marker()
  switch (role) {
  case Role::heading:
    code = "1m";
    break;
  case Role::dim:
    code = "2m";
    break;
  case Role::good:
    code = "32m";
    break;
  case Role::warning:
    code = "33m";
    break;
  case Role::error:
    code = "31m";
    break;
  case Role::emphasis:
    code = "36m";
    break;
  }
  const std::string_view marker = colour_marker();
  return std::string(marker) + code + std::string(text) + std::string(marker) + "0m";
}

std::string with_commas(uint64_t value) {
  std::string digits = std::to_string(value);
  for (int pos = static_cast<int>(digits.size()) - 3; pos > 0; pos -= 3) {
    digits.insert(static_cast<size_t>(pos), ",");
  }
  return digits;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1000.0 && unit + 1 < std::size(units)) {
    value /= 1000.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return buffer;
}

namespace {

std::string pad(std::string text, size_t width) {
  if (text.size() < width) {
    text.append(width - text.size(), ' ');
  }
  return text;
}

std::string group_of(const Module& module) {
  if (module.expert_index) {
    return "expert " + std::to_string(*module.expert_index);
  }
  if (!module.fused_name.empty()) {
    return module.fused_name.substr(module.fused_name.rfind('.') + 1);
  }
  return "-";
}

std::string files_of(const Inventory& inventory, const Module& module) {
  std::string out;
  for (const uint32_t file : module.files) {
    out += (out.empty() ? "" : ",") + inventory.files[file].name;
  }
  return out;
}

// Counts per key in a stable, readable order: most common first, then by name.
template <class Key>
std::vector<std::pair<std::string, size_t>> ranked(const std::map<Key, size_t>& counts) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& [key, count] : counts) {
    out.emplace_back(std::string(to_string(key)), count);
  }
  std::stable_sort(
      out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::string join_counts(const std::vector<std::pair<std::string, size_t>>& counts) {
  std::string out;
  for (const auto& [name, count] : counts) {
    out += (out.empty() ? "" : ", ") + with_commas(count) + " " + name;
  }
  return out;
}

struct Summary {
  std::map<StorageFormat, size_t> formats;
  std::map<ModuleKind, size_t> kinds;
  uint64_t header_bytes = 0;
  uint64_t data_bytes = 0;
  size_t indexed_files = 0;
  size_t tensors = 0;
};

Summary summarize(const InspectView& view) {
  Summary summary;
  for (const size_t m : view.shown) {
    const Module& module = view.modules[m];
    ++summary.formats[module.format];
    ++summary.kinds[module.kind];
    summary.tensors += module.tensors.size();
  }
  for (const auto& file : view.inventory.files) {
    summary.header_bytes += file.header_size;
    summary.data_bytes += file.file_size;
    summary.indexed_files += file.indexed ? 1 : 0;
  }
  return summary;
}

} // namespace

std::string describe_storage(const Inventory& inventory, const Module& module) {
  const auto& tensor = inventory.tensors[module.primary];
  std::string out = std::string(to_string(module.format));
  if (module.format == StorageFormat::inconsistent) {
    return out + " (" + module.detail + ")";
  }
  out += " " + std::string(to_string(tensor.dtype)) + " " + safetensors::format_shape(tensor.shape);
  // The FP4 and MX formats differ by their scales' dtype alone (F8_E4M3 for NVFP4, F8_E8M0 for
  // MX), so the row names it.
  const bool scale_tells_apart =
      module.format == StorageFormat::ct_nvfp4 || module.format == StorageFormat::ct_mxfp4 ||
      module.format == StorageFormat::ct_mxfp8 || module.format == StorageFormat::modelopt_nvfp4 ||
      module.format == StorageFormat::mx_fp4;
  if (const auto* scale = checkpoint::scale_tensor(inventory, module); scale_tells_apart && scale) {
    out += ", " + std::string(to_string(scale->dtype)) + " scales";
  }
  return out;
}

namespace {

// "dense", "quant!" (the engine builds it otherwise than it is stored), "—".
std::string built_cell(const diagnose::BuiltAs& as) {
  return std::string(diagnose::to_string(as.built)) + (as.matches_disk ? "" : "!");
}

// Keep the end of a name, the part that tells modules apart ("…layers.63.mlp.gate_proj").
std::string elide_left(const std::string& text, size_t width) {
  if (display_width(text) <= width || width < 2) {
    return text;
  }
  return "…" + text.substr(text.size() - (width - 1));
}

std::string pad_display(std::string text, size_t width) {
  const size_t shown = display_width(text);
  if (shown < width) {
    text.append(width - shown, ' ');
  }
  return text;
}

} // namespace

namespace {

// The module table's columns and cells. Whole: MODULE KIND GROUP STORED-AS <engine...> FILE.
// Fitted to a terminal: MODULE STORED-AS <engine...>, the storage without its shape, the name
// cut from the left.
struct ModuleTable {
  std::vector<std::string> titles;
  std::vector<size_t> role_of; // 0 module, 1 kind, 2 group, 3 stored, 4 file, 5+e engine e
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> width;
};

ModuleTable module_table(const InspectView& view) {
  const Inventory& inventory = view.inventory;
  const diagnose::ModuleVerdicts* verdicts = view.verdicts;
  const size_t engines = verdicts != nullptr ? verdicts->engines.size() : 0;
  const bool fit = view.width != 0;
  ModuleTable table;
  std::vector<std::string>& titles = table.titles;
  std::vector<size_t>& role_of = table.role_of;
  std::vector<std::vector<std::string>>& rows = table.rows;
  titles.push_back("MODULE");
  role_of.push_back(0);
  if (!fit) {
    titles.insert(titles.end(), {"KIND", "GROUP"});
    role_of.insert(role_of.end(), {1, 2});
  }
  titles.push_back("STORED AS");
  role_of.push_back(3);
  for (size_t e = 0; e < engines; ++e) {
    const engine::Engine engine = verdicts->engines[e];
    std::string title(fit ? engine::history(engine).column : engine::to_string(engine));
    for (char& c : title) {
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    titles.push_back(title);
    role_of.push_back(5 + e);
  }
  if (!fit) {
    titles.push_back("FILE");
    role_of.push_back(4);
  }
  const size_t columns = titles.size();
  rows.reserve(view.shown.size());
  std::vector<size_t>& width = table.width;
  width.resize(columns);
  for (size_t c = 0; c < columns; ++c) {
    width[c] = display_width(titles[c]);
  }
  for (const size_t m : view.shown) {
    const Module& module = view.modules[m];
    std::vector<std::string> row;
    for (const size_t role : role_of) {
      switch (role) {
      case 0:
        row.emplace_back(module.name);
        break;
      case 1:
        row.emplace_back(to_string(module.kind));
        break;
      case 2:
        row.push_back(group_of(module));
        break;
      case 3:
        row.push_back(fit && module.format != StorageFormat::inconsistent
                          ? std::string(to_string(module.format)) + " " +
                                std::string(to_string(inventory.tensors[module.primary].dtype))
                          : describe_storage(inventory, module));
        break;
      case 4:
        row.push_back(files_of(inventory, module));
        break;
      default:
        row.push_back(built_cell(verdicts->of[m][role - 5]));
        break;
      }
    }
    for (size_t c = 0; c < columns; ++c) {
      width[c] = std::max(width[c], display_width(row[c]));
    }
    rows.push_back(std::move(row));
  }
  if (fit) {
    // Every column but the name keeps its width; the name gets what is left, at least 16.
    size_t rest = 0;
    for (size_t c = 1; c < columns; ++c) {
      rest += 2 + width[c];
    }
    const size_t room = view.width > rest + 16 ? view.width - rest : 16;
    width[0] = std::min(width[0], room);
    for (auto& row : rows) {
      row[0] = elide_left(row[0], width[0]);
    }
  }
  return table;
}

// The table as text, painted: storage by format, a file no engine loads, a verdict that
// differs from the disk.
std::string
paint_module_table(const InspectView& view, const ModuleTable& table, const TextStyle& style) {
  const diagnose::ModuleVerdicts* verdicts = view.verdicts;
  const std::vector<std::string>& titles = table.titles;
  const std::vector<size_t>& role_of = table.role_of;
  const std::vector<std::vector<std::string>>& rows = table.rows;
  const std::vector<size_t>& width = table.width;
  const size_t columns = titles.size();
  std::string out;
  std::string heading;
  for (size_t c = 0; c < columns; ++c) {
    heading += c + 1 < columns ? pad_display(titles[c], width[c] + 2) : titles[c];
  }
  out += style.paint(heading, Role::heading) + "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    const size_t m = view.shown[r];
    const Module& module = view.modules[m];
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      std::string cell = c + 1 < columns ? pad_display(rows[r][c], width[c] + 2) : rows[r][c];
      const size_t role = role_of[c];
      if (role == 3 && module.format == StorageFormat::inconsistent) {
        cell = style.paint(cell, Role::error);
      } else if (role == 3 && is_quantized(module.format)) {
        cell = style.paint(cell, Role::emphasis);
      } else if (role == 4 && !module.loaded) {
        cell = style.paint(cell, Role::warning);
      } else if (role >= 5 && !verdicts->of[m][role - 5].matches_disk) {
        cell = style.paint(cell, Role::error);
      }
      line += cell;
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out += line + "\n";
  }
  return out + "\n";
}

// The summary lines below the table: files, tensors, modules, kinds, what the config builds.
std::string render_summary(const InspectView& view, const TextStyle& style) {
  const Inventory& inventory = view.inventory;
  const diagnose::ModuleVerdicts* verdicts = view.verdicts;
  const size_t engines = verdicts != nullptr ? verdicts->engines.size() : 0;
  std::string out;
  const Summary summary = summarize(view);
  const auto label = [&](std::string_view text) {
    return style.paint(pad(std::string(text), 12), Role::heading);
  };
  // A summary value wrapped under its own column on a terminal.
  const auto value = [&](const std::string& text) {
    return wrap(std::string(12, ' ') + text, view.width, 12).substr(12);
  };
  out += label("checkpoint") + value(inventory.display_dir) + "\n";
  std::string files = with_commas(inventory.files.size()) + " .safetensors";
  if (inventory.has_index) {
    files += " (" + with_commas(summary.indexed_files) + " in the index, " +
             with_commas(inventory.files.size() - summary.indexed_files) + " not)";
  } else {
    files += " (no index: an engine loads them all)";
  }
  files += ", " + human_bytes(summary.data_bytes) + ", " + human_bytes(summary.header_bytes) +
           " of headers";
  out += label("files") + value(files) + "\n";
  out += label("tensors") + with_commas(summary.tensors) + "\n";
  out += label("modules") +
         value(with_commas(view.shown.size()) + ": " + join_counts(ranked(summary.formats))) + "\n";
  out += label("kinds") + value(join_counts(ranked(summary.kinds))) + "\n";
  if (engines > 0) {
    // How many of the shown modules each engine builds otherwise than they are stored.
    std::string built;
    size_t total = 0;
    for (size_t e = 0; e < engines; ++e) {
      size_t wrong = 0;
      for (const size_t m : view.shown) {
        wrong += verdicts->of[m][e].matches_disk ? size_t{0} : size_t{1};
      }
      total += wrong;
      built += (built.empty() ? "" : ", ") + std::string(engine::to_string(verdicts->engines[e])) +
               " " + with_commas(wrong);
    }
    out += label("config") +
           value(total == 0 ? std::string("every engine builds what is stored")
                            : "modules built otherwise than stored (marked !): " + built +
                                  "; run `qpatch --dry-run " + inventory.command_name() +
                                  "` to see the fix") +
           "\n";
  }
  for (const auto& file : inventory.files) {
    if (inventory.has_index && !file.indexed && file.readable) {
      out += label("unindexed") + style.paint(file.name, Role::warning) + " (" +
             with_commas(file.tensor_count) + " tensors, never loaded by an engine)\n";
    }
  }
  return out;
}

} // namespace

std::string render_inspect_text(const InspectView& view, const TextStyle& style) {
  std::string out;
  if (view.rows == Rows::all && !view.shown.empty()) {
    out += paint_module_table(view, module_table(view), style);
  }
  return out + render_summary(view, style);
}

std::vector<ProblemLine> inventory_problems(const Inventory& inventory) {
  std::vector<ProblemLine> out;
  const auto in_dir = [&](const std::string& file) {
    // The file as the user would open it: the DIR argument as given, joined with the name.
    if (file.empty() || file.rfind(inventory.display_dir, 0) == 0) {
      return file.empty() ? inventory.display_dir : file;
    }
    const std::string& dir = inventory.display_dir;
    return dir + (!dir.empty() && dir.back() == '/' ? "" : "/") + file;
  };
  for (const Error& error : inventory.errors) {
    Error shown = error;
    shown.path = in_dir(error.path);
    out.push_back({true, shown.to_string()});
  }
  for (const auto& problem : inventory.problems) {
    if (problem.severity == checkpoint::Severity::info) {
      continue;
    }
    out.push_back({problem.severity == checkpoint::Severity::error,
                   in_dir(problem.path) + ": " +
                       (problem.subject.empty() ? "" : "tensor '" + problem.subject + "': ") +
                       problem.message});
  }
  return out;
}

json::Json render_inspect_json(const InspectView& view) {
  using json::Json;
  const Inventory& inventory = view.inventory;
  Json doc;
  doc["path"] = inventory.display_dir;
  doc["has_index"] = inventory.has_index;
  Json files = Json::array();
  for (const auto& file : inventory.files) {
    files.push_back({{"name", file.name},
                     {"indexed", file.indexed},
                     {"exists", file.exists},
                     {"readable", file.readable},
                     {"file_size", file.file_size},
                     {"header_size", file.header_size},
                     {"tensors", file.tensor_count}});
  }
  doc["files"] = std::move(files);
  const Summary summary = summarize(view);
  Json storage = Json::object();
  for (const auto& [name, count] : ranked(summary.formats)) {
    storage[name] = count;
  }
  Json kinds = Json::object();
  for (const auto& [name, count] : ranked(summary.kinds)) {
    kinds[name] = count;
  }
  Json unindexed = Json::array();
  for (const auto& file : inventory.files) {
    if (inventory.has_index && !file.indexed && file.readable) {
      unindexed.push_back(file.name);
    }
  }
  doc["summary"] = {{"files", inventory.files.size()},
                    {"tensors", summary.tensors},
                    {"modules", view.shown.size()},
                    {"storage", std::move(storage)},
                    {"kinds", std::move(kinds)},
                    {"header_bytes", summary.header_bytes},
                    {"unindexed_files", std::move(unindexed)}};
  if (view.rows == Rows::all) {
    Json modules = Json::array();
    for (const size_t m : view.shown) {
      const Module& module = view.modules[m];
      const auto& tensor = inventory.tensors[module.primary];
      const checkpoint::Tensor* scale = checkpoint::scale_tensor(inventory, module);
      Json files_of_module = Json::array();
      for (const uint32_t file : module.files) {
        files_of_module.push_back(inventory.files[file].name);
      }
      Json row = {{"name", std::string(module.name)},
                  {"kind", to_string(module.kind)},
                  {"format", to_string(module.format)},
                  {"dtype", to_string(tensor.dtype)},
                  {"shape", tensor.shape.to_vector()},
                  {"scale_dtype", scale != nullptr ? Json(to_string(scale->dtype)) : Json()},
                  {"files", std::move(files_of_module)},
                  {"loaded", module.loaded},
                  {"fused", module.fused_name.empty() ? Json() : Json(module.fused_name)},
                  {"experts",
                   module.experts_name.empty() ? Json() : Json(std::string(module.experts_name))},
                  {"expert_index", module.expert_index ? Json(*module.expert_index) : Json()},
                  {"detail", module.detail.empty() ? Json() : Json(module.detail)}};
      modules.push_back(std::move(row));
    }
    doc["modules"] = std::move(modules);
  }
  Json problems = Json::array();
  for (const auto& problem : inventory.problems) {
    problems.push_back({{"code", to_string(problem.code)},
                        {"severity", to_string(problem.severity)},
                        {"path", problem.path},
                        {"subject", problem.subject},
                        {"message", problem.message},
                        {"count", problem.count}});
  }
  for (const Error& error : inventory.errors) {
    problems.push_back({{"code", to_string(error.code)},
                        {"severity", "error"},
                        {"path", error.path},
                        {"offset", error.offset ? Json(*error.offset) : Json()},
                        {"subject", error.subject},
                        {"message", error.message},
                        {"count", 1}});
  }
  doc["problems"] = std::move(problems);
  return doc;
}

} // namespace qpatch::report
