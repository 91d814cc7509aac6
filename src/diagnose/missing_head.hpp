// SPDX-License-Identifier: Apache-2.0
// A draft head config.json declares and no file stores (issue 23 item 4): exporters drop it
// (ModelOpt #2427 keeps 0 of 15 MTP tensors; Step-3.7 NVFP4 lost layers 45-47), and each engine
// then does its own thing with the draft it builds anyway.
#pragma once

#include <qpatch/checkpoint/module.hpp>
#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/engine/engines.hpp>

#include <string>

namespace qpatch::diagnose {

// Add a missing_draft_head finding when some layer `head` declares has no module on disk. The
// engines judged that build MTP drafts (vLLM, SGLang; transformers loads no draft) are named with
// their consequence, which depends on the draft class and on whether `quantized`.
void missing_head_finding(const checkpoint::MtpHead& head,
                          const checkpoint::ModuleList& modules,
                          const std::string& architecture,
                          bool quantized,
                          engine::EngineSet engines,
                          Diagnosis& diagnosis);

} // namespace qpatch::diagnose
