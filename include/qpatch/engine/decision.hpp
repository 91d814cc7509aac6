// SPDX-License-Identifier: Apache-2.0
// What an engine builds for one layer under a quantization config, and which rule decided it:
// the answer every method's rules give, whatever the engine.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qpatch::engine {

enum class Verdict { dense, quantized, load_error };

enum class DecidedBy {
  ignore_entry,    // an ignore entry matched
  target_name,     // a target equal to the name, or a re: target matching it
  target_fused,    // every shard matched a name target
  target_class,    // a class-name target
  no_target,       // nothing matched: dense
  built_dense,     // the engine builds the layer with no quant config
  built_quantized, // the engine quantizes the layer whatever the config says
  fused_disagree,  // shards of a fused layer disagree about ignore
  experts_disagree,
  undecidable,      // a regex gave up (match limit)
  untargeted,       // no target matches and the engine raises for that (vLLM before #41965)
  override_refused, // a per-layer override the kernel cannot serve: the engine raises
};
std::string_view to_string(DecidedBy by);

struct Decision {
  Verdict verdict = Verdict::dense;
  DecidedBy by = DecidedBy::no_target;
  std::optional<size_t> ignore_index; // the ignore entry that decided
  std::string group;                  // the config group whose target matched
  std::string target;                 // that target
  std::vector<std::string> shards;    // the engine's names of the shards (fused or expert 0)
  std::vector<bool> shard_ignored;    // per shard: matched by ignore
  std::string error;                  // what the engine raises, for load_error
};

// "quantized (target_class)", "dense (ignore_entry)", "load error: ... (fused_disagree)": the
// verdict line of every engine's trace.
std::string verdict_text(const Decision& decision);

} // namespace qpatch::engine
