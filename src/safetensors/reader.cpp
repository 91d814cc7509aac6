// SPDX-License-Identifier: Apache-2.0
// The safetensors header reader. simdjson's DOM parser does the strict JSON and UTF-8 work on the
// hot path (a 1T-parameter MoE has ~26 MB of header JSON); the rare error path re-parses with
// nlohmann to learn the byte offset of a syntax error, which simdjson does not report.
#include "json/plain_scanner.hpp"
#include "json/simdjson_util.hpp"
#include "safetensors/plain_header.hpp"

#include <qpatch/json/strict_json.hpp>
#include <qpatch/safetensors/reader.hpp>
#include <qpatch/util/checked.hpp>
#include <qpatch/util/file_descriptor.hpp>
#include <qpatch/util/hash_sort.hpp>
#include <qpatch/util/huge_pages.hpp>
#include <qpatch/util/name_index.hpp>

#include <simdjson.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <unordered_set>
#include <utility>

namespace qpatch::safetensors {
namespace {

using json::find_duplicate_key;
using json::type_name;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// A header-level problem: it concerns the whole header, so it carries the header's start offset
// unless a better one is known.
Error header_error(ErrorCode code, std::string_view path, uint64_t offset, std::string message) {
  return make_error(code, std::string(path), offset, "", std::move(message));
}

Error tensor_error(ErrorCode code,
                   std::string_view path,
                   std::optional<uint64_t> offset,
                   std::string_view tensor,
                   std::string message) {
  return make_error(code, std::string(path), offset, std::string(tensor), std::move(message));
}

// Position of the first byte that is not part of valid UTF-8, scanning scalar: error path only.
size_t first_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  while (pos < text.size()) {
    const unsigned char lead = byte(pos);
    size_t length = 0;
    uint32_t min = 0;
    if (lead < 0x80) {
      ++pos;
      continue;
    }
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, min = 0x10000;
    } else {
      return pos;
    }
    if (pos + length > text.size()) {
      return pos;
    }
    uint32_t code = lead & (0xFF >> (length + 1));
    for (size_t i = 1; i < length; ++i) {
      if ((byte(pos + i) & 0xC0) != 0x80) {
        return pos;
      }
      code = (code << 6) | (byte(pos + i) & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return pos;
    }
    pos += length;
  }
  return text.size();
}

// Position where nesting first exceeds the limit, scanning outside strings: error path only.
size_t first_too_deep(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (in_string) {
      if (c == '\\') {
        ++pos;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limits::k_max_json_depth) {
        return pos;
      }
    } else if (c == '}' || c == ']') {
      depth = depth == 0 ? 0 : depth - 1;
    }
  }
  return 0;
}

// The first integer token (outside strings) too large for 64 bits, as (position, token): simdjson
// rejects such numbers where nlohmann silently turns them into doubles. Error path only.
std::optional<std::pair<size_t, std::string_view>> first_oversized_integer(std::string_view text) {
  bool in_string = false;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (in_string) {
      if (c == '\\') {
        ++pos;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      continue;
    }
    size_t end = pos + 1;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
      ++end;
    }
    const std::string_view digits = text.substr(c == '-' ? pos + 1 : pos, end - pos - (c == '-'));
    const bool is_integer =
        end >= text.size() || (text[end] != '.' && text[end] != 'e' && text[end] != 'E');
    constexpr std::string_view k_u64_max = "18446744073709551615";
    if (is_integer && (digits.size() > k_u64_max.size() ||
                       (digits.size() == k_u64_max.size() && digits > k_u64_max))) {
      return std::pair(pos, text.substr(pos, end - pos));
    }
    pos = end - 1;
  }
  return std::nullopt;
}

constexpr std::string_view k_lfs_prefix = "version https://git-lfs";

std::string too_large_message(std::string_view prefix, uint64_t length, uint64_t max) {
  if (prefix.size() >= 8 && k_lfs_prefix.substr(0, 8) == prefix.substr(0, 8)) {
    return "this is a Git LFS pointer file, not tensor data: fetch the real file with "
           "`git lfs pull` (HeaderTooLarge)";
  }
  if (prefix.size() >= 4 && prefix.substr(0, 4) == std::string_view("PK\x03\x04", 4)) {
    return "this is a zip archive (a PyTorch checkpoint renamed?), not a safetensors file "
           "(HeaderTooLarge)";
  }
  return "header length " + std::to_string(length) + " is over the " + std::to_string(max) +
         "-byte limit (HeaderTooLarge)";
}

