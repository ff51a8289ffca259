// Quantization-aware training (chapter 08's fake_quant.hpp) on tiny random students: the forward
// computes with chapter 06's INT4 g128 round trip of every projection, bit for bit; a QAT step's
// gradient is the loss's gradient at Ŵ (central finite differences, Ŵ perturbed directly) and its
// update lands on the fp32 master; with quantization off a QAT step is a plain step, bit for bit;
// and a few QAT steps leave an INT4 model with a lower loss than PTQ after as many fp32 steps.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "06_quantization/absmax.hpp"
#include "adamw.hpp"
#include "distill_loss.hpp"
#include "fake_quant.hpp"
#include "student.hpp"
#include "tiny_model.hpp"
#include "train_step.hpp"

using namespace infer;
using namespace infer::train;
using infer::test::TestRng;

namespace {

const quant::AbsmaxScheme& int4_g128() {
  static const quant::AbsmaxScheme scheme(4, quant::Granularity::per_group, 128);
  return scheme;
}

// The overfit test's shape: d = 32, so a q projection is 8 groups of 128 and an MLP matrix 16.
LlamaConfig small_llama() {
  LlamaConfig c = infer::test::tiny_llama(2);
  c.d_model = 32, c.head_dim = 8, c.d_ff = 64, c.vocab_size = 64;
  return c;
}

// B windows of S random tokens, each labelled with its next token (−1 at a window's end), and a
// random teacher: k ids per row with logits and a tail bucket, for the soft and mixed losses.
Batch random_batch(const LlamaConfig& c, int B, int S, int k, uint64_t seed) {
  TestRng rng(seed);
  Batch b;
  b.B = B, b.S = S, b.k = k;
  b.tokens = rng.tokens(static_cast<std::size_t>(B * S), c.vocab_size);
  for (int r = 0; r < B * S; ++r) {
    b.labels.push_back(r % S == S - 1 ? -1 : b.tokens[r + 1]);
    for (int i = 0; i < k; ++i)
      b.teacher_ids.push_back((r + 7 * i) % c.vocab_size), b.teacher_logits.push_back(static_cast<float>(rng.uniform(-2, 3)));
    b.teacher_tail.push_back(static_cast<float>(rng.uniform(-1, 2)));
  }
  return b;
}

// The loss of `s` on `batch` with its projections rounded by `scheme` (nullptr: as they are).
double loss_with(Student<float> s, const Batch& batch, const LossOptions& loss, const quant::QuantScheme* scheme) {
  s.params = fake_quantized(s, scheme);
  std::vector<float> d_logits(static_cast<std::size_t>(batch.B) * batch.S * s.config().vocab_size);
  const SoftTargets soft = batch.soft();
  return distillation_loss(s.forward(batch.tokens, batch.B, batch.S), batch.B * batch.S, s.config().vocab_size,
                           batch.labels, &soft, loss, d_logits.data());
}

// max_i |a_i − b_i| / max_i |b_i|
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i])), scale = std::max(scale, std::abs(b[i]));
  return diff / std::max(scale, 1e-300);
}

}  // namespace

