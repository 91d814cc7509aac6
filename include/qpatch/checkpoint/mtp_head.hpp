// SPDX-License-Identifier: Apache-2.0
// The multi-token-prediction draft head as a unit: how many layers config.json declares and
// which modules hold it, per family (quant-formats.md §6.11): Qwen3.5/3.6/Next, EXAONE and
// Nemotron-3 under `mtp.`; MiMo under `model.mtp_layers.`; DeepSeek-V3/R1, GLM-4.x/5.x and others
// as extra decoder layers `model.layers.{N..N+k-1}` after the N main layers. Newer layouts under
// `mtp.` (Qwen3.8's split fc, DeepSeek-V4's `mtp.{i}.`) are found as heads too, their engine
// layer names assumed.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/json/strict_json.hpp>

#include <string>
#include <vector>

namespace qpatch::checkpoint {

struct MtpHead {
  uint64_t declared = 0;         // layers config.json declares (0: none)
  std::string declared_by;       // "mtp_num_hidden_layers", "num_nextn_predict_layers", ...
  uint64_t main_layers = 0;      // config.json's num_hidden_layers (0: not given)
  std::vector<uint32_t> modules; // indices into the module list, in checkpoint order
  std::string summary;           // "8 linears BF16, 7 norms in model_extra_tensors.safetensors"
  // A layout seen in public checkpoints whose engine naming qpatch does not model yet (Qwen3.8's
  // split mtp.fc_embedding/mtp.fc_hidden): its layers are judged under
  // the names the checkpoint uses, and the summary says so. "" for the modelled layouts.
  std::string unmodelled_layout;
};

// Find the MTP head of a checkpoint from its config.json document and its modules.
MtpHead
find_mtp_head(const json::Json& config, const ModuleList& modules, const Inventory& inventory);

} // namespace qpatch::checkpoint
