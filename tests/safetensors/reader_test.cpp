// SPDX-License-Identifier: Apache-2.0
// One test per validation rule of the header reader (safetensors.md §3, §4, §7), each asserting
// the error code and the full rendered message, plus the surprising inputs the reference accepts.
#include "support/builder.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/safetensors/reader.hpp>
#include <qpatch/util/hash_sort.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <optional>

namespace qpatch::safetensors {
namespace {

using test::shard_bytes;
using test::u64_le;

Result<Header> parse(const std::string& bytes, const ReaderOptions& options = {}) {
  HeaderParser parser;
  return parser.parse(bytes, "m.safetensors", options);
}

// Assert that `bytes` is rejected with `code` and exactly `message` (the whole rendered line).
void expect_error(const std::string& bytes,
                  ErrorCode code,
                  const std::string& message,
                  const ReaderOptions& options = {}) {
  const auto result = parse(bytes, options);
  ASSERT_FALSE(result.ok()) << "accepted: " << bytes.substr(8);
  EXPECT_EQ(to_string(result.error().code), to_string(code));
  EXPECT_EQ(result.error().to_string(), message);
}

std::string at(size_t header_size, uint64_t data_offset) {
  return std::to_string(8 + header_size + data_offset);
}

const std::string k_two_f32 = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";

TEST(Reader, AcceptsAValidHeaderInJsonOrder) {
  const auto header = parse(shard_bytes(k_two_f32, 16));
  ASSERT_TRUE(header.ok()) << header.error().to_string();
  ASSERT_EQ(header->tensors.size(), 2U);
  EXPECT_EQ(header->tensors[0].name, "a");
  EXPECT_EQ(header->tensors[1].name, "b");
  EXPECT_EQ(header->tensors[1].begin, 8U);
  EXPECT_EQ(header->tensors[1].end, 16U);
  EXPECT_EQ(header->header_size, k_two_f32.size());
  EXPECT_EQ(header->data_start(), 8 + k_two_f32.size());
}

TEST(Reader, Rule1FileShorterThanEightBytesIsHeaderTooSmall) {
  expect_error("\x01\x02\x03\x04\x05",
               ErrorCode::header_too_small,
               "m.safetensors: byte 0: file is 5 bytes, too short for the 8-byte header length "
               "(HeaderTooSmall)");
}

TEST(Reader, Rule2LengthOverTheCapIsHeaderTooLarge) {
  expect_error(u64_le(100'000'001) + "{}",
               ErrorCode::header_too_large,
               "m.safetensors: byte 0: header length 100000001 is over the 100000000-byte limit "
               "(HeaderTooLarge)");
}

TEST(Reader, Rule2ExactlyTheCapPassesAndFailsOnLength) {
  expect_error(u64_le(100'000'000) + "{}",
               ErrorCode::invalid_header_length,
               "m.safetensors: byte 0: header length 100000000 needs 100000008 bytes, but the "
               "file has 10 (InvalidHeaderLength)");
}

TEST(Reader, Rule2GitLfsPointerIsNamed) {
  expect_error("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n",
               ErrorCode::header_too_large,
               "m.safetensors: byte 0: this is a Git LFS pointer file, not tensor data: fetch "
               "the real file with `git lfs pull` (HeaderTooLarge)");
}

TEST(Reader, Rule2ZipArchiveIsNamed) {
  expect_error(std::string("PK\x03\x04", 4) + std::string(60, 'x'),
               ErrorCode::header_too_large,
               "m.safetensors: byte 0: this is a zip archive (a PyTorch checkpoint renamed?), "
               "not a safetensors file (HeaderTooLarge)");
}

TEST(Reader, Rule3LengthPastTheEndIsInvalidHeaderLength) {
  expect_error(u64_le(64) + "{}",
               ErrorCode::invalid_header_length,
               "m.safetensors: byte 0: header length 64 needs 72 bytes, but the file has 10 "
               "(InvalidHeaderLength)");
}

TEST(Reader, Rule3EightPlusLengthOverflowIsInvalidHeaderLength) {
  ReaderOptions options;
  options.max_header_size = UINT64_MAX;
  expect_error(u64_le(UINT64_MAX) + "{}",
               ErrorCode::invalid_header_length,
               "m.safetensors: byte 0: header length 18446744073709551615 needs 7 bytes, but "
               "the file has 10 (InvalidHeaderLength)",
               options);
}

TEST(Reader, Rule4InvalidUtf8IsInvalidHeaderAtTheBadByte) {
  const std::string header = "{\"a\xff\":{}}";
  expect_error(shard_bytes(header, 0),
               ErrorCode::invalid_header,
               "m.safetensors: byte 11: header is not valid UTF-8 (InvalidHeader)");
}

TEST(Reader, Rule5ByteOrderMarkIsRejected) {
  expect_error(shard_bytes("\xEF\xBB\xBF{}", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte 8: header starts with a UTF-8 byte-order mark "
               "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5NulPaddingIsRejected) {
  expect_error(shard_bytes(std::string("{}\0\0", 4), 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte 10: NUL byte in the header (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5SyntaxErrorNamesTheByte) {
  expect_error(shard_bytes("{\"a\":1,}", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte 15: syntax error while parsing object key - unexpected '}'; "
               "expected string literal (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5EmptyHeaderIsRejected) {
  expect_error(shard_bytes("", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte 8: syntax error while parsing value - unexpected end of "
               "input; expected '[', '{', or a literal (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5RootMustBeAnObject) {
  expect_error(shard_bytes("  []", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte 10: header is an array, expected a JSON object "
               "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5NestingDeeperThan127IsRejected) {
  const std::string deep = std::string(127, '[') + std::string(127, ']');
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":)" + deep + "}}";
  expect_error(shard_bytes(header, 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte " + std::to_string(8 + 56 + 125) +
                   ": JSON nested deeper than 127 levels (InvalidHeaderDeserialization)");
  const std::string fits = R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":)" +
                           std::string(125, '[') + std::string(125, ']') + "}}";
  EXPECT_TRUE(parse(shard_bytes(fits, 0)).ok());
}

TEST(Reader, Rule5UnknownDtypeIsRejected) {
  expect_error(shard_bytes(R"({"w":{"dtype":"F8_E4M3FN","shape":[1],"data_offsets":[0,1]}})", 1),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': unknown dtype \"F8_E4M3FN\" "
               "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5LowercaseDtypeIsRejected) {
  expect_error(shard_bytes(R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': unknown dtype \"f32\" (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5FloatInShapeIsRejected) {
  expect_error(shard_bytes(R"({"w":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})", 2),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': shape[0] is a floating-point number, expected an "
               "unsigned integer (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5ExponentInOffsetsIsRejected) {
  expect_error(shard_bytes(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4e0]}})", 4),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': data_offsets[1] is a floating-point number, expected "
               "an unsigned integer (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5NegativeIntegerIsRejected) {
  expect_error(shard_bytes(R"({"w":{"dtype":"U8","shape":[-2],"data_offsets":[0,2]}})", 2),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': shape[0] is -2, expected an unsigned integer "
               "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5NegativeZeroIsRejected) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[-0,4]}})";
  expect_error(shard_bytes(header, 4),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte " + std::to_string(8 + header.find("-0")) +
                   ": tensor 'w': data_offsets holds -0, expected an unsigned integer "
                   "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5NegativeZeroInAnUnknownFieldIsAccepted) {
  EXPECT_TRUE(
      parse(shard_bytes(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":-0}})", 4))
          .ok());
}

TEST(Reader, Rule5IntegerAboveU64IsRejected) {
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}})";
  expect_error(shard_bytes(header, 1),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: byte " + std::to_string(8 + header.find("1844")) +
                   ": integer 18446744073709551616 does not fit in 64 bits "
                   "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5DataOffsetsNeedsTwoElements) {
  expect_error(shard_bytes(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,2,4]}})", 4),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': data_offsets has 3 elements, expected 2 "
               "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5MissingFieldIsRejected) {
  expect_error(shard_bytes(R"({"w":{"dtype":"U8","data_offsets":[0,4]}})", 4),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': missing field \"shape\" "
               "(InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5EntryMustBeAnObject) {
  expect_error(shard_bytes(R"({"w":"BF16"})", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor 'w': entry is a string, expected an object with dtype, "
               "shape and data_offsets (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5MetadataValuesMustBeStrings) {
  expect_error(shard_bytes(R"({"__metadata__":{"format":1}})", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor '__metadata__': value of \"format\" is a number, expected "
               "a string (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5MetadataMustBeAnObject) {
  expect_error(shard_bytes(R"({"__metadata__":["pt"]})", 0),
               ErrorCode::invalid_header_deserialization,
               "m.safetensors: tensor '__metadata__': __metadata__ is an array, expected an "
               "object of strings (InvalidHeaderDeserialization)");
}

TEST(Reader, Rule5DuplicateTensorNameIsAnErrorEvenWhenIdentical) {
  const std::string entry = R"({"dtype":"U8","shape":[4],"data_offsets":[0,4]})";
  expect_error(shard_bytes("{\"w\":" + entry + ",\"w\":" + entry + "}", 4),
               ErrorCode::duplicate_key,
               "m.safetensors: tensor 'w': tensor name appears twice in the header");
}

TEST(Reader, Rule5DuplicateAfterUnescapingIsAnError) {
  const std::string entry = R"({"dtype":"U8","shape":[0],"data_offsets":[0,0]})";
  expect_error(shard_bytes("{\"a\":" + entry + ",\"\\u0061\":" + entry + "}", 0),
               ErrorCode::duplicate_key,
               "m.safetensors: tensor 'a': tensor name appears twice in the header");
}

TEST(Reader, Rule5DuplicateFieldInAnEntryIsAnError) {
  expect_error(
      shard_bytes(R"({"w":{"dtype":"U8","dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4),
      ErrorCode::duplicate_key,
      "m.safetensors: tensor 'w': field \"dtype\" appears twice in the entry");
}

TEST(Reader, Rule5DuplicateMetadataKeyIsAnError) {
  expect_error(shard_bytes(R"({"__metadata__":{"format":"pt","format":"pt"}})", 0),
               ErrorCode::duplicate_key,
               "m.safetensors: tensor '__metadata__': key \"format\" appears twice");
}

TEST(Reader, Rule5DuplicateMetadataMemberIsAnError) {
  expect_error(shard_bytes(R"({"__metadata__":{},"__metadata__":{}})", 0),
               ErrorCode::duplicate_key,
               "m.safetensors: tensor '__metadata__': __metadata__ appears twice in the header");
}

TEST(Reader, Rule5DuplicateKeyInsideAnUnknownFieldIsAnError) {
  expect_error(
      shard_bytes(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":{"k":1,"k":2}}})", 4),
      ErrorCode::duplicate_key,
      "m.safetensors: tensor 'w': key \"k\" appears twice in field \"x\"");
}

TEST(Reader, Rule6GapIsInvalidOffsetOnTheNextTensor) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})";
  expect_error(shard_bytes(header, 20),
               ErrorCode::invalid_offset,
               "m.safetensors: byte " + at(header.size(), 12) +
                   ": tensor 'b': data_offsets [12, 20] start at 12, expected 8: a gap after the "
                   "previous tensor (InvalidOffset)");
}

TEST(Reader, Rule6OverlapIsInvalidOffset) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_error(shard_bytes(header, 12),
               ErrorCode::invalid_offset,
               "m.safetensors: byte " + at(header.size(), 4) +
                   ": tensor 'b': data_offsets [4, 12] start at 4, expected 8: it overlaps the "
                   "previous tensor (InvalidOffset)");
}

TEST(Reader, Rule6EndBeforeBeginIsInvalidOffset) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("c":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})";
  expect_error(shard_bytes(header, 4),
               ErrorCode::invalid_offset,
               "m.safetensors: byte " + at(header.size(), 4) +
                   ": tensor 'c': data_offsets [4, 2] end before they begin (InvalidOffset)");
}

TEST(Reader, Rule7ShapeProductOverflowIsValidationOverflow) {
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[2,18446744073709551614],"data_offsets":[0,4]}})";
  expect_error(shard_bytes(header, 4),
               ErrorCode::validation_overflow,
               "m.safetensors: byte " + at(header.size(), 0) +
                   ": tensor 'w': shape [2, 18446744073709551614] of U8 overflows 64 bits "
                   "(ValidationOverflow)");
}

TEST(Reader, Rule7BitCountOverflowIsValidationOverflow) {
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]}})";
  expect_error(shard_bytes(header, 4),
               ErrorCode::validation_overflow,
               "m.safetensors: byte " + at(header.size(), 0) +
                   ": tensor 'w': shape [4611686018427387904] of F32 overflows 64 bits "
                   "(ValidationOverflow)");
}

TEST(Reader, Rule7OddF4IsMisalignedSlice) {
  const std::string header = R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})";
  expect_error(shard_bytes(header, 2),
               ErrorCode::misaligned_slice,
               "m.safetensors: byte " + at(header.size(), 0) +
                   ": tensor 'w': shape [3] of F4 is 12 bits, not a whole number of bytes "
                   "(MisalignedSlice)");
}

TEST(Reader, Rule8WrongByteCountIsTensorInvalidInfo) {
  const std::string header =
      R"({"mtp.fc.weight":{"dtype":"BF16","shape":[5120,10240],"data_offsets":[0,4096]}})";
  expect_error(shard_bytes(header, 4096),
               ErrorCode::tensor_invalid_info,
               "m.safetensors: byte " + at(header.size(), 0) +
                   ": tensor 'mtp.fc.weight': data_offsets cover 4096 bytes, but shape [5120, "
                   "10240] of BF16 needs 104857600 (TensorInvalidInfo)");
}

TEST(Reader, Rule8ZeroInShapeWithBytesIsTensorInvalidInfo) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[2,0],"data_offsets":[0,4]}})";
  expect_error(shard_bytes(header, 4),
               ErrorCode::tensor_invalid_info,
               "m.safetensors: byte " + at(header.size(), 0) +
                   ": tensor 'w': data_offsets cover 4 bytes, but shape [2, 0] of U8 needs 0 "
                   "(TensorInvalidInfo)");
}

