// SPDX-License-Identifier: Apache-2.0
// The safetensors dtype enum, in the reference order (safetensors tensor.rs `Dtype`), with the
// bit width the size rule uses. Spellings are case-sensitive; anything else fails the header.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace qpatch::safetensors {

enum class Dtype : uint8_t {
  BOOL,
  F4,
  F6_E2M3,
  F6_E3M2,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  C64,
  F64,
  I64,
  U64,
};

// Return the dtype spelled `text`, or nothing for an unknown spelling.
std::optional<Dtype> parse_dtype(std::string_view text);
std::string_view to_string(Dtype dtype);
// Return the bits one element occupies (4 for F4, 6 for F6_*).
uint64_t bits_of(Dtype dtype);
// True for BF16, F16, F32, F64: the dtypes of a dense weight.
bool is_dense_float(Dtype dtype);
// True for every FP8 flavour (F8_E8M0 included: it is a scale exponent type).
bool is_float8(Dtype dtype);
// True for the float dtypes any engine treats as "not quantized data" when deriving skip lists.
bool is_floating(Dtype dtype);

} // namespace qpatch::safetensors