// Steps 1-3: the 8-byte prefix against the file size. Returns N.
Result<uint64_t> check_prefix(std::string_view prefix,
                              uint64_t file_size,
                              std::string_view path,
                              const ReaderOptions& options) {
  if (file_size < 8 || prefix.size() < 8) {
    return header_error(ErrorCode::header_too_small,
                        path,
                        0,
                        "file is " + std::to_string(file_size) +
                            " bytes, too short for the 8-byte header length (HeaderTooSmall)");
  }
  const uint64_t length = util::load_u64_le(reinterpret_cast<const unsigned char*>(prefix.data()));
  if (length > options.max_header_size) {
    return header_error(ErrorCode::header_too_large,
                        path,
                        0,
                        too_large_message(prefix, length, options.max_header_size));
  }
  const auto end = util::checked_add(8, length);
  if (!end || *end > file_size) {
    return header_error(ErrorCode::invalid_header_length,
                        path,
                        0,
                        "header length " + std::to_string(length) + " needs " +
                            std::to_string(8 + length) + " bytes, but the file has " +
                            std::to_string(file_size) + " (InvalidHeaderLength)");
  }
  return length;
}

// Reads one unsigned integer array (shape or data_offsets) exactly as serde reads Vec<usize>.
// `-0` parses as a signed 0 in simdjson, indistinguishable from `0`: the caller rejects it by a
// textual pre-check (see has_negative_zero).
template <class Out>
std::optional<std::string> read_unsigned_array(element value, std::string_view field, Out& out) {
  if (!value.is_array()) {
    return std::string(field) + " is " + type_name(value.type()) +
           ", expected an array of unsigned integers";
  }
  size_t index = 0;
  for (element item : value.get_array()) {
    const auto where = [&] { return std::string(field) + "[" + std::to_string(index) + "]"; };
    switch (item.type()) {
    case element_type::UINT64:
      out.push_back(item.get_uint64().value_unsafe());
      break;
    case element_type::INT64: {
      const int64_t v = item.get_int64().value_unsafe();
      if (v < 0) {
        return where() + " is " + std::to_string(v) + ", expected an unsigned integer";
      }
      out.push_back(static_cast<uint64_t>(v));
      break;
    }
    case element_type::DOUBLE:
      return where() + " is a floating-point number, expected an unsigned integer";
    default:
      return where() + " is " + type_name(item.type()) + ", expected an unsigned integer";
    }
    ++index;
  }
  return std::nullopt;
}

// True when the text holds a `-0` number token (not `-0.5`): serde rejects it as a usize.
bool has_negative_zero(std::string_view text) {
  for (size_t pos = text.find("-0"); pos != std::string_view::npos;
       pos = text.find("-0", pos + 1)) {
    const size_t next = pos + 2;
    if (next >= text.size() || (text[next] != '.' && text[next] != 'e' && text[next] != 'E' &&
                                !(text[next] >= '0' && text[next] <= '9'))) {
      return true;
    }
  }
  return false;
}

} // namespace

struct HeaderParser::Impl {
  simdjson::dom::parser parser;
  std::string buffer;             // N header bytes plus simdjson's padding
  util::NameIndex names;          // duplicate detection, reused from header to header
  std::vector<TensorEntry> spare; // an entry list handed back by reuse(), filled next
  util::ByteArena name_arena;     // every header's names, in shared huge-page blocks

  Result<Header> parse_text(std::string_view text,
                            uint64_t file_size,
                            std::string_view path,
                            const ReaderOptions& options);
  bool scan_plain(std::string_view text, Header& header);
  Result<Header> parse_general(std::string_view text, uint64_t file_size, std::string_view path);
  Result<Header> finish(Header header, std::string_view path);
  Result<Header>
  syntax_error(std::string_view text, simdjson::error_code code, std::string_view path);
  std::optional<Error>
  read_entry(std::string_view name, element value, std::string_view path, TensorEntry& entry);
  std::optional<Error> read_metadata(element value, std::string_view path, Header& header);
  std::optional<Error> check_offsets(const Header& header, std::string_view path);
};

