// SPDX-License-Identifier: Apache-2.0
// Python `re` on PCRE2. Differences handled here: Python's `\Z` is PCRE2's `\z` (end of subject
// only); str patterns are Unicode-aware (PCRE2_UCP). `$` already means "end or before a final
// newline" in both. re.match is PCRE2_ANCHORED; re.fullmatch adds PCRE2_ENDANCHORED.
#include <qpatch/engine/pattern.hpp>
#include <qpatch/limits.hpp>

#include <pcre2.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

namespace qpatch::engine {

// The pattern is compiled once as written, which reports errors. Each mode then gets its own
// copy, compiled on first use with its anchoring built in and JIT-compiled: PCRE2's JIT ignores
// anchoring given at match time, and the interpreter spent ~7,000 instructions per match of a
// typical `re:.*mlp\.experts.*` target, a third of judging a 1T-parameter MoE. Matching follows
// the same limits: the match limit also bounds JIT (counted its own way), and a pattern the JIT
// cannot take runs in the interpreter.
struct Pattern::Code {
  std::string translated;
  pcre2_code* code = nullptr; // as compiled first, unanchored
  pcre2_match_context* context = nullptr;
  mutable std::array<std::once_flag, 3> prepared;  // by MatchMode
  mutable std::array<pcre2_code*, 3> by_mode = {}; // owned, except search's (== code)
  // Set when a match hit a limit: the pattern is undecidable from then on, for every subject
  // and mode, without trying again. A pathological entry (`re:^([\w.]+)+[^\w.]$`) then costs
  // one limit per run instead of one per module name (28.7 s on a 27B layout).
  mutable std::atomic<bool> exhausted{false};
  ~Code() {
    for (size_t m = 0; m < by_mode.size(); ++m) {
      if (by_mode[m] != code) {
        pcre2_code_free(by_mode[m]);
      }
    }
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
  const pcre2_code* for_mode(MatchMode mode) const {
    const auto m = static_cast<size_t>(mode);
    std::call_once(prepared[m], [&] {
      uint32_t anchoring = 0;
      if (mode == MatchMode::match) {
        anchoring = PCRE2_ANCHORED;
      } else if (mode == MatchMode::fullmatch) {
        anchoring = PCRE2_ANCHORED | PCRE2_ENDANCHORED;
      }
      pcre2_code* compiled = code;
      if (anchoring != 0) {
        int error_code = 0;
        PCRE2_SIZE error_offset = 0;
        compiled = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                 translated.size(),
                                 PCRE2_UTF | PCRE2_UCP | anchoring,
                                 &error_code,
                                 &error_offset,
                                 nullptr);
      }
      if (compiled != nullptr) {
        pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE); // failure: the interpreter runs it
      }
      by_mode[m] = compiled;
    });
    return by_mode[m];
  }
};

namespace {

// Rewrite the Python-only escape `\Z` to PCRE2's `\z`, leaving `\\Z` (a literal backslash) alone.
std::string translate(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      out += '\\';
      out += pattern[i + 1] == 'Z' ? 'z' : pattern[i + 1];
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

} // namespace

namespace {

struct Interned {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Pattern::Code>> by_text;
};

} // namespace

// One compiled copy per pattern text for the whole run, shared by every judge and engine view:
// a pattern that gave up stays given up (Code::exhausted), whoever asks next.
static Interned& interned() {
  static Interned table;
  return table;
}

void Pattern::forget_compiled() {
  Interned& table = interned();
  const std::lock_guard<std::mutex> lock(table.mutex);
  table.by_text.clear();
}

Result<Pattern> Pattern::compile(std::string_view pattern, std::string_view source) {
  if (pattern.size() > limits::k_max_pattern_size) {
    return make_error(ErrorCode::limit_exceeded,
                      std::string(source),
                      std::nullopt,
                      std::string(pattern.substr(0, 40)) + "...",
                      "pattern is " + std::to_string(pattern.size()) + " characters, over the " +
                          std::to_string(limits::k_max_pattern_size) + "-character limit");
  }
  Interned& table = interned();
  {
    const std::lock_guard<std::mutex> lock(table.mutex);
    if (const auto found = table.by_text.find(std::string(pattern)); found != table.by_text.end()) {
      Pattern result;
      result.m_code = found->second;
      result.m_text = std::string(pattern);
      return result;
    }
  }
  const std::string translated = translate(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                   translated.size(),
                                   PCRE2_UTF | PCRE2_UCP,
                                   &error_code,
                                   &error_offset,
                                   nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error_code, buffer, sizeof buffer);
    Error error = make_error(ErrorCode::invalid_pattern,
                             std::string(source),
                             std::nullopt,
                             std::string(pattern),
                             "cannot compile at character " + std::to_string(error_offset) + ": " +
                                 reinterpret_cast<const char*>(buffer));
    error.subject_kind = "pattern";
    return error;
  }
  auto compiled = std::make_shared<Code>();
  compiled->translated = translated;
  compiled->code = code;
  compiled->context = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(compiled->context, limits::k_pattern_match_limit);
  pcre2_set_depth_limit(compiled->context, limits::k_pattern_depth_limit);
  Pattern result;
  result.m_code = std::move(compiled);
  result.m_text = std::string(pattern);
  const std::lock_guard<std::mutex> lock(table.mutex);
  table.by_text.emplace(result.m_text, result.m_code);
  return result;
}

bool Pattern::exhausted() const {
  return m_code->exhausted.load(std::memory_order_relaxed);
}

std::optional<bool> Pattern::matches(std::string_view subject, MatchMode mode) const {
  if (m_code->exhausted.load(std::memory_order_relaxed)) {
    return std::nullopt;
  }
  const pcre2_code* code = m_code->for_mode(mode);
  uint32_t options = 0;
  if (code == nullptr) { // the anchored copy did not compile (never seen): anchor at match time
    code = m_code->code;
    options = mode == MatchMode::match ? PCRE2_ANCHORED : PCRE2_ANCHORED | PCRE2_ENDANCHORED;
  }
  // Only whether it matched is asked, so one pair of offsets will do (a match with more groups
  // than that returns 0, still a match), in match data each thread keeps: creating and freeing
  // it per call was two allocations for each of ~15k matches in a fix of a 1T-parameter MoE.
  thread_local const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create(1, nullptr), &pcre2_match_data_free);
  if (!data) {
    throw std::bad_alloc();
  }
  const int rc = pcre2_match(code,
                             reinterpret_cast<PCRE2_SPTR>(subject.data()),
                             subject.size(),
                             0,
                             options,
                             data.get(),
                             m_code->context);
  if (rc >= 0) {
    return true;
  }
  if (rc == PCRE2_ERROR_NOMATCH) {
    return false;
  }
  m_code->exhausted.store(true, std::memory_order_relaxed);
  return std::nullopt;
}

} // namespace qpatch::engine