TEST(Reader, Rule8PerTensorErrorsComeBeforeTheBufferCheck) {
  const std::string header = R"({"w":{"dtype":"I32","shape":[2,2],"data_offsets":[0,4]}})";
  expect_error(shard_bytes(header, 0),
               ErrorCode::tensor_invalid_info,
               "m.safetensors: byte " + at(header.size(), 0) +
                   ": tensor 'w': data_offsets cover 4 bytes, but shape [2, 2] of I32 needs 16 "
                   "(TensorInvalidInfo)");
}

TEST(Reader, Rule9TrailingBytesAreMetadataIncompleteBuffer) {
  expect_error(shard_bytes(k_two_f32, 17),
               ErrorCode::metadata_incomplete_buffer,
               "m.safetensors: byte " + at(k_two_f32.size(), 16) + ": tensor data ends at byte " +
                   at(k_two_f32.size(), 16) + ", but the file has " + at(k_two_f32.size(), 17) +
                   " bytes (MetadataIncompleteBuffer)");
}

TEST(Reader, Rule9TruncatedDataIsMetadataIncompleteBuffer) {
  expect_error(shard_bytes(k_two_f32, 10),
               ErrorCode::metadata_incomplete_buffer,
               "m.safetensors: byte " + at(k_two_f32.size(), 16) + ": tensor data ends at byte " +
                   at(k_two_f32.size(), 16) + ", but the file has " + at(k_two_f32.size(), 10) +
                   " bytes (MetadataIncompleteBuffer)");
}

