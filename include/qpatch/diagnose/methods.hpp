// SPDX-License-Identifier: Apache-2.0
// The methods qpatch judges, one row each: the quant_method names a row answers to, the engines
// whose rules are modelled for it, and its judge and explain (each reading the method's config
// view first). diagnose() and explain() find the row here and nowhere else, so a quant_method no
// row names is reported as unsupported, never routed to a neighbouring method.
//
// Adding a method takes:
//   1. a config view: quant/<method>.hpp, `Result<View> read_<method>(const quant::ConfigFile&)`;
//   2. its rules: engine/<method>_rules.hpp, decide(layer) and trace(layer) written once, asking
//      the engine's dialect (dialect.hpp) where engines differ, and the method's name in the
//      `methods` of each engine's history that models it;
//   3. a judge: src/diagnose/<method>_judge.cpp, the findings and the fix (its edit step run
//      under detail::fix_to_fixpoint, fixpoint.hpp), and an explain beside the others in
//      explain.cpp;
//   4. one row in methods.cpp (names, reader, judge, explain, per-layer decider);
//   5. tests: the rules (tests/engine/), the row (tests/diagnose/methods_test.cpp) and the CLI's
//      exact output (tests/cli/).
#pragma once

#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/engine/decision.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/skip_list_rules.hpp>
#include <qpatch/error.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qpatch::diagnose {

namespace detail {
struct JudgeInput;     // what a judge reads (judge_common.hpp)
struct ExplainContext; // what an explain reads and writes (judge_common.hpp)
struct DecideInput;    // what a per-layer decider is built from (judge_common.hpp)
} // namespace detail

// One engine version's rules over one config, layer by layer: what it builds (inspect's
// columns, explain's verdict) and every rule that bears on it (explain's trace).
class LayerRules {
public:
  virtual ~LayerRules() = default;
  virtual engine::Decision decide(const engine::Layer& layer) const = 0;
  virtual std::vector<std::pair<std::string, std::string>>
  trace(const engine::Layer& layer) const = 0;
};

struct Method {
  std::string_view name;                 // the canonical quant_method, as reports name it
  std::vector<std::string_view> aliases; // other spellings the engines accept for it
  engine::EngineSet engines = engine::EngineSet::none(); // whose rules are modelled for it
  // The skip-list family (awq, fp8, modelopt, bitsandbytes) share one judge over one list.
  std::optional<engine::SkipListMethod> skip_list;
  // The parameter a packed layer of this method registers that a dense checkpoint lacks (what
  // vLLM's "no module or parameter named" names).
  std::string_view packed_tensor;
  // Read the config view, then judge it (findings and fix) / trace one module under it.
  Status (*judge)(const detail::JudgeInput&, Diagnosis&) = nullptr;
  Status (*explain)(detail::ExplainContext&) = nullptr;
  // Read the config view, then return the rules of one engine version over it.
  Result<std::shared_ptr<const LayerRules>> (*rules)(const detail::DecideInput&) = nullptr;

  bool answers_to(std::string_view quant_method) const;
};

// Every method judged, in the order reports list them.
const std::vector<Method>& methods();
// The row `quant_method` names (canonical or alias), or null when no method judges it.
const Method* find_method(std::string_view quant_method);
// The engine an unmodelled method is judged by: the registry's first (vLLM).
engine::Engine reference_engine();
// The engines of `requested` whose rules are modelled for `method`, or the reference engine
// alone when none of them is (qpatch then judges as it loads it, and says so). Null (an unknown
// method): the reference engine.
engine::EngineSet modelled_engines(const Method* method, engine::EngineSet requested);
// "compressed-tensors, gptq, ... and bitsandbytes": the canonical names, for messages.
std::string judged_methods_text();

} // namespace qpatch::diagnose
