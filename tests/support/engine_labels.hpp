// SPDX-License-Identifier: Apache-2.0
// How reports name the engines judged, computed from the engines' histories (versions.hpp) so
// that adding a version to a history edits data, not every expected string in the tests.
#pragma once

#include <qpatch/engine/versions.hpp>

#include <string>

namespace qpatch::test {

// "vLLM (5 versions, main 2026-02-28..2026-08-17), SGLang (3 versions, ...) and transformers":
// the header's engines for a compressed-tensors checkpoint of `architecture`, every engine.
std::string judged_for(const std::string& architecture,
                       const std::string& method = "compressed-tensors");
// The same for one engine: "vLLM (5 versions, main 2026-02-28..2026-08-17)", "SGLang (...)".
std::string judged_for(engine::Engine engine,
                       const std::string& architecture,
                       const std::string& method = "compressed-tensors");

// How explain names the versions traced of one engine ("vLLM main 2026-07-29..017e9f4
// (2026-08-17), 2 versions", or the one version's rules), and of every engine, joined.
std::string traced_as(engine::Engine engine,
                      const std::string& architecture,
                      const std::string& method = "compressed-tensors");
std::string traced_as(const std::string& architecture,
                      const std::string& method = "compressed-tensors");

// The note a report gives when it judges SGLang's Qwen3.5 VLM versions whose names are assumed
// (sglang/naming.cpp qwen35_vlm_row), as the report prints it.
inline constexpr const char* k_sglang_qwen35_assumed_note =
    "  note        SGLang main 2026-02-09..2026-02-16: names assumed (before #18926 no one "
    "commit holds the files read)\n";
// The note of the methods Qwen3-VL's mapper renames (compressed-tensors, ModelOpt, Quark, FP8)
// in the versions it renames them (sglang/naming.cpp qwen3_vl_config_mapper), after the above.
inline constexpr const char* k_sglang_qwen3_vl_mapper_note =
    "  note        SGLang main 2026-02-09..2026-04-27: judged with the CUDA build: from "
    "2026-03-30 (#21234) on gfx95 and from 2026-04-08 (#21692) on NPU too, the Qwen3.5 classes "
    "have no mapper and declare the packed mapping, as #23471 (2026-04-28) made them "
    "everywhere\n";

} // namespace qpatch::test