// What the reference accepts, surprising or not (safetensors.md §4).
struct Accepted {
  std::string name;
  std::string header;
  uint64_t data_size;
};

class ReaderAccepts : public ::testing::TestWithParam<Accepted> {};

TEST_P(ReaderAccepts, Header) {
  const auto result = parse(shard_bytes(GetParam().header, GetParam().data_size));
  EXPECT_TRUE(result.ok()) << result.error().to_string();
}

INSTANTIATE_TEST_SUITE_P(
    Reference,
    ReaderAccepts,
    ::testing::Values(
        Accepted{"LeadingWhitespace", " \t\r\n{}", 0},
        Accepted{"TrailingPadding", "{}    \n", 0},
        Accepted{"NullMetadata", R"({"__metadata__":null})", 0},
        Accepted{"EmptyTensorsSharingAnOffset",
                 R"({"a":{"dtype":"U8","shape":[2,0],"data_offsets":[0,0]},)"
                 R"("b":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                 R"("c":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                 2},
        Accepted{"Scalar", R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})", 8},
        Accepted{"SubByteAndNewDtypes",
                 R"({"f":{"dtype":"F4","shape":[2],"data_offsets":[0,1]},)"
                 R"("g":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[1,4]},)"
                 R"("h":{"dtype":"F8_E8M0","shape":[1],"data_offsets":[4,5]},)"
                 R"("i":{"dtype":"C64","shape":[1],"data_offsets":[5,13]}})",
                 13},
        Accepted{"MemberOrderUnlikeOffsetOrder",
                 R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                 R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                 R"("__metadata__":{"format":"pt"}})",
                 2},
        Accepted{"EmptyNameAndUnknownFields",
                 R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":{"n":[1,2]}}})",
                 1},
        Accepted{"EmptyHeader", "{}", 0}),
    [](const auto& case_info) { return case_info.param.name; });