TEST_CASE("fake quant: every projection is chapter 06's INT4 g128 round trip, bit for bit, and the forward uses it",
          "[training][qat]") {
  const LlamaConfig c = small_llama();
  Student<float> s = Student<float>::random(c, 3, 0.2);
  const std::vector<float> w = s.params;
  const std::vector<float> w_hat = fake_quantized(s, &int4_g128());
  CHECK(fake_quantized(s, nullptr) == w);  // quantization off: W itself

  // The expectation through lib's model: the student's matrices as a Llama holds them, each sent
  // through chapter 06's round trip; the norms untouched.
  Student<float> expected = s;
  const Llama reference = to_llama(s);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = reference.weights().layers[l];
    const BlockTensors<float> b = expected.block(l, expected.params.data());
    const std::pair<const Linear*, float*> slots[] = {{L.wq.get(), b.wq}, {L.wk.get(), b.wk}, {L.wv.get(), b.wv},
                                                      {L.wo.get(), b.wo}, {L.w_gate.get(), b.w_gate},
                                                      {L.w_up.get(), b.w_up}, {L.w_down.get(), b.w_down}};
    for (const auto& [linear, into] : slots) {
      const Tensor& weight = dynamic_cast<const DenseLinear&>(*linear).weight();
      const std::vector<float> rounded = quant::round_trip(int4_g128(), weight.to_vector(), weight.shape()[0], weight.shape()[1]);
      std::copy(rounded.begin(), rounded.end(), into);
    }
  }
  CHECK(w_hat == expected.params);
  int64_t moved = 0;
  for (std::size_t i = 0; i < w.size(); ++i) moved += w[i] != w_hat[i] ? 1 : 0;
  CHECK(moved > std::ssize(w) / 2);  // INT4 moves most weights: the comparison above is not of W with W

  // The forward between quantize_weights and restore_master is the forward of Ŵ; W comes back.
  const std::vector<int32_t> tokens = TestRng(4).tokens(12, c.vocab_size);
  FakeQuant fake_quant(&int4_g128());
  fake_quant.quantize_weights(s);
  const float* seen = s.forward(tokens, 2, 6);
  const std::vector<float> logits(seen, seen + 12 * c.vocab_size);
  fake_quant.restore_master(s);
  CHECK(s.params == w);
  const float* of_w_hat = expected.forward(tokens, 2, 6);
  CHECK(std::equal(logits.begin(), logits.end(), of_w_hat));
}

TEST_CASE("a QAT step: the gradient is the loss's at Ŵ, and AdamW applies it to the fp32 master", "[training][qat]") {
  const LlamaConfig c = infer::test::tiny_llama(2);  // d = 16: small enough to perturb every parameter
  Student<float> s = Student<float>::random(c, 5, 0.3);
  const Batch batch = random_batch(c, 2, 5, 5, 6);
  FakeQuant fake_quant(&int4_g128());
  StepOptions o{.loss = {LabelKind::mix, 2.0, 0.25, SoftTarget::with_tail}, .schedule = {1e-2, 1.0, 1, 10},
                .clip_norm = 1e30, .fake_quant = &fake_quant};  // no clipping: the gradients stay ∂L/∂Ŵ
  const std::vector<float> w = s.params, w_hat = fake_quantized(s, &int4_g128());
  Student<float> plain = s;  // the same step without fake quant: the gradient at W
  AdamW optimizer, plain_optimizer;
  const StepResult r = train_step(s, optimizer, batch, o, 0);
  o.fake_quant = nullptr;
  train_step(plain, plain_optimizer, batch, o, 0);

  // Central differences of the loss in double, with Ŵ itself as the parameters.
  Student<double> at_w_hat(c, std::vector<double>(s.embedding().begin(), s.embedding().end()));
  at_w_hat.params.assign(w_hat.begin(), w_hat.end());
  auto loss = [&] {
    std::vector<double> d_logits(static_cast<std::size_t>(batch.B) * batch.S * c.vocab_size);
    const SoftTargets soft = batch.soft();
    return distillation_loss(at_w_hat.forward(batch.tokens, batch.B, batch.S), batch.B * batch.S, c.vocab_size,
                             batch.labels, &soft, o.loss, d_logits.data());
  };
  CHECK(r.loss == Approx(loss()).epsilon(1e-5));  // the step's forward ran on Ŵ
  const double h = 1e-5;
  std::vector<double> numeric(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double keep = at_w_hat.params[i];
    at_w_hat.params[i] = keep + h;
    const double up = loss();
    at_w_hat.params[i] = keep - h;
    numeric[i] = (up - loss()) / (2 * h);
    at_w_hat.params[i] = keep;
  }
  const double qat_error = relative_error(std::vector<double>(s.grads.begin(), s.grads.end()), numeric);
  const double plain_error = relative_error(std::vector<double>(plain.grads.begin(), plain.grads.end()), numeric);
  std::printf("QAT gradient against finite differences at Ŵ: relative error %.2e (the gradient at W: %.2e)\n", qat_error,
              plain_error);
  CHECK(qat_error <= 1e-5);      // float backward against double differences
  CHECK(plain_error >= 1e-2);    // and the check can tell ∂L/∂Ŵ from ∂L/∂W at this size

  // The update: AdamW's step from W (not from Ŵ) with those gradients, bit for bit.
  std::vector<float> expected = w;
  AdamW fresh;
  fresh.step(expected, s.grads, r.lr);
  CHECK(s.params == expected);
  CHECK(s.params != fake_quantized(s, &int4_g128()));  // the master stays off the INT4 grid
}