// The fast path (json/plain_scanner.hpp): true when the whole text is a plain header with
// distinct names, parsed into `header`. False means "use the general path", never "invalid".
bool HeaderParser::Impl::scan_plain(std::string_view text, Header& header) {
  json::PlainScanner in(text);
  if (!in.take('{')) {
    return false;
  }
  names.clear();
  header.tensors.reserve(text.size() / 96 + 16); // ~100-140 bytes of JSON a tensor
  if (in.take('}')) {
    return in.at_end();
  }
  bool seen_metadata = false;
  do {
    const auto key = in.string();
    if (!key || !in.take(':')) {
      return false;
    }
    if (json::is_literal(*key, "__metadata__")) {
      if (std::exchange(seen_metadata, true) || !scan_plain_metadata(in, header)) {
        return false;
      }
      continue;
    }
    // Both hashes of the name while it is in cache: one finds duplicates, both go into the
    // header's name sum, which the inventory compares with the index.
    const util::NameFingerprint fingerprint = util::fingerprint_name(*key);
    const bool inserted = names
                              .insert(*key,
                                      fingerprint.hash,
                                      static_cast<uint32_t>(header.tensors.size()),
                                      [&](uint32_t id) { return header.tensors[id].name; })
                              .second;
    if (!inserted) {
      return false;
    }
    header.names.add(fingerprint);
    TensorEntry& entry = header.tensors.emplace_back();
    entry.name = *key;
    const char* entry_start = in.position();
    if (!scan_canonical_entry(in, entry)) {
      in.rewind(entry_start);
      entry.shape.clear();
      if (!scan_plain_entry(in, entry)) {
        return false;
      }
    }
  } while (in.take(','));
  return in.take('}') && in.at_end();
}

Result<Header> HeaderParser::Impl::syntax_error(std::string_view text,
                                                simdjson::error_code code,
                                                std::string_view path) {
  if (code == simdjson::DEPTH_ERROR) {
    return header_error(ErrorCode::invalid_header_deserialization,
                        path,
                        8 + first_too_deep(text),
                        "JSON nested deeper than " + std::to_string(limits::k_max_json_depth) +
                            " levels (InvalidHeaderDeserialization)");
  }
  if (code == simdjson::NUMBER_ERROR) {
    if (auto big = first_oversized_integer(text)) {
      return header_error(ErrorCode::invalid_header_deserialization,
                          path,
                          8 + big->first,
                          "integer " + std::string(big->second) +
                              " does not fit in 64 bits (InvalidHeaderDeserialization)");
    }
  }
  // nlohmann reports where the text went wrong; simdjson only that it did.
  if (auto located = json::locate_syntax_error(text)) {
    return header_error(ErrorCode::invalid_header_deserialization,
                        path,
                        8 + located->pos,
                        located->message + " (InvalidHeaderDeserialization)");
  }
  return header_error(ErrorCode::invalid_header_deserialization,
                      path,
                      8,
                      std::string(simdjson::error_message(code)) +
                          " (InvalidHeaderDeserialization)");
}

std::optional<Error> HeaderParser::Impl::read_entry(std::string_view name,
                                                    element value,
                                                    std::string_view path,
                                                    TensorEntry& entry) {
  const auto fail = [&](std::string message) {
    return tensor_error(ErrorCode::invalid_header_deserialization,
                        path,
                        std::nullopt,
                        name,
                        message + " (InvalidHeaderDeserialization)");
  };
  if (!value.is_object()) {
    return fail("entry is " + type_name(value.type()) +
                ", expected an object with dtype, shape and data_offsets");
  }
  entry.name = name;
  bool has_dtype = false;
  bool has_shape = false;
  bool has_offsets = false;
  util::SmallVector<uint64_t, 2> offsets;
  for (auto field : value.get_object()) {
    bool* seen = nullptr;
    if (field.key == "dtype") {
      seen = &has_dtype;
    } else if (field.key == "shape") {
      seen = &has_shape;
    } else if (field.key == "data_offsets") {
      seen = &has_offsets;
    } else {
      // Unknown fields are ignored, as by the reference, but our no-duplicate rule reaches in.
      if (auto key = find_duplicate_key(field.value)) {
        return tensor_error(ErrorCode::duplicate_key,
                            path,
                            std::nullopt,
                            name,
                            "key \"" + *key + "\" appears twice in field \"" +
                                std::string(field.key) + "\"");
      }
      continue;
    }
    if (*seen) {
      return tensor_error(ErrorCode::duplicate_key,
                          path,
                          std::nullopt,
                          name,
                          "field \"" + std::string(field.key) + "\" appears twice in the entry");
    }
    *seen = true;
    if (field.key == "dtype") {
      if (!field.value.is_string()) {
        return fail("dtype is " + type_name(field.value.type()) + ", expected a string");
      }
      const std::string_view text = field.value.get_string().value_unsafe();
      const auto dtype = parse_dtype(text);
      if (!dtype) {
        return fail("unknown dtype \"" + std::string(text) + "\"");
      }
      entry.dtype = *dtype;
    } else if (field.key == "shape") {
      if (auto problem = read_unsigned_array(field.value, "shape", entry.shape)) {
        return fail(*problem);
      }
    } else {
      if (auto problem = read_unsigned_array(field.value, "data_offsets", offsets)) {
        return fail(*problem);
      }
      if (offsets.size() != 2) {
        return fail("data_offsets has " + std::to_string(offsets.size()) + " elements, expected 2");
      }
      entry.begin = offsets[0];
      entry.end = offsets[1];
    }
  }
  for (const auto& [present, field] : {std::pair{has_dtype, "dtype"},
                                       std::pair{has_shape, "shape"},
                                       std::pair{has_offsets, "data_offsets"}}) {
    if (!present) {
      return fail(std::string("missing field \"") + field + "\"");
    }
  }
  return std::nullopt;
}