TEST(Reader, KeepsMetadataAndTensorOrder) {
  const auto header = parse(shard_bytes(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
      R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
      2));
  ASSERT_TRUE(header.ok()) << header.error().to_string();
  ASSERT_EQ(header->metadata.size(), 1U);
  EXPECT_EQ(header->metadata[0].first, "format");
  EXPECT_EQ(header->metadata[0].second, "pt");
  EXPECT_EQ(header->tensors[0].name, "b");
}

// A handed-back entry list is refilled from scratch: nothing of the previous header leaks into the
// next one (names, shapes, count), and names from both stay valid, each in its own storage.
TEST(Reader, AReusedEntryListHoldsOnlyTheNextHeader) {
  HeaderParser parser;
  auto first = parser.parse(
      shard_bytes(R"({"a.weight":{"dtype":"BF16","shape":[2,3,4],"data_offsets":[0,48]},)"
                  R"("b.weight":{"dtype":"U8","shape":[1],"data_offsets":[48,49]}})",
                  49),
      "first.safetensors");
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  const std::string_view first_name = first->tensors[0].name;
  const auto first_storage = first->name_storage;
  parser.reuse(std::move(first->tensors));
  const auto second = parser.parse(
      shard_bytes(R"({"c.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8),
      "second.safetensors");
  ASSERT_TRUE(second.ok()) << second.error().to_string();
  ASSERT_EQ(second->tensors.size(), 1U);
  EXPECT_EQ(second->tensors[0].name, "c.weight");
  EXPECT_EQ(second->tensors[0].dtype, Dtype::F32);
  EXPECT_EQ(second->tensors[0].shape, (std::vector<uint64_t>{2}));
  EXPECT_EQ(second->tensors[0].end, 8U);
  EXPECT_EQ(first_name, "a.weight");
}

