// SPDX-License-Identifier: Apache-2.0
// The header fast path's pieces: the writers' exact entry layout is taken by the canonical scan,
// every other plain layout by the general entry scan, and what neither takes goes to the general
// parser (tests/fuzz/mutation_test.cpp checks that both paths agree on every outcome).
#include "safetensors/plain_header.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qpatch::safetensors {
namespace {

struct Scanned {
  bool taken = false;
  std::string rest; // what the scan left unread, when it took the entry
  TensorEntry entry;
};

template <class Scan> Scanned scan(Scan&& scan_entry, std::string_view text) {
  json::PlainScanner in(text);
  Scanned out;
  out.taken = scan_entry(in, out.entry);
  if (out.taken) {
    out.rest = std::string(in.position(), text.data() + text.size());
  }
  return out;
}

Scanned canonical(std::string_view text) {
  return scan(scan_canonical_entry, text);
}
Scanned plain(std::string_view text) {
  return scan(scan_plain_entry, text);
}

TEST(PlainHeader, TheWritersLayoutIsTakenByTheCanonicalScan) {
  const auto scanned =
      canonical(R"({"dtype":"BF16","shape":[7168,18432],"data_offsets":[0,264241152]},"next")");
  ASSERT_TRUE(scanned.taken);
  EXPECT_EQ(scanned.rest, R"(,"next")");
  EXPECT_EQ(scanned.entry.dtype, Dtype::BF16);
  EXPECT_EQ(scanned.entry.shape, (std::vector<uint64_t>{7168, 18432}));
  EXPECT_EQ(scanned.entry.begin, 0U);
  EXPECT_EQ(scanned.entry.end, 264241152U);

  const auto scalar = canonical(R"({"dtype":"F8_E4M3","shape":[],"data_offsets":[12,13]}})");
  ASSERT_TRUE(scalar.taken);
  EXPECT_EQ(scalar.rest, "}");
  EXPECT_EQ(scalar.entry.dtype, Dtype::F8_E4M3);
  EXPECT_TRUE(scalar.entry.shape.empty());
  EXPECT_EQ(scalar.entry.begin, 12U);

  const auto three = canonical(R"({"dtype":"I32","shape":[384,2048,896],"data_offsets":[1,2]})");
  ASSERT_TRUE(three.taken);
  EXPECT_EQ(three.entry.shape, (std::vector<uint64_t>{384, 2048, 896}));

  // Blanks before a value are skipped by the value readers, here as everywhere.
  const auto blanks = canonical(R"({"dtype": "U8","shape":[2, 3],"data_offsets":[0, 6]})");
  ASSERT_TRUE(blanks.taken);
  EXPECT_EQ(blanks.entry.shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(blanks.entry.end, 6U);
}

// Any other spelling of a valid entry is left to the general entry scan, which takes it the same.
TEST(PlainHeader, OtherLayoutsOfAValidEntryFallToTheGeneralEntryScan) {
  for (const std::string text : {
           R"({"shape":[2,3],"dtype":"U8","data_offsets":[0,6]})",
           R"({"dtype":"U8","data_offsets":[0,6],"shape":[2,3]})",
           R"({ "dtype":"U8","shape":[2,3],"data_offsets":[0,6]})",
           R"({"dtype":"U8" ,"shape":[2,3],"data_offsets":[0,6]})",
           R"({"dtype":"U8","shape":[2,3] ,"data_offsets":[0,6]})",
           R"({"dtype":"U8","shape":[2,3],"data_offsets":[0 ,6]})",
           R"({"dtype":"U8","shape":[2,3],"data_offsets":[0,6] })",
           "{\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[0,6]\n}",
       }) {
    EXPECT_FALSE(canonical(text).taken) << text;
    const auto scanned = plain(text);
    ASSERT_TRUE(scanned.taken) << text;
    EXPECT_EQ(scanned.entry.dtype, Dtype::U8) << text;
    EXPECT_EQ(scanned.entry.shape, (std::vector<uint64_t>{2, 3})) << text;
    EXPECT_EQ(scanned.entry.end, 6U) << text;
  }
}

// What is not a plain entry is taken by neither: the general parser words it.
TEST(PlainHeader, WhatIsNotAPlainEntryIsTakenByNeitherScan) {
  for (const std::string text : {
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,2],"extra":1})",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,2],"dtype":"U8"})",
           R"({"dtype":"U8","shape":[2],"shape":[2],"data_offsets":[0,2]})",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,2,4]})",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0]})",
           R"({"dtype":"U8","shape":[2]})",
           R"({"dtype":"u8","shape":[2],"data_offsets":[0,2]})",
           R"({"dtype":"U\u0038","shape":[2],"data_offsets":[0,2]})",
           R"({"dtype":"U8","shape":[2.0],"data_offsets":[0,2]})",
           R"({"dtype":"U8","shape":[02],"data_offsets":[0,2]})",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,2e0]})",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,18446744073709551616]})",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,2])",
           R"({"dtype":"U8","shape":[2],"data_offsets":[0,2)",
       }) {
    EXPECT_FALSE(canonical(text).taken) << text;
    EXPECT_FALSE(plain(text).taken) << text;
  }
}

} // namespace
} // namespace qpatch::safetensors
