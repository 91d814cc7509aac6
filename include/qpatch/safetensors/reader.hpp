// SPDX-License-Identifier: Apache-2.0
// Reads the header of a .safetensors file. Never reads, maps or hashes tensor data.
//
// Layout: [0, 8) N, the header length, u64 little-endian; [8, 8+N) a UTF-8 JSON object, maybe
// padded with trailing spaces; [8+N, end) tensor data, packed back to back.
// Entry: "name": {"dtype": "BF16", "shape": [4096, 11008], "data_offsets": [b, e]}, b and e
// relative to the data start. Optional "__metadata__": null or an object of string values.
//
// Checks, in the reference reader's order (safetensors tensor.rs, SafeTensors::read_metadata);
// the first that fails decides the error. Codes follow the reference's variants:
//   1. at least 8 bytes                                   header_too_small
//   2. N <= 100'000'000                                   header_too_large
//   3. 8 + N <= file size, without overflow               invalid_header_length
//   4. the N bytes are valid UTF-8                        invalid_header
//   5. strict JSON: one object, no NUL byte, no BOM,      invalid_header_deserialization
//      depth <= 127, known dtypes, shape and data_offsets
//      of unsigned integers (no sign, fraction, exponent)
//      no key twice in any object (our policy: the        duplicate_key
//      reference keeps the last tensor of a name)
//   6. sorted by (b, e): b == running cursor, e >= b      invalid_offset
//   7. elements * bits without overflow, whole bytes      validation_overflow, misaligned_slice
//   8. e - b equals that many bytes                       tensor_invalid_info
//   9. the last e is the data size: 8 + N + e == file     metadata_incomplete_buffer
// Rank-0 tensors (shape []) and empty tensors (a 0 in the shape) are valid. Errors on a tensor
// carry the offset where its data starts (8 + N + b), the number a hex editor needs.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/safetensors/dtype.hpp>
#include <qpatch/util/hash_sort.hpp>
#include <qpatch/util/small_vector.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::safetensors {

// Dimensions; rank 4 or less (every Linear, conv1d, MXFP4 blocks) stays inline.
using Shape = util::SmallVector<uint64_t, 4>;

struct TensorEntry {
  std::string_view name; // points into Header::name_storage
  Dtype dtype{};
  Shape shape;
  uint64_t begin = 0; // data_offsets, relative to the start of the data section
  uint64_t end = 0;
};

struct Header {
  uint64_t header_size = 0; // N
  uint64_t file_size = 0;
  std::vector<TensorEntry> tensors; // in the header's JSON member order
  std::vector<std::pair<std::string, std::string>> metadata;
  std::shared_ptr<char[]> name_storage; // every tensor name, back to back (in a shared block)
  // The tensor names' fingerprints, summed while the names are in cache (on the reading thread):
  // the inventory compares them with what the index maps to this file.
  util::NameSum names;

  uint64_t data_start() const { return 8 + header_size; }
};

struct ReaderOptions {
  uint64_t max_header_size = limits::k_max_header_size;
  // Try the plain-JSON fast path first (see src/json/plain_scanner.hpp). Results are identical
  // either way; tests turn it off to compare the two paths.
  bool plain_fast_path = true;
};

// Parses headers one after another, reusing its buffers (a checkpoint has up to thousands).
class HeaderParser {
public:
  HeaderParser();
  ~HeaderParser();
  HeaderParser(const HeaderParser&) = delete;
  HeaderParser& operator=(const HeaderParser&) = delete;

  // Parse a whole file held in memory (tests and fuzzers). `path` only names it in errors.
  Result<Header>
  parse(std::string_view file_bytes, std::string_view path, const ReaderOptions& options = {});
  // Read and parse the header of `file`: 8 + N bytes and a stat, nothing more.
  Result<Header> read(const std::filesystem::path& file,
                      std::string_view display_path,
                      const ReaderOptions& options = {});
  // Hand back the entry list of a header the caller is done with: the next header parsed fills
  // it, so its memory is reused instead of page-faulted afresh (~300 KB a shard).
  void reuse(std::vector<TensorEntry> entries);

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Return "[5120, 10240]".
std::string format_shape(const Shape& shape);

} // namespace qpatch::safetensors
