// SPDX-License-Identifier: Apache-2.0
// The patch as data: for each file, its original bytes and its new bytes. Planning applies the
// diagnosis' edits with jsonedit, then verifies them before anything is written: the new text
// parses, equals the intended document, and re-judging the patched checkpoint leaves none of
// the findings the patch meant to fix.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::plan {

struct FileChange {
  std::string file;                 // relative to the checkpoint
  std::string before;               // original bytes
  std::string after;                // new bytes
  std::vector<std::string> added;   // entries added (names, or tensors for the index)
  std::vector<std::string> removed; // entries removed
  bool is_symlink = false;
};

struct PatchPlan {
  std::vector<FileChange> changes; // configs first, the index last
  // What the re-judge of the patched checkpoint still finds unfixable: the checkpoint's state
  // once the patch is written, which the exit status and a second run report. A finding judged
  // unfixable before the patch can be gone after it (a transformers refusal of a glob the
  // patch's own rewrite of the list drops).
  std::vector<diagnose::Finding> left_unfixable;
  bool empty() const { return changes.empty(); }
};

// Build and verify the patch for `diagnosis`. `modules`: those of `inventory`, when the caller
// has them (the re-judging reuses them unless the patch changes the index; a 1T-parameter MoE's
// modules take a tenth of a --check to build).
Result<PatchPlan> plan_patch(const diagnose::Diagnosis& diagnosis,
                             const quant::ConfigSet& configs,
                             const checkpoint::Inventory& inventory,
                             const diagnose::DiagnoseOptions& options,
                             const checkpoint::ModuleList* modules = nullptr);

} // namespace qpatch::plan
