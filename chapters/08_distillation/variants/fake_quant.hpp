// Quantization-aware training (QAT): train the student through the rounding it will be deployed
// with, instead of rounding it after training (post-training quantization, PTQ: chapter 06).
//
//   forward    Ŵ = dequant(quant(W))    for the 7 projection matrices of every block (q, k, v, o,
//                                       gate, up, down), with chapter 06's quantizer, e.g. INT4 g128
//   backward   ∂L/∂Ŵ, by the ordinary backward pass run on Ŵ
//   update     W −= AdamW(∂L/∂Ŵ)        the fp32 master copy W takes the gradient of Ŵ as its own:
//                                       the straight-through estimator (STE)
//
// The rounding has zero derivative almost everywhere (a step function), so ∂L/∂W through it is
// useless; the STE passes the gradient straight through it as if dequant(quant(W)) were W. The
// master W keeps the small updates that a 4-bit grid could not hold (a step of 2e-4 moves no INT4
// code; a few of them, summed in W, do), and the forward always sees the model as deployed.
//
// What stays fp32: the norm weights (as chapter 06 and llama.cpp keep them) and the frozen tied
// embedding and head (student.hpp: training cannot adapt them, so the study leaves them alone).
//
// train_step (train_step.hpp) calls quantize_weights before its forward and restore_master after
// its backward when StepOptions::fake_quant is set; the optimizer then updates the master.
#pragma once

#include <cstdint>
#include <vector>

#include "06_quantization/quant_scheme.hpp"
#include "student.hpp"

namespace infer::train {

// One weight matrix inside a student's flat parameters: w[rows, cols], row-major (E = float, or
// const float to read).
template <class E>
struct ProjectionMatrix {
  E* w;
  int64_t rows, cols;
};
// The 7 projection matrices of every block of `student`'s layout inside `params` (its own
// params, or a copy), block by block in the order q, k, v, o, gate, up, down.
template <class E>
std::vector<ProjectionMatrix<E>> projection_matrices(const Student<float>& student, E* params);

// The student's parameters with every projection matrix replaced by its round trip through
// `scheme` (chapter 06's quantize then dequantize); norms unchanged. scheme == nullptr: an exact
// copy (quantization off). This Ŵ is what the fake-quant forward computes with, and what PTQ and
// the QAT-trained model deploy.
std::vector<float> fake_quantized(const Student<float>& student, const quant::QuantScheme* scheme);

class FakeQuant {
 public:
  // scheme == nullptr: quantization off, the forward sees W itself (the control of the tests).
  explicit FakeQuant(const quant::QuantScheme* scheme) : scheme_(scheme) {}
  const quant::QuantScheme* scheme() const { return scheme_; }

  // Before the forward: keeps the master W and puts Ŵ = fake_quantized(W) in student.params, so
  // that the forward and the backward both compute with Ŵ and the gradients are ∂L/∂Ŵ.
  void quantize_weights(Student<float>& student);
  // After the backward: puts W back, and leaves student.grads = ∂L/∂Ŵ as the gradient of W.
  void restore_master(Student<float>& student);

 private:
  const quant::QuantScheme* scheme_;
  std::vector<float> master_;  // W while student.params holds Ŵ
};

}  // namespace infer::train
