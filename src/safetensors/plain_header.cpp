// SPDX-License-Identifier: Apache-2.0
#include "safetensors/plain_header.hpp"

#include <qpatch/safetensors/dtype.hpp>

#include <string>

namespace qpatch::safetensors {
namespace {

// The two arrays of an entry, after their '[' and through their ']'. `take(c)` reads one
// punctuation byte: after any blanks for the general entry scan, exactly there for the writers'
// layout.
template <class Take> bool scan_dims(json::PlainScanner& in, TensorEntry& entry, Take&& take) {
  if (take(']')) {
    return true;
  }
  do {
    const auto dim = in.unsigned_integer();
    if (!dim) {
      return false;
    }
    entry.shape.push_back(*dim);
  } while (take(','));
  return take(']');
}

template <class Take> bool scan_offsets(json::PlainScanner& in, TensorEntry& entry, Take&& take) {
  const auto begin = in.unsigned_integer();
  if (!begin || !take(',')) {
    return false;
  }
  const auto end = in.unsigned_integer();
  if (!end || !take(']')) {
    return false;
  }
  entry.begin = *begin;
  entry.end = *end;
  return true;
}

} // namespace

// One tensor entry of a plain header: exactly dtype, shape and data_offsets, once each, in any
// order. False for anything else, which the general path then words.
bool scan_plain_entry(json::PlainScanner& in, TensorEntry& entry) {
  const auto take = [&in](char c) { return in.take(c); };
  if (!in.take('{')) {
    return false;
  }
  unsigned seen = 0;
  do {
    const auto field = in.string();
    if (!field || !in.take(':')) {
      return false;
    }
    unsigned bit = 0;
    if (json::is_literal(*field, "dtype")) {
      bit = 1;
      const auto text = in.string();
      const auto dtype = text ? parse_dtype(*text) : std::nullopt;
      if (!dtype) {
        return false;
      }
      entry.dtype = *dtype;
    } else if (json::is_literal(*field, "shape")) {
      bit = 2;
      if (!in.take('[') || !scan_dims(in, entry, take)) {
        return false;
      }
    } else if (json::is_literal(*field, "data_offsets")) {
      bit = 4;
      if (!in.take('[') || !scan_offsets(in, entry, take)) {
        return false;
      }
    } else {
      return false;
    }
    if ((seen & bit) != 0) {
      return false;
    }
    seen |= bit;
  } while (in.take(','));
  return in.take('}') && seen == 7;
}

// One tensor entry exactly as every safetensors writer emits it: serde's field order and no
// whitespace, `{"dtype":"BF16","shape":[4096,4096],"data_offsets":[0,33554432]}`. Tried first:
// three literal compares replace the field loop, its key scans and its whitespace skips, which
// were a third of the header phase. False leaves `in` anywhere: the caller rewinds and tries
// scan_plain_entry, which accepts any order and spacing.
bool scan_canonical_entry(json::PlainScanner& in, TensorEntry& entry) {
  if (!in.take_literal("{\"dtype\":")) {
    return false;
  }
  const auto text = in.string();
  const auto dtype = text ? parse_dtype(*text) : std::nullopt;
  if (!dtype || !in.take_literal(",\"shape\":[")) {
    return false;
  }
  entry.dtype = *dtype;
  const auto take = [&in](char c) { return in.take_exact(c); };
  return scan_dims(in, entry, take) && in.take_literal(",\"data_offsets\":[") &&
         scan_offsets(in, entry, take) && in.take_exact('}');
}

// __metadata__ as an object of plain strings with distinct keys.
bool scan_plain_metadata(json::PlainScanner& in, Header& header) {
  if (!in.take('{')) {
    return false;
  }
  if (in.take('}')) {
    return true;
  }
  do {
    const auto key = in.string();
    if (!key || !in.take(':')) {
      return false;
    }
    const auto value = in.string();
    if (!value) {
      return false;
    }
    for (const auto& [seen, _] : header.metadata) {
      if (seen == *key) {
        return false;
      }
    }
    header.metadata.emplace_back(std::string(*key), std::string(*value));
  } while (in.take(','));
  return in.take('}');
}

} // namespace qpatch::safetensors
