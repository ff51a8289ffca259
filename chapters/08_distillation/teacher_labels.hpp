// The offline teacher: its k largest next-token logits and the log-sum-exp of all V at every
// position of the training text, computed once and kept in a checksummed binary file, so the
// teacher runs once however many students train on its labels. k = 64 of V = 49152 holds
// nearly all of the probability mass; exp(z_i − lse) gives the exact teacher probability of a
// kept token, and 1 − Σ_kept of them is the mass the file leaves out (kept_mass).
//
// File layout, little-endian:
//   magic "CH08TOPK" | version u32 = 1 | k u32 | vocab u32 | window u32 | n u64     (32 bytes)
//   tokens i32[n] | lse f32[n] | ids i32[n·k] | logits f32[n·k]       (ids by falling logit)
//   checksum u64: 64-bit FNV-1a of every byte before it
// load() refuses, with one line naming the file and the fault, a file that is shorter or longer
// than its header says (truncated) or whose checksum differs (altered or damaged).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/llama.hpp"

namespace infer::train {

struct TeacherFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TeacherLabels {
  int k = 0;
  int vocab_size = 0;
  int window = 0;                // tokens per window; every window starts from an empty cache
  std::vector<int32_t> tokens;   // [n] the text
  std::vector<float> lse;        // [n] log Σ_v exp(z_v) of the prediction after tokens[i]
  std::vector<int32_t> ids;      // [n, k] the k most likely next tokens, most likely first
  std::vector<float> logits;     // [n, k] their logits z

  int64_t size() const { return std::ssize(tokens); }
  int64_t windows() const { return window > 0 ? size() / window : 0; }
  double kept_mass(int64_t position) const;  // Σ_kept exp(z − lse)

  // Appends one position: the token and the top k and log-sum-exp of its logits[vocab_size].
  void append(int32_t token, const float* row_logits);

  void save(const std::string& path) const;              // throws TeacherFileError
  static TeacherLabels load(const std::string& path);    // throws TeacherFileError
};

// 64-bit FNV-1a, the file's checksum.
uint64_t fnv1a64(std::span<const uint8_t> bytes);

// Runs the teacher over the whole windows of `tokens` (a shorter tail is dropped) and keeps the
// top k at each position. Shows a progress bar when progress_label is not empty.
TeacherLabels teacher_pass(Llama& teacher, std::span<const int32_t> tokens, int window, int k,
                           const std::string& progress_label = "");

}  // namespace infer::train
