// SPDX-License-Identifier: Apache-2.0
// The error texts users post, mapped to the finding behind them (issue 23 item 7): `qpatch
// explain DIR --error TEXT`. Each row is an engine's own message, read in its source or quoted
// in its tracker, with the finding kinds that produce it and where the text names the module.
#pragma once

#include <qpatch/diagnose/diagnose.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::diagnose {

struct ErrorTextMatch {
  std::string id;                 // the row ("vllm-no-parameter")
  std::string engine;             // "vllm", "sglang", "transformers"
  std::string meaning;            // one line for people: what the engine was doing
  std::vector<FindingKind> kinds; // the findings that make an engine print it
  // The module the text names, as far as it names one: a checkpoint or engine layer name, or a
  // name relative to the class being loaded ("fc" in Qwen3_5MultiTokenPredictor). "" when the
  // text names none.
  std::string module_hint;
};

// Recognise `text` (a whole log line, or the part of it the user copied), or nothing.
std::optional<ErrorTextMatch> match_error_text(const std::string& text);

// The ids of every row, for the message that lists what qpatch recognises.
std::vector<std::string> known_error_texts();

// The findings of `diagnosis` that make the engine print the matched text: of a kind the row
// lists, concerning its engine, and naming the module the text names (when one finding does;
// otherwise every finding of those kinds, since engine names are not always checkpoint names).
std::vector<const Finding*> findings_behind(const Diagnosis& diagnosis,
                                            const ErrorTextMatch& match);

// True when a finding's module `name` (checkpoint naming) is the one `hint` names: equal, a
// suffix at a dot ("fc" names "mtp.fc"), or the same layer's shard or fused name.
bool names_module(const std::string& hint, const std::string& name);

} // namespace qpatch::diagnose
