// The offline teacher: its k largest next-token logits, the log-sum-exp of all V, and the mass of
// everything else (the "tail") at each temperature the runs will use, at every position of the
// training text, computed once and kept in a checksummed binary file, so the teacher runs once
// however many students train on its labels. exp(z_i − lse) gives the exact teacher probability
// of a kept token; the tail is one more bucket, so the label at T is k + 1 probabilities that sum
// to 1 instead of k renormalised ones (distill_loss.hpp: SoftTarget).
//
// Why the tail is stored per temperature: its mass at T, Σ_{v ∉ top k} exp(z_v / T) / Σ_v exp(z_v / T),
// needs every one of the V logits; the flatter T makes the label, the more of it lies outside the
// top k, and a file without it tells the student that all of that mass is on nobody.
//
// The file that keeps them (its layout, the checks its loader makes): files/teacher_file.cpp, part 4.
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

// The most temperatures one file keeps a tail for (the loader refuses a header with more).
inline constexpr uint32_t kMaxTemperatures = 16;

struct TeacherLabels {
  int k = 0;
  int vocab_size = 0;
  int window = 0;                   // tokens per window; every window starts from an empty cache
  std::vector<float> temperatures;  // [n_t] the T at which the tail is kept (set before append)
  std::vector<int32_t> tokens;      // [n] the text
  std::vector<float> lse;           // [n] log Σ_v exp(z_v) of the prediction after tokens[i]
  std::vector<float> tail_lse;      // [n, n_t] log Σ_{v ∉ top k} exp(z_v / T): the tail bucket's
                                    //   logit at T (−∞ when k = V: no tail)
  std::vector<int32_t> ids;         // [n, k] the k most likely next tokens, most likely first
  std::vector<float> logits;        // [n, k] their logits z

  int64_t size() const { return std::ssize(tokens); }
  int64_t windows() const { return window > 0 ? size() / window : 0; }
  double kept_mass(int64_t position) const;  // Σ_kept exp(z − lse), at T = 1
  // The column of tail_lse that holds temperature T, or −1 when the file does not keep it.
  int temperature_index(double T) const;
  // The tail's share of the teacher's probability at temperature column t: 1 − the kept mass at T.
  double tail_mass(int64_t position, int t) const;

  // Appends one position: the token, the top k and log-sum-exp of its logits[vocab_size], and the
  // tail's log-sum-exp at each of `temperatures`.
  void append(int32_t token, const float* row_logits);

  // The checksummed file (part 4: files/teacher_file.cpp).
  void save(const std::string& path) const;              // throws TeacherFileError
  static TeacherLabels load(const std::string& path);    // throws TeacherFileError
};

// 64-bit FNV-1a, the file's checksum (files/teacher_file.cpp).
uint64_t fnv1a64(std::span<const uint8_t> bytes);

// Runs the teacher over the whole windows of `tokens` (a shorter remainder is dropped) and keeps
// the top k at each position, with the tail at each of `temperatures` (positive, distinct). Shows a
// progress bar when progress_label is not empty.
TeacherLabels teacher_pass(Llama& teacher, std::span<const int32_t> tokens, int window, int k,
                           std::span<const double> temperatures, const std::string& progress_label = "");

}  // namespace infer::train
