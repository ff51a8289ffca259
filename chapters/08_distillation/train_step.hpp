// One step of training: a batch of the teacher file's windows → loss → gradients → clipped
// AdamW update. The loop around it (epochs, evaluation, logging) is the chapter binary's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "adamw.hpp"
#include "distill_loss.hpp"
#include "student.hpp"
#include "teacher_labels.hpp"

namespace infer::train {

class FakeQuant;  // part 3, variants/fake_quant.hpp: quantization-aware training

// B windows of S = labels.window tokens, rows in window order.
struct Batch {
  int B = 0, S = 0, k = 0;
  std::vector<int32_t> tokens;          // [B·S]
  std::vector<int32_t> labels;          // [B·S] the next token; −1 at a window's last position
  std::vector<int32_t> teacher_ids;     // [B·S, k]
  std::vector<float> teacher_logits;    // [B·S, k]
  std::vector<float> teacher_tail;      // [B·S] the tail bucket's logit at the loss's τ, or empty
  SoftTargets soft() const { return {k, teacher_ids, teacher_logits, teacher_tail}; }
};

// The windows numbered `windows` (0 … labels.windows()−1) of the teacher file, with the teacher's
// tail at loss.temperature when the loss has a soft term with a tail bucket (throws
// std::invalid_argument when the file does not keep that temperature).
Batch make_batch(const TeacherLabels& labels, std::span<const int64_t> windows, const LossOptions& loss);

struct StepOptions {
  LossOptions loss;
  LrSchedule schedule;
  double clip_norm = 1.0;
  // Quantization-aware training: the forward and backward see Ŵ, the update goes to W
  // (fake_quant.hpp). nullptr: they see W. Not const: it holds W during the step.
  FakeQuant* fake_quant = nullptr;
};

struct StepResult {
  double loss = 0, grad_norm = 0, lr = 0;
};

// zero_grad, forward, loss, backward, clip, AdamW at the schedule's rate for `step`; with
// options.fake_quant, the forward and backward on Ŵ between quantize_weights and restore_master.
StepResult train_step(Student<float>& student, AdamW& optimizer, const Batch& batch, const StepOptions& options, int step);

}  // namespace infer::train
