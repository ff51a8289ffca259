#include "fake_quant.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <utility>

namespace infer::train {

template <class E>
std::vector<ProjectionMatrix<E>> projection_matrices(const Student<float>& s, E* params) {
  const LlamaConfig& c = s.config();
  const int64_t d = c.d_model, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  std::vector<ProjectionMatrix<E>> m;
  for (int l = 0; l < c.n_layers; ++l) {
    const BlockTensors<E> b = s.block(l, params);
    // [out, in], as lib's DenseLinear and chapter 06 hold them (training/train_block.hpp)
    m.insert(m.end(), {{b.wq, qw, d}, {b.wk, kvw, d}, {b.wv, kvw, d}, {b.wo, d, qw},
                       {b.w_gate, F, d}, {b.w_up, F, d}, {b.w_down, d, F}});
  }
  return m;
}
template std::vector<ProjectionMatrix<float>> projection_matrices(const Student<float>&, float*);
template std::vector<ProjectionMatrix<const float>> projection_matrices(const Student<float>&, const float*);

// the-change: begin fake_quantized
std::vector<float> fake_quantized(const Student<float>& s, const quant::QuantScheme* scheme) {
  std::vector<float> w_hat = s.params;
  if (scheme == nullptr) return w_hat;
  for (const ProjectionMatrix<float>& m : projection_matrices(s, w_hat.data())) {
    const std::span<float> w(m.w, static_cast<std::size_t>(m.rows * m.cols));
    const std::vector<float> rounded = quant::round_trip(*scheme, w, m.rows, m.cols);  // chapter 06's rounding
    std::copy(rounded.begin(), rounded.end(), w.begin());
  }
  return w_hat;
}
// the-change: end fake_quantized

void FakeQuant::quantize_weights(Student<float>& s) {
  if (!master_.empty()) throw std::logic_error("fake quant: the weights are quantized already (no restore_master)");
  master_ = std::exchange(s.params, fake_quantized(s, scheme_));
}

// The straight-through estimator: ∂L/∂W := ∂L/∂Ŵ, so there is nothing to do to the gradients —
// the backward ran on Ŵ and wrote ∂L/∂Ŵ into student.grads; putting W back under them makes the
// optimizer apply them to the master.
//
// It is the plain identity here because symmetric absmax clips nothing: each group's scale is
// max|w| / 7, so every weight of the group lies inside the grid's range ±7·scale and rounds to its
// nearest level (the fp16 rounding of the scale moves the largest weight by at most 2⁻¹¹ of its
// size, 7.003 steps, which still rounds to ±7; only a group whose scale falls below fp16's normal
// range, max|w| < 7 · 2⁻¹⁴ ≈ 4.3e-4, could meet the quantizer's clamp). Ŵ − W is then rounding
// noise of at most half a step, and Ŵ follows W one for one, up to that noise. A scheme that
// clips — a scale below max|w| / 7 (percentile or MSE-searched scales), or a learned clipping
// range (PACT, LSQ) — maps every weight beyond the range to the same ±7·scale, where ∂Ŵ/∂W = 0:
// the usual clipped STE then zeroes the gradient of those weights (grads[i] = 0 where |W_i| > the
// clip), and a learned range gets a gradient of its own from the clipped weights.
void FakeQuant::restore_master(Student<float>& s) {
  if (master_.size() != s.params.size()) throw std::logic_error("fake quant: restore_master without quantize_weights");
  s.params = std::move(master_);
  master_.clear();
}

}  // namespace infer::train
