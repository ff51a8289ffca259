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
// Both terms are over the same rows: the scored ones (label ≥ 0). The loss is their mean; every
// other row (a window's last position, whose next token lies outside the window) gets zero loss and
// zero gradient from both terms, even though the teacher's label for it exists — so that `mix`
// weighs the two terms over the same positions and a soft run trains on exactly the positions
// a hard run does (the equal budget of the training table).
//
// The teacher is given sparsely: per position the ids of its k largest logits and those logits
// (the offline teacher file keeps k = 64 of 49152), and the tail — everything else — as one more
// bucket (SoftTarget::with_tail):
//   p_τ = softmax over k + 1 buckets of (z_1/τ, …, z_k/τ, t_τ),  t_τ = log Σ_{v ∉ top k} exp(z_v/τ)
//   q_τ over the same buckets: q_τ[i] for the k ids, and q_tail = Σ_{v ∉ ids} q_τ[v]
//   L = τ² [ Σ_i p_i (log p_i − log q_i) + p_tail (log p_tail − log q_tail) ]
//   ∂L/∂s_v = τ (q_v − p_v)                                  v one of the k ids
//   ∂L/∂s_v = τ (q_v − p_tail · q_v / q_tail)                 v in the tail
// Inside the tail the student keeps the shape of its own distribution; only the tail's total is
// pulled to the teacher's. SoftTarget::top_k_renormalised drops the tail instead (p_τ = softmax of
// the k logits alone, the label of version 1 of the teacher file): it tells the student that the
// tail holds nothing, which at high τ is most of the teacher's mass. Both are exact when k = V.
// With k = 1, τ = 1 and an empty tail the soft loss is the hard loss on the teacher's top token.
#pragma once

#include <cstdint>
#include <span>

namespace infer::train {

enum class LabelKind { hard, soft, mix };
enum class SoftTarget { with_tail, top_k_renormalised };

struct LossOptions {
  LabelKind labels = LabelKind::soft;
  double temperature = 1.0;  // τ of the soft term
  double hard_weight = 0.5;  // w of mix
  SoftTarget target = SoftTarget::with_tail;
};

// The teacher's top-k per position: ids[N, k] (distinct within a row) and logits[N, k] (any order),
// and for SoftTarget::with_tail the tail bucket's logit tail[N] = log Σ_{v ∉ ids} exp(z_v / τ) at
// the loss's τ (−∞ for an empty tail; the teacher file's tail_lse at that τ).
struct SoftTargets {
  int k = 0;
  std::span<const int32_t> ids;
  std::span<const float> logits;
  std::span<const float> tail;
};

// logits[N, V] → the mean loss; writes d_logits[N, V] = ∂loss/∂logits. labels[N] holds the true
// next token of each row or −1 (not scored by either term). `soft` is needed unless options.labels
// is hard.
template <class T>
double distillation_loss(const T* logits, int64_t N, int V, std::span<const int32_t> labels,
                         const SoftTargets* soft, const LossOptions& options, T* d_logits);

}  // namespace infer::train
