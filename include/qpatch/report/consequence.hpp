// SPDX-License-Identifier: Apache-2.0
// What a finding does to each engine at load time, in that engine's own words: a report that only
// says "quantized by targets" leaves the user to guess that vLLM dies at start-up while SGLang
// loads and silently drops the weights. Renders only; never prints.
#pragma once

#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/engine/effects.hpp>

#include <string>
#include <utility>
#include <vector>

namespace qpatch::report {

// One line: "vLLM: start-up fails: \"ValueError: There is no module or parameter named ...\";
// SGLang: loads, and drops the stored weights silently", or "" when the kind has no load-time
// effect worth stating. `judged` are the engines judged, for findings that name none; `built`
// is the weight parameter the method's scheme registers (Diagnosis::built_weight).
std::string consequence(const diagnose::Finding& finding,
                        const std::string& quant_method,
                        const std::vector<std::string>& judged,
                        const engine::BuiltWeight& built = {});

// "vLLM (main, 2026-08-17), SGLang and transformers": the engines judged, as people name them;
// the commits stay in `engine_rules` (--verbose and JSON). `quant_method` picks the rules judged
// (bitsandbytes: "vLLM (main, 2026-08-17) with vllm-bnb-plugin").
// An engine `ranges` names reads "vLLM (5 versions, main 2026-02-28..2026-08-17)".
std::string plain_engines(const std::vector<std::string>& engines,
                          const std::string& quant_method = "compressed-tensors",
                          const std::vector<std::pair<std::string, std::string>>& ranges = {});

} // namespace qpatch::report