std::optional<Error>
HeaderParser::Impl::read_metadata(element value, std::string_view path, Header& header) {
  if (value.is_null()) {
    return std::nullopt; // the reference treats null as absent
  }
  const auto fail = [&](std::string message) {
    return tensor_error(ErrorCode::invalid_header_deserialization,
                        path,
                        std::nullopt,
                        "__metadata__",
                        message + " (InvalidHeaderDeserialization)");
  };
  if (!value.is_object()) {
    return fail("__metadata__ is " + type_name(value.type()) + ", expected an object of strings");
  }
  std::unordered_set<std::string_view> keys;
  for (auto field : value.get_object()) {
    if (!keys.insert(field.key).second) {
      return tensor_error(ErrorCode::duplicate_key,
                          path,
                          std::nullopt,
                          "__metadata__",
                          "key \"" + std::string(field.key) + "\" appears twice");
    }
    if (!field.value.is_string()) {
      return fail("value of \"" + std::string(field.key) + "\" is " +
                  type_name(field.value.type()) + ", expected a string");
    }
    header.metadata.emplace_back(std::string(field.key),
                                 std::string(field.value.get_string().value_unsafe()));
  }
  return std::nullopt;
}

std::optional<Error> HeaderParser::Impl::check_offsets(const Header& header,
                                                       std::string_view path) {
  std::vector<uint32_t> order(header.tensors.size());
  std::iota(order.begin(), order.end(), 0U);
  const auto by_offsets = [&](uint32_t a, uint32_t b) {
    const auto& x = header.tensors[a];
    const auto& y = header.tensors[b];
    return std::pair(x.begin, x.end) < std::pair(y.begin, y.end);
  };
  // The reference writer lists tensors in data order, so the sort is usually a no-op: skip it.
  if (!std::is_sorted(order.begin(), order.end(), by_offsets)) {
    std::stable_sort(order.begin(), order.end(), by_offsets);
  }
  const uint64_t data_start = header.data_start();
  uint64_t cursor = 0;
  for (const uint32_t index : order) {
    const TensorEntry& t = header.tensors[index];
    const auto where = util::checked_add(data_start, t.begin);
    const auto offsets = [&] {
      return "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    };
    if (t.begin != cursor) {
      return tensor_error(ErrorCode::invalid_offset,
                          path,
                          where,
                          t.name,
                          offsets() + " start at " + std::to_string(t.begin) + ", expected " +
                              std::to_string(cursor) +
                              (t.begin > cursor ? ": a gap after the previous tensor"
                                                : ": it overlaps the previous tensor") +
                              " (InvalidOffset)");
    }
    if (t.end < t.begin) {
      return tensor_error(ErrorCode::invalid_offset,
                          path,
                          where,
                          t.name,
                          offsets() + " end before they begin (InvalidOffset)");
    }
    const auto described = [&] {
      return "shape " + format_shape(t.shape) + " of " + std::string(to_string(t.dtype));
    };
    std::optional<uint64_t> elements = 1;
    for (const uint64_t dim : t.shape) {
      elements = elements ? util::checked_mul(*elements, dim) : std::nullopt;
    }
    const auto bits = elements ? util::checked_mul(*elements, bits_of(t.dtype)) : std::nullopt;
    if (!bits) {
      return tensor_error(ErrorCode::validation_overflow,
                          path,
                          where,
                          t.name,
                          described() + " overflows 64 bits (ValidationOverflow)");
    }
    if (*bits % 8 != 0) {
      return tensor_error(ErrorCode::misaligned_slice,
                          path,
                          where,
                          t.name,
                          described() + " is " + std::to_string(*bits) +
                              " bits, not a whole number of bytes (MisalignedSlice)");
    }
    if (t.end - t.begin != *bits / 8) {
      return tensor_error(ErrorCode::tensor_invalid_info,
                          path,
                          where,
                          t.name,
                          "data_offsets cover " + std::to_string(t.end - t.begin) + " bytes, but " +
                              described() + " needs " + std::to_string(*bits / 8) +
                              " (TensorInvalidInfo)");
    }
    cursor = t.end;
  }
  const auto data_end = util::checked_add(data_start, cursor);
  if (!data_end || *data_end != header.file_size) {
    return header_error(ErrorCode::metadata_incomplete_buffer,
                        path,
                        data_end.value_or(data_start),
                        "tensor data ends at byte " +
                            (data_end ? std::to_string(*data_end) : std::string("2^64+")) +
                            ", but the file has " + std::to_string(header.file_size) +
                            " bytes (MetadataIncompleteBuffer)");
  }
  return std::nullopt;
}

Result<Header> HeaderParser::Impl::parse_text(std::string_view text,
                                              uint64_t file_size,
                                              std::string_view path,
                                              const ReaderOptions& options) {
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    return header_error(ErrorCode::invalid_header,
                        path,
                        8 + first_invalid_utf8(text),
                        "header is not valid UTF-8 (InvalidHeader)");
  }
  // nlohmann and simdjson differ from serde here; match serde explicitly.
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return header_error(
        ErrorCode::invalid_header_deserialization,
        path,
        8,
        "header starts with a UTF-8 byte-order mark (InvalidHeaderDeserialization)");
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return header_error(ErrorCode::invalid_header_deserialization,
                        path,
                        8 + nul,
                        "NUL byte in the header (InvalidHeaderDeserialization)");
  }
  Header header;
  header.header_size = text.size();
  header.file_size = file_size;
  header.tensors = std::move(spare);
  header.tensors.clear();
  spare = {};
  if (options.plain_fast_path && scan_plain(text, header)) {
    return finish(std::move(header), path);
  }
  return parse_general(text, file_size, path);
}