// The name sum the inventory compares with the index is exactly the sum of the names'
// fingerprints, whichever path read the header (the second layout is not plain: escapes).
TEST(Reader, SumsTheFingerprintsOfItsNamesOnBothPaths) {
  util::NameSum expected;
  for (const std::string_view name : {"mtp.fc.weight", "a.b", "lm_head.weight"}) {
    expected.add(util::fingerprint_name(name));
  }
  for (
      const std::string header :
      {R"({"mtp.fc.weight":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
       R"("__metadata__":{"format":"pt"},"a.b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
       R"("lm_head.weight":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
       R"({"mtp.fc.weight":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
       R"("__metadata__":{"format":"pt"},"a\u002eb":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
       R"("lm_head.weight":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})"}) {
    for (const bool fast : {true, false}) {
      ReaderOptions options;
      options.plain_fast_path = fast;
      const auto parsed = parse(shard_bytes(header, 3), options);
      ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
      EXPECT_EQ(parsed->names, expected) << header << " fast=" << fast;
    }
  }
  EXPECT_NE(util::fingerprint_name("a.b").hash, util::fingerprint_name("a.c").hash);
  EXPECT_NE(util::fingerprint_name("a.b").check, util::fingerprint_name("a.c").check);
}

class ReaderFileTest : public test::TempDirTest {};

