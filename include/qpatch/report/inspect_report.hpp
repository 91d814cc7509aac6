// SPDX-License-Identifier: Apache-2.0
// Renders `qpatch inspect`: one row per module and a summary, as aligned text or as one JSON
// document (schema_version 2, documented in README.md). Renders only; never prints.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/module_verdicts.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/report/text_style.hpp>

#include <string>
#include <vector>

namespace qpatch::report {

// 2: {"schema_version", "checkpoints": [...]}, one entry per DIR, each named by "path".
inline constexpr int k_inspect_schema_version = 2;

enum class Rows { all, none };

struct InspectView {
  const checkpoint::Inventory& inventory;
  const checkpoint::ModuleList& modules;
  std::vector<size_t> shown; // indices into `modules` that pass --only
  Rows rows = Rows::all;
  // What the config makes each engine build, one column per engine; nullptr: no such columns.
  const diagnose::ModuleVerdicts* verdicts = nullptr;
  // Terminal columns to fit (module names elided from the left, the kind, group and file
  // columns dropped); 0: every column whole, for pipes and -v.
  size_t width = 0;
};

// The module table (when rows are wanted) followed by the summary, for stdout.
std::string render_inspect_text(const InspectView& view, const TextStyle& style);
struct ProblemLine {
  bool is_error = false;
  std::string text; // "ck/model-00001.safetensors: tensor 'x': ..."
};
// The problems and unreadable files, one each, for the CLI to print on stderr.
std::vector<ProblemLine> inventory_problems(const checkpoint::Inventory& inventory);
// One checkpoint's entry of the document's "checkpoints".
json::Json render_inspect_json(const InspectView& view);

// One line describing how a module is stored: "ct-pack-quantized I32 [17408, 640]".
std::string describe_storage(const checkpoint::Inventory& inventory,
                             const checkpoint::Module& module);

} // namespace qpatch::report