Result<Header> HeaderParser::Impl::parse_general(std::string_view text,
                                                 uint64_t file_size,
                                                 std::string_view path) {
  if (parser.capacity() < text.size() || parser.max_depth() != limits::k_max_json_depth) {
    if (auto code = parser.allocate(std::max<size_t>(text.size() + text.size() / 4, 4096),
                                    limits::k_max_json_depth)) {
      return header_error(ErrorCode::io_error, path, 8, simdjson::error_message(code));
    }
  }
  element root;
  if (auto code = parser.parse(text.data(), text.size(), false).get(root)) {
    return syntax_error(text, code, path);
  }
  if (!root.is_object()) {
    const size_t start = text.find_first_not_of(" \t\r\n");
    return header_error(ErrorCode::invalid_header_deserialization,
                        path,
                        8 + (start == std::string_view::npos ? 0 : start),
                        "header is " + type_name(root.type()) +
                            ", expected a JSON object (InvalidHeaderDeserialization)");
  }
  if (has_negative_zero(text)) {
    // Rare: find out whether the -0 sits in a shape or data_offsets, where serde rejects it.
    if (auto where = json::find_negative_zero_in_tensor_fields(text)) {
      return tensor_error(ErrorCode::invalid_header_deserialization,
                          path,
                          8 + where->pos,
                          where->tensor,
                          where->field + " holds -0, expected an unsigned integer "
                                         "(InvalidHeaderDeserialization)");
    }
  }
  Header header;
  header.header_size = text.size();
  header.file_size = file_size;
  const object fields = root.get_object().value_unsafe();
  header.tensors.reserve(fields.size());
  names.clear();
  names.reserve(fields.size());
  bool seen_metadata = false;
  for (auto field : fields) {
    const bool is_metadata = field.key == "__metadata__";
    const util::NameFingerprint fingerprint =
        is_metadata ? util::NameFingerprint{} : util::fingerprint_name(field.key);
    const bool duplicate = is_metadata
                               ? std::exchange(seen_metadata, true)
                               : !names
                                      .insert(field.key,
                                              fingerprint.hash,
                                              static_cast<uint32_t>(header.tensors.size()),
                                              [&](uint32_t id) { return header.tensors[id].name; })
                                      .second;
    if (duplicate) {
      return tensor_error(ErrorCode::duplicate_key,
                          path,
                          std::nullopt,
                          field.key,
                          field.key == "__metadata__" ? "__metadata__ appears twice in the header"
                                                      : "tensor name appears twice in the header");
    }
    if (field.key == "__metadata__") {
      if (auto problem = read_metadata(field.value, path, header)) {
        return *problem;
      }
      continue;
    }
    TensorEntry entry;
    if (auto problem = read_entry(field.key, field.value, path, entry)) {
      return *problem;
    }
    header.tensors.push_back(std::move(entry));
    header.names.add(fingerprint);
  }
  return finish(std::move(header), path);
}

