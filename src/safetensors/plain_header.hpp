// SPDX-License-Identifier: Apache-2.0
// The header reader's fast path, a piece at a time (json/plain_scanner.hpp): one tensor entry in
// the exact layout writers emit, one entry in any plain layout, and __metadata__. Each returns
// false for anything outside what it takes, never "invalid": the reader then tries the next,
// more general, way. Private to src/.
#pragma once

#include "json/plain_scanner.hpp"

#include <qpatch/safetensors/reader.hpp>

namespace qpatch::safetensors {

// `{"dtype":"BF16","shape":[4096,4096],"data_offsets":[0,33554432]}` exactly: serde's field
// order and no whitespace. False leaves `in` anywhere; `entry` may be partly filled.
bool scan_canonical_entry(json::PlainScanner& in, TensorEntry& entry);

// An entry with exactly dtype, shape and data_offsets, once each, in any order and spacing.
bool scan_plain_entry(json::PlainScanner& in, TensorEntry& entry);

// __metadata__ as an object of plain strings with distinct keys, appended to header.metadata.
bool scan_plain_metadata(json::PlainScanner& in, Header& header);

} // namespace qpatch::safetensors