TEST_CASE("with quantization off a QAT step is a plain training step, bit for bit", "[training][qat]") {
  const LlamaConfig c = small_llama();
  Student<float> qat = Student<float>::random(c, 8, 0.2), plain = qat;
  const Batch batch = random_batch(c, 2, 8, 4, 9);
  FakeQuant off(nullptr);
  StepOptions o{.loss = {LabelKind::soft, 1.0, 0.0, SoftTarget::with_tail}, .schedule = {1e-2, 0.1, 2, 6}};
  StepOptions o_qat = o;
  o_qat.fake_quant = &off;
  AdamW qat_optimizer, plain_optimizer;
  for (int step = 0; step < 6; ++step) {
    const StepResult a = train_step(qat, qat_optimizer, batch, o_qat, step);
    const StepResult b = train_step(plain, plain_optimizer, batch, o, step);
    CHECK(a.loss == b.loss);
    CHECK(a.grad_norm == b.grad_norm);
  }
  CHECK(qat.params == plain.params);
  CHECK(qat.grads == plain.grads);
}

TEST_CASE("at an equal budget QAT leaves an INT4 model with a lower loss than fp32 training then PTQ", "[training][qat]") {
  const LlamaConfig c = small_llama();
  const Batch batch = random_batch(c, 2, 16, 4, 11);
  const LossOptions loss{LabelKind::soft, 1.0, 0.0, SoftTarget::with_tail};
  // The "distilled" start: a random student trained in fp32 on the batch.
  Student<float> start = Student<float>::random(c, 7, 0.2);
  AdamW optimizer;
  for (int step = 0; step < 40; ++step) train_step(start, optimizer, batch, {.loss = loss, .schedule = {1e-2, 0.1, 4, 40}}, step);
  // Then as many steps again from the same start: fp32, or through INT4 g128.
  const int k = 20;
  auto fine_tune = [&](FakeQuant* fake_quant) {
    Student<float> s = start;
    AdamW fresh;
    for (int step = 0; step < k; ++step)
      train_step(s, fresh, batch, {.loss = loss, .schedule = {3e-3, 0.1, 2, k}, .fake_quant = fake_quant}, step);
    return s;
  };
  FakeQuant int4(&int4_g128());
  const Student<float> fp32 = fine_tune(nullptr), qat = fine_tune(&int4);
  const double start_fp32 = loss_with(start, batch, loss, nullptr), start_ptq = loss_with(start, batch, loss, &int4_g128());
  const double fp32_loss = loss_with(fp32, batch, loss, nullptr), ptq = loss_with(fp32, batch, loss, &int4_g128());
  const double qat_int4 = loss_with(qat, batch, loss, &int4_g128());
  std::printf("loss on the batch: start fp32 %.4f, PTQ %.4f; after %d more steps: fp32 %.4f, its PTQ %.4f, QAT in INT4 %.4f\n",
              start_fp32, start_ptq, k, fp32_loss, ptq, qat_int4);
  CHECK(start_ptq > start_fp32);  // rounding costs something to recover
  CHECK(qat_int4 < ptq);
}
