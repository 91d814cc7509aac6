// SPDX-License-Identifier: Apache-2.0
// The fast-path scanner's integers and the dtype names it feeds: exact at every boundary, since a
// wrong "yes" here would skip the general parser's error.
#include "json/plain_scanner.hpp"

#include <qpatch/safetensors/dtype.hpp>

#include <gtest/gtest.h>

#include <string>

namespace qpatch::json {
namespace {

// The integer at the start of `text`, then what follows it; "-" when the scanner refuses.
std::string scan_integer(std::string_view text) {
  PlainScanner in(text);
  const auto value = in.unsigned_integer();
  if (!value) {
    return "-";
  }
  std::string rest;
  while (!in.at_end()) {
    rest += in.peek();
    in.take(in.peek());
  }
  return std::to_string(*value) + "|" + rest;
}

TEST(PlainScanner, UnsignedIntegersAtTheSixtyFourBitBoundary) {
  EXPECT_EQ(scan_integer("0]"), "0|]");
  EXPECT_EQ(scan_integer("7340032,"), "7340032|,");
  EXPECT_EQ(scan_integer("9999999999999999999]"), "9999999999999999999|]"); // 19 digits
  EXPECT_EQ(scan_integer("10000000000000000000]"), "10000000000000000000|]");
  EXPECT_EQ(scan_integer("18446744073709551615]"), "18446744073709551615|]"); // 2^64 - 1
  EXPECT_EQ(scan_integer("18446744073709551616]"), "-");
  EXPECT_EQ(scan_integer("18446744073709551620]"), "-");
  EXPECT_EQ(scan_integer("99999999999999999999]"), "-");
  EXPECT_EQ(scan_integer("100000000000000000000]"), "-"); // 21 digits
  EXPECT_EQ(scan_integer("000000000000000000001]"), "-");
}

// Eight digits are read at a time while eight bytes remain: every length, with and without room
// after the number, and a non-digit at every position of the word.
TEST(PlainScanner, UnsignedIntegersOfEveryLengthWithAndWithoutRoomAfterThem) {
  const std::string digits = "9876543210123456789";
  for (size_t length = 1; length <= digits.size(); ++length) {
    const std::string number = digits.substr(0, length);
    EXPECT_EQ(scan_integer(number + "]"), number + "|]");
    EXPECT_EQ(scan_integer(number + ",1234567890]"), number + "|,1234567890]");
    EXPECT_EQ(scan_integer(number), number + "|");
  }
  EXPECT_EQ(scan_integer("12345678901234567890]"), "12345678901234567890|]");
  // Bytes over 0x7F end the number; what follows is the caller's to check.
  EXPECT_EQ(scan_integer("1234567\xC3\xA9xxxxxxxx"), "1234567|\xC3\xA9xxxxxxxx");
}

TEST(PlainScanner, UnsignedIntegersRefuseWhatSerdeWouldNotReadAsU64) {
  EXPECT_EQ(scan_integer("01]"), "-");
  EXPECT_EQ(scan_integer("1.0]"), "-");
  EXPECT_EQ(scan_integer("1e3]"), "-");
  EXPECT_EQ(scan_integer("1E3]"), "-");
  EXPECT_EQ(scan_integer("-1]"), "-");
  EXPECT_EQ(scan_integer("]"), "-");
  EXPECT_EQ(scan_integer("  42  ]"), "42|]");
}

// With 16 bytes left, up to 15 digits are read from two words without a loop: the same refusals
// there, at each word's edge.
TEST(PlainScanner, UnsignedIntegersRefuseTheSameWithRoomForTwoWords) {
  const std::string room = ",\"data_offsets\":[";
  EXPECT_EQ(scan_integer("0" + room), "0|" + room);
  EXPECT_EQ(scan_integer("01" + room), "-");
  EXPECT_EQ(scan_integer("012345678901" + room), "-");
  EXPECT_EQ(scan_integer("1.0" + room), "-");
  EXPECT_EQ(scan_integer("1e3" + room), "-");
  EXPECT_EQ(scan_integer("12345678.5" + room), "-"); // right after the first word
  EXPECT_EQ(scan_integer("12345678E5" + room), "-");
  EXPECT_EQ(scan_integer("123456789012345.0" + room), "-"); // right after the second
  EXPECT_EQ(scan_integer("123456789012345" + room), "123456789012345|" + room);
  EXPECT_EQ(scan_integer("1234567890123456" + room), "1234567890123456|" + room); // the loop
  EXPECT_EQ(scan_integer("-1" + room), "-");
  EXPECT_EQ(scan_integer(room), "-");
}

// A literal is taken whole or not at all, and never past the end of the text.
TEST(PlainScanner, LiteralsAreTakenWholeOrNotAtAll) {
  PlainScanner in(",\"shape\":[4],\"data_offsets\":[");
  EXPECT_FALSE(in.take_literal(",\"shape\":{"));
  EXPECT_FALSE(in.take_literal(" "));
  EXPECT_TRUE(in.take_literal(",\"shape\":["));
  EXPECT_EQ(in.unsigned_integer(), 4U);
  EXPECT_TRUE(in.take_literal("]"));
  const char* before = in.position();
  EXPECT_FALSE(in.take_literal(",\"data_offsets\":[0")); // one byte longer than what is left
  EXPECT_EQ(in.position(), before);
  EXPECT_FALSE(in.take_literal(",\"data_Offsets\":["));
  EXPECT_TRUE(in.take_literal(",\"data_offsets\":["));
  EXPECT_TRUE(in.at_end());
}

// The string scan tests 16 bytes at a time and then the tail byte by byte: put the closing quote,
// an escape and a control character at every position across those boundaries.
TEST(PlainScanner, StringsEndAtTheQuoteAndRefuseEscapesAndControlsAtAnyPosition) {
  for (size_t length = 0; length < 40; ++length) {
    const std::string name(length, 'n');
    const std::string text = "\"" + name + "\",";
    PlainScanner plain(text); // views its text: keep it alive
    const auto scanned = plain.string();
    ASSERT_TRUE(scanned.has_value()) << length;
    EXPECT_EQ(*scanned, name);
    EXPECT_TRUE(plain.take(','));
    const std::string unterminated = "\"" + name;
    EXPECT_FALSE(PlainScanner(unterminated).string().has_value()) << length;
    for (size_t at = 0; at < length; ++at) {
      for (const char bad : {'\\', '\n', '\x01', '\x1F'}) {
        std::string broken = "\"" + name + "\"";
        broken[1 + at] = bad;
        EXPECT_FALSE(PlainScanner(broken).string().has_value()) << length << " " << at;
      }
      std::string utf8 = "\"" + name + "\"";
      utf8[1 + at] = static_cast<char>(0xC3); // bytes over 0x7F are not control characters
      EXPECT_EQ(PlainScanner(utf8).string()->size(), length);
    }
  }
}

// Blanks are skipped 16 bytes at a time, then byte by byte: runs of every length, of each of
// the four JSON blanks, end at the first other byte, and control bytes that are not blanks (a
// vertical tab, a form feed, NUL) are never skipped.
TEST(PlainScanner, BlanksOfEveryLengthAndOnlyTheFourJsonBlanksAreSkipped) {
  for (size_t length = 0; length < 40; ++length) {
    for (const char blank : {' ', '\n', '\r', '\t'}) {
      for (const char stop : {'"', '\v', '\f', '\0', '\x1F', '!'}) {
        std::string text(length, blank);
        if (length > 2) {
          text[length / 2] = ' '; // mixed blanks
        }
        text += stop;
        text += "    ";
        PlainScanner in(text);
        EXPECT_EQ(in.peek(), stop) << length;
        EXPECT_EQ(in.position(), text.data() + length) << length;
      }
    }
    const std::string only(length, '\n');
    EXPECT_TRUE(PlainScanner(only).at_end()) << length;
  }
}

TEST(PlainScanner, LiteralsCompareWholeWords) {
  EXPECT_TRUE(is_literal("dtype", "dtype"));
  EXPECT_FALSE(is_literal("dtyp", "dtype"));
  EXPECT_FALSE(is_literal("dtypes", "dtype"));
  EXPECT_FALSE(is_literal("Dtype", "dtype"));
  EXPECT_TRUE(is_literal("data_offsets", "data_offsets"));
}

TEST(Dtype, EveryNameParsesToItselfAndNothingNear) {
  using safetensors::Dtype;
  for (int i = 0; i <= static_cast<int>(Dtype::U64); ++i) {
    const auto dtype = static_cast<Dtype>(i);
    const std::string name(safetensors::to_string(dtype));
    ASSERT_EQ(safetensors::parse_dtype(name), dtype) << name;
    EXPECT_EQ(safetensors::parse_dtype(name + " "), std::nullopt) << name;
    EXPECT_EQ(safetensors::parse_dtype(name.substr(0, name.size() - 1)), std::nullopt) << name;
    EXPECT_EQ(safetensors::parse_dtype(std::string(name) + std::string(1, '\0')), std::nullopt);
  }
  EXPECT_EQ(safetensors::parse_dtype("bf16"), std::nullopt);
  EXPECT_EQ(safetensors::parse_dtype(""), std::nullopt);
  EXPECT_EQ(safetensors::parse_dtype("F8_E4M3FNUZ_"), std::nullopt);
  EXPECT_EQ(safetensors::parse_dtype("F8_E4M3FNUZxxxxxxxxxx"), std::nullopt);
}

} // namespace
} // namespace qpatch::json
