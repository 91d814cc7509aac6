// SPDX-License-Identifier: Apache-2.0
// Fuzz target: safetensors::HeaderParser::parse on whole shard bytes (length prefix, header JSON,
// data). Properties: an accepted header's tensors tile the data section exactly, each tensor's
// span is its elements times its dtype's bits, and the plain-JSON fast path gives the same
// outcome (the same tensors, or the same error) as the general path.
#include "fuzz_check.hpp"
#include "parse_outcome.hpp"

#include <qpatch/safetensors/reader.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using qpatch::fuzz::check;
using qpatch::fuzz::outcome;
namespace st = qpatch::safetensors;

void check_tiles(const st::Header& header, size_t file_size) {
  check(header.file_size == file_size, "file_size is the input's size");
  check(header.data_start() <= file_size, "the header fits in the file");
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& tensor : header.tensors) {
    check(tensor.begin <= tensor.end, "begin <= end");
    uint64_t bits = st::bits_of(tensor.dtype);
    for (const uint64_t dim : tensor.shape) {
      check(!__builtin_mul_overflow(bits, dim, &bits), "an accepted tensor's bits fit in 64 bits");
    }
    check(bits % 8 == 0 && bits / 8 == tensor.end - tensor.begin,
          "a tensor's span is its elements times its dtype's bits");
    spans.emplace_back(tensor.begin, tensor.end);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t cursor = 0;
  for (const auto& [begin, end] : spans) {
    check(begin == cursor, "tensors are packed back to back from offset 0");
    cursor = end;
  }
  check(header.data_start() + cursor == file_size, "the tensors cover the data section exactly");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static st::HeaderParser fast;
  static st::HeaderParser general;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  st::ReaderOptions general_only;
  general_only.plain_fast_path = false;
  const auto result = fast.parse(bytes, "m.safetensors");
  if (result.ok()) {
    check_tiles(*result, size);
  } else {
    check(!result.error().message.empty(), "an error says why");
    check(result.error().path == "m.safetensors", "an error names the file");
  }
  const auto reference = general.parse(bytes, "m.safetensors", general_only);
  check(outcome(result) == outcome(reference), "the fast path agrees with the general path");
  return 0;
}