TEST_F(ReaderFileTest, ReadsOnlyTheHeaderOfATensOfGigabytesSparseFile) {
  const std::string header =
      R"({"w":{"dtype":"BF16","shape":[200000,100000],"data_offsets":[0,40000000000]}})";
  const auto file = dir() / "big.safetensors";
  write("big.safetensors", u64_le(header.size()) + header);
  std::filesystem::resize_file(file, 8 + header.size() + 40'000'000'000ULL);
  HeaderParser parser;
  const auto result = parser.read(file, "big.safetensors");
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(result->file_size, 8 + header.size() + 40'000'000'000ULL);
  EXPECT_EQ(result->tensors.at(0).shape, (std::vector<uint64_t>{200000, 100000}));
}

// The parser reuses its buffer from file to file: the names of a header read by either path
// outlive the parser and the headers it reads next, and errors name the file and the byte.
TEST_F(ReaderFileTest, NamesOutliveTheParserOnBothPaths) {
  const std::string plain = R"({"mtp.fc.weight":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  const std::string general =
      R"({ "mtp.fc\u002eweight_scale" : {"shape":[1],"dtype":"U8","data_offsets":[0,1]}})";
  const std::string broken = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},})";
  write("plain.safetensors", shard_bytes(plain, 2));
  write("general.safetensors", shard_bytes(general, 1));
  write("broken.safetensors", shard_bytes(broken, 2));
  std::optional<Result<Header>> first;
  std::optional<Result<Header>> second;
  {
    HeaderParser parser;
    first.emplace(parser.read(dir() / "plain.safetensors", "plain.safetensors"));
    second.emplace(parser.read(dir() / "general.safetensors", "general.safetensors"));
    const auto error = parser.read(dir() / "broken.safetensors", "broken.safetensors");
    ASSERT_FALSE(error.ok());
    EXPECT_EQ(error.error().to_string(),
              "broken.safetensors: byte 61: syntax error while parsing object key - unexpected "
              "'}'; expected string literal (InvalidHeaderDeserialization)");
  }
  ASSERT_TRUE(first->ok()) << first->error().to_string();
  ASSERT_TRUE(second->ok()) << second->error().to_string();
  EXPECT_EQ((*first)->tensors.at(0).name, "mtp.fc.weight");
  EXPECT_EQ((*first)->tensors.at(0).end, 2U);
  EXPECT_EQ((*second)->tensors.at(0).name, "mtp.fc.weight_scale");
  EXPECT_EQ((*second)->tensors.at(0).dtype, Dtype::U8);
}

TEST_F(ReaderFileTest, MissingFileIsAnIoError) {
  HeaderParser parser;
  const auto result = parser.read(dir() / "none.safetensors", "none.safetensors");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "none.safetensors: byte 0: cannot open: No such file or directory");
}

// Every failed call's message ends with its errno text, and the errors root also gets are used
// (CI runs as root, so no chmod 000).

TEST_F(ReaderFileTest, IoErrorsEndWithTheirErrnoText) {
  std::filesystem::create_directory(dir() / "shard.safetensors");
  std::filesystem::create_symlink("loop.safetensors", dir() / "loop.safetensors");
  std::ofstream(dir() / "config.json") << "{}";
  HeaderParser parser;
  const auto message = [&](const std::filesystem::path& file) {
    const auto header = parser.read(file, "x.safetensors");
    EXPECT_FALSE(header.ok());
    EXPECT_EQ(header.ok() ? ErrorCode::internal : header.error().code, ErrorCode::io_error);
    return header.ok() ? std::string() : header.error().to_string();
  };
  EXPECT_EQ(message(dir() / "shard.safetensors"),
            "x.safetensors: byte 0: cannot read: Is a directory");
  EXPECT_EQ(message(dir() / "loop.safetensors"),
            "x.safetensors: byte 0: cannot open: Too many levels of symbolic links");
  EXPECT_EQ(message(dir() / "config.json" / "a.safetensors"),
            "x.safetensors: byte 0: cannot open: Not a directory");
}

// A file that ends before the size fstat gave (it shrank while read; sysfs files all claim 4096
// bytes) used to print a stale errno ("cannot read: Success").
TEST(Reader, AFileShorterThanItsSizeSaysItEndedEarly) {
  const std::filesystem::path file = "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag";
  std::error_code ec;
  if (std::filesystem::file_size(file, ec) != 4096 || test::read_bytes(file).size() >= 8) {
    GTEST_SKIP() << file << " is not a short sysfs file here";
  }
  HeaderParser parser;
  const auto header = parser.read(file, "x.safetensors");
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.error().to_string(), "x.safetensors: byte 0: cannot read: the file ended early");
}

} // namespace
} // namespace qpatch::safetensors
