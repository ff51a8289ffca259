// Chapter 07's layer, part 5: a draft from its name on the command line (--draft, --drafts):
//   int8, int4-g128, nf4, q8_0, q4_1   the target packed in that format (chapter 06's kernels)
//   layers-K                           the target's first K layers, then its norm and head
//   lookup                             prompt lookup (no model)
//   target                             the target itself (α = 1: the check that nothing is lost)
//   file                               the GGUF given with --draft-model (named by its file name)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "drafter.hpp"

namespace infer::spec {

// Throws UsageError naming the valid choices for an unknown name.
void check_draft_name(const std::string& name, const std::string& draft_model_path);

// How tables and records name a draft given on the command line: its name, except a --draft-model
// file, which is named by its file name ("student.gguf"), not by the word "file".
std::string draft_label(const std::string& name, const std::string& draft_model_path);

// A drafter for `name`, drawing with the target's sampling settings, with room for `capacity`
// positions. A quantized draft is packed from the target's weights on the CPU and loaded again
// from the file and packed on the device otherwise; `file` loads draft_model_path and checks
// that its vocabulary is the target's.
std::unique_ptr<Drafter> make_drafter(const std::string& name, LoadedModel& target, const CommonOptions& options,
                                      const std::string& draft_model_path, int64_t capacity);

}  // namespace infer::spec