// Checks and copies shared by both paths, once the entries are known.
Result<Header> HeaderParser::Impl::finish(Header header, std::string_view path) {
  if (auto problem = check_offsets(header, path)) {
    return *problem;
  }
  // The names point into the parser's buffer, which the next header reuses: copy them once.
  size_t names_size = 0;
  for (const TensorEntry& tensor : header.tensors) {
    names_size += tensor.name.size();
  }
  header.name_storage = name_arena.allocate(names_size + 1);
  char* cursor = header.name_storage.get();
  for (TensorEntry& tensor : header.tensors) {
    std::memcpy(cursor, tensor.name.data(), tensor.name.size());
    tensor.name = std::string_view(cursor, tensor.name.size());
    cursor += tensor.name.size();
  }
  return header;
}

HeaderParser::HeaderParser() : m_impl(std::make_unique<Impl>()) {}

void HeaderParser::reuse(std::vector<TensorEntry> entries) {
  m_impl->spare = std::move(entries);
}
HeaderParser::~HeaderParser() = default;

Result<Header> HeaderParser::parse(std::string_view file_bytes,
                                   std::string_view path,
                                   const ReaderOptions& options) {
  QP_TRY_ASSIGN(const uint64_t length,
                check_prefix(file_bytes.substr(0, 8), file_bytes.size(), path, options));
  m_impl->buffer.assign(file_bytes.substr(8, length));
  m_impl->buffer.append(simdjson::SIMDJSON_PADDING, ' ');
  return m_impl->parse_text(
      std::string_view(m_impl->buffer.data(), length), file_bytes.size(), path, options);
}

namespace {

// Read exactly `size` bytes at `offset`, retrying short reads.
bool read_exact(int fd, char* out, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      if (got == 0) {
        errno = 0; // end of file: shorter than fstat said (it changed while being read)
      }
      return false;
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

} // namespace

Result<Header> HeaderParser::read(const std::filesystem::path& file,
                                  std::string_view display_path,
                                  const ReaderOptions& options) {
  // Every failed call's message ends with its errno text ("cannot read: Is a directory").
  const auto io_fail = [&](const std::string& what) {
    const int error = errno;
    return header_error(ErrorCode::io_error,
                        display_path,
                        0,
                        what + ": " + (error != 0 ? std::strerror(error) : "the file ended early"));
  };
  const util::FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return io_fail("cannot open");
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return io_fail("cannot stat");
  }
  const auto file_size = static_cast<uint64_t>(info.st_size);
  char prefix[8] = {};
  const size_t prefix_size = file_size < 8 ? static_cast<size_t>(file_size) : 8;
  if (!read_exact(fd.get(), prefix, prefix_size, 0)) {
    return io_fail("cannot read");
  }
  QP_TRY_ASSIGN(
      const uint64_t length,
      check_prefix(std::string_view(prefix, prefix_size), file_size, display_path, options));
  // The cap and the file size bound `length` before this allocation.
  m_impl->buffer.resize(static_cast<size_t>(length) + simdjson::SIMDJSON_PADDING);
  if (!read_exact(fd.get(), m_impl->buffer.data(), static_cast<size_t>(length), 8)) {
    return io_fail("cannot read the header");
  }
  std::fill(
      m_impl->buffer.begin() + static_cast<std::ptrdiff_t>(length), m_impl->buffer.end(), ' ');
  return m_impl->parse_text(std::string_view(m_impl->buffer.data(), static_cast<size_t>(length)),
                            file_size,
                            display_path,
                            options);
}

std::string format_shape(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

} // namespace qpatch::safetensors
