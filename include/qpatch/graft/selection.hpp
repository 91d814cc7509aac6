// SPDX-License-Identifier: Apache-2.0
// Which modules `qpatch graft` puts into a checkpoint, and whether DONOR can supply them. By
// default: the MTP head's modules (checkpoint::find_mtp_head, per family) that DIR stores
// quantized, and the head modules DONOR has that DIR lacks (an exporter that dropped the head);
// `--only` replaces the head by every module whose name matches. Each must be dense in DONOR
// with the logical shape DIR declares (compressed-tensors weight_shape, GPTQ/AWQ packed
// dimensions, FP8's own shape) or, for a module DIR lacks, DONOR's config must agree with DIR's
// on the sizes that shape the head. Reading tensor data is limited to weight_shape tensors.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::graft {

// One checkpoint as read for a graft: headers, modules, configs and its MTP head.
struct Checkpoint {
  std::string display; // the directory as the user typed it
  checkpoint::Inventory inventory;
  checkpoint::ModuleList modules;
  quant::ConfigSet configs;
  checkpoint::MtpHead head;
};

// Read `dir` (named `display` in messages). Unreadable shards are an error here: a graft
// rewrites files and must know every byte it keeps.
Result<Checkpoint> read_checkpoint(const std::filesystem::path& dir, const std::string& display);

struct Selected {
  std::string name;                 // the module, as both checkpoints name it
  std::optional<uint32_t> in_dir;   // index into DIR's modules; none: DIR lacks it
  uint32_t in_donor = 0;            // index into DONOR's modules
  safetensors::Shape logical_shape; // of its weight, as DIR declares it (or DONOR stores it)
};

// Return the modules to graft, or why DONOR cannot supply them (graft_refused), checked before
// anything is written.
Result<std::vector<Selected>> select_modules(const Checkpoint& dir,
                                             const Checkpoint& donor,
                                             const std::optional<engine::Pattern>& only);

// Return the shape of the weight `module` of `checkpoint` stands for: the dense shape of a
// quantized module, read from its packing.
Result<safetensors::Shape> logical_shape(const Checkpoint& checkpoint, uint32_t module);

} // namespace qpatch::graft
