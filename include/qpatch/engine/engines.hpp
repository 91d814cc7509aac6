// SPDX-License-Identifier: Apache-2.0
// The serving engines whose rules qpatch models, and a set of them (`--engine`). With more than
// one engine a patch must satisfy all of them at once, and each finding says which it affects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qpatch::engine {

enum class Engine : uint8_t { vllm = 1, sglang = 2, transformers = 4 };

// Every engine of the registry, in the order reports list them (engines.cpp).
std::vector<Engine> all_engines();
// "vllm", "sglang", "transformers": as --engine and JSON spell it.
std::string_view to_string(Engine engine);
// The values --engine takes without a version: every engine's name, then "all".
std::vector<std::string> engine_choices();
// True when the engine's rules are modelled for `quant_method` (canonical name).
bool models_method(Engine engine, std::string_view quant_method);
// The code base and version whose rules are modelled for `quant_method` (an engine's rules for
// one method may come from another snapshot than the rest).
std::string_view rules_of(Engine engine, std::string_view quant_method = "compressed-tensors");
// How reports name the engine in sentences ("vLLM").
std::string_view display_name(Engine engine);

// "a", "a and b", "a, b and c": how reports list engines (or their rules).
std::string join_names(const std::vector<std::string>& names);

class EngineSet;
// "vllm main 017e9f4 (2026-08-17), sglang 2026 (#35887) and transformers + ...": the rules of
// every engine in `engines`, for the sentence "judged as ... load(s) it".
std::string rules_of(const EngineSet& engines,
                     std::string_view quant_method = "compressed-tensors");

class EngineSet {
public:
  static EngineSet all() { return EngineSet(7); }
  static EngineSet none() { return EngineSet(0); }
  static EngineSet only(Engine engine) { return EngineSet(static_cast<uint8_t>(engine)); }
  // Parse "vllm", "sglang", "transformers" or "all".
  static std::optional<EngineSet> parse(std::string_view text);

  bool has(Engine engine) const { return (m_bits & static_cast<uint8_t>(engine)) != 0; }
  void add(Engine engine) { m_bits = static_cast<uint8_t>(m_bits | static_cast<uint8_t>(engine)); }
  void remove(Engine engine) {
    m_bits = static_cast<uint8_t>(m_bits & ~static_cast<uint8_t>(engine));
  }
  bool empty() const { return m_bits == 0; }
  bool operator==(const EngineSet& other) const { return m_bits == other.m_bits; }
  std::vector<Engine> list() const; // in the order vllm, sglang, transformers
  std::vector<std::string> names() const;

private:
  explicit EngineSet(uint8_t bits) : m_bits(bits) {}
  uint8_t m_bits = 0;
};

} // namespace qpatch::engine
