// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets share: a property check that stops the process (libFuzzer then saves
// the input as a crash; the ctest replay fails), and the UTF-8 test callers apply before a
// string reaches the code under test, and a scratch directory for targets that read files.
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace qpatch::fuzz {

// Stop with `what` on stderr unless `condition` holds.
inline void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

// True when `text` is well-formed UTF-8 (no overlong form, no surrogate, at most U+10FFFF):
// the strings qpatch hands on (tensor names from checked headers, strings nlohmann decoded).
inline bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t length = 1;
    unsigned lower = 0x80;
    unsigned upper = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      lower = c == 0xE0 ? 0xA0 : 0x80;
      upper = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      lower = c == 0xF0 ? 0x90 : 0x80;
      upper = c == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (i + length > text.size()) {
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < (k == 1 ? lower : 0x80) || next > (k == 1 ? upper : 0xBF)) {
        return false;
      }
    }
    i += length;
  }
  return true;
}

// One scratch directory per process ($TMPDIR/qpatch-<tag>-XXXXXX), removed at exit: where a
// target writes the config.json it then reads as qpatch does.
inline const std::filesystem::path& scratch_dir(const char* tag) {
  static const std::filesystem::path dir = [tag] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/qpatch-" + tag + "-XXXXXX";
    check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    return std::filesystem::path(pattern);
  }();
  static const bool removed_at_exit = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return true;
  }();
  (void)removed_at_exit;
  return dir;
}

} // namespace qpatch::fuzz
