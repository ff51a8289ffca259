// The losses of distillation, with their gradients with respect to the student's logits.
//
// For one position with student logits s[V], temperature τ, q_τ = softmax(s / τ):
//   hard   cross-entropy on the true next token y:         L = −log q_1[y]
//          ∂L/∂s = q_1 − onehot(y)
//   soft   KL(p_τ ‖ q_τ) on the teacher's distribution p_τ = softmax(z / τ), scaled by τ²:
//          L = τ² Σ_i p_τ[i] (log p_τ[i] − log q_τ[i])
//          ∂L/∂s = τ² · (1/τ) · (q_τ − p_τ) = τ (q_τ − p_τ)
//          Without the τ² the gradients would shrink like 1/τ² as τ grows (Hinton et al. 2015);
//          with it, runs at different temperatures can share one learning rate.
//   mix    w · hard + (1 − w) · soft
// The loss is the mean over the scored positions (label ≥ 0); other rows get zero gradient.
//
// The teacher is given sparsely: per position the ids of its k largest logits and those logits
// (the offline teacher file keeps k ≈ 64 of 49152). p_τ is the softmax over these k only — the
// tail's mass is dropped and the kept mass renormalised, which is exact when k = V. With k = 1
// and τ = 1 the soft loss is the hard loss on the teacher's top token.
#pragma once

#include <cstdint>
#include <span>

namespace infer::train {

enum class LabelKind { hard, soft, mix };

struct LossOptions {
  LabelKind labels = LabelKind::soft;
  double temperature = 1.0;  // τ of the soft term
  double hard_weight = 0.5;  // w of mix
};

// The teacher's top-k per position: ids[N, k] and logits[N, k] (any order).
struct SoftTargets {
  int k = 0;
  std::span<const int32_t> ids;
  std::span<const float> logits;
};

// logits[N, V] → the mean loss; writes d_logits[N, V] = ∂loss/∂logits. labels[N] holds the true
// next token of each row or −1 (not scored). `soft` is needed unless options.labels is hard.
template <class T>
double distillation_loss(const T* logits, int64_t N, int V, std::span<const int32_t> labels,
                         const SoftTargets* soft, const LossOptions& options, T* d_logits);

}  // namespace infer::train
