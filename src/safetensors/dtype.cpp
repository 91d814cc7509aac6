// SPDX-License-Identifier: Apache-2.0
#include <qpatch/safetensors/dtype.hpp>

#include <array>
#include <utility>

namespace qpatch::safetensors {
namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  uint64_t bits;
};

constexpr std::array<DtypeInfo, 22> k_dtypes{{
    {Dtype::BOOL, "BOOL", 8},
    {Dtype::F4, "F4", 4},
    {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},
    {Dtype::U8, "U8", 8},
    {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},
    {Dtype::F8_E4M3, "F8_E4M3", 8},
    {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {Dtype::I16, "I16", 16},
    {Dtype::U16, "U16", 16},
    {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},
    {Dtype::I32, "I32", 32},
    {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},
    {Dtype::C64, "C64", 64},
    {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},
    {Dtype::U64, "U64", 64},
}};

} // namespace

std::optional<Dtype> parse_dtype(std::string_view text) {
  for (const auto& info : k_dtypes) {
    if (info.name == text) {
      return info.dtype;
    }
  }
  return std::nullopt;
}

std::string_view to_string(Dtype dtype) {
  return k_dtypes.at(static_cast<size_t>(dtype)).name;
}

uint64_t bits_of(Dtype dtype) {
  return k_dtypes.at(static_cast<size_t>(dtype)).bits;
}

bool is_dense_float(Dtype dtype) {
  return dtype == Dtype::BF16 || dtype == Dtype::F16 || dtype == Dtype::F32 || dtype == Dtype::F64;
}

bool is_float8(Dtype dtype) {
  return dtype == Dtype::F8_E5M2 || dtype == Dtype::F8_E4M3 || dtype == Dtype::F8_E8M0 ||
         dtype == Dtype::F8_E4M3FNUZ || dtype == Dtype::F8_E5M2FNUZ;
}

bool is_floating(Dtype dtype) {
  return is_dense_float(dtype) || is_float8(dtype) || dtype == Dtype::F4 ||
         dtype == Dtype::F6_E2M3 || dtype == Dtype::F6_E3M2 || dtype == Dtype::C64;
}

} // namespace qpatch::safetensors
