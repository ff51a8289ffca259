// Every backward pass of chapter 08 against central finite differences in double precision,
// as llm.c checks its kernels: for each input or weight element x_i,
//   numeric_i = (L(x + h·e_i) − L(x − h·e_i)) / 2h,   h = 1e-5,
// where L is the scalar Σ R ⊙ output for a fixed random R (so the output's gradient is R), or the
// loss itself for the losses and the whole model. The check passes when the relative error
//   max_i |analytic_i − numeric_i| / max_i |numeric_i|
// is at most 1e-6. Each check prints its measured error.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "distill_loss.hpp"
#include "student.hpp"
#include "teacher_labels.hpp"
#include "tiny_model.hpp"
#include "train_attention.hpp"
#include "train_block.hpp"
#include "train_kernels.hpp"

using namespace infer;
using namespace infer::train;
using infer::test::TestRng;
using Vec = std::vector<double>;

namespace {

constexpr double kStep = 1e-5, kTolerance = 1e-6;

double relative_error(const Vec& analytic, const Vec& numeric) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    diff = std::max(diff, std::abs(analytic[i] - numeric[i]));
    scale = std::max(scale, std::abs(numeric[i]));
  }
  return diff / std::max(scale, 1e-300);
}

// Compares `analytic` with the central differences of loss() over every element of x.
void check_gradient(const std::string& name, Vec& x, const Vec& analytic, const std::function<double()>& loss) {
  REQUIRE(analytic.size() == x.size());
  Vec numeric(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + kStep;
    const double up = loss();
    x[i] = keep - kStep;
    const double down = loss();
    x[i] = keep;
    numeric[i] = (up - down) / (2 * kStep);
  }
  const double err = relative_error(analytic, numeric);
  std::printf("gradient check %-26s %5zu elements  relative error %.2e\n", name.c_str(), x.size(), err);
  INFO(name << ": relative error " << err);
  CHECK(err <= kTolerance);
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

Vec norm_weights(TestRng& rng, std::size_t n) { return rng.vector(n, 0.5, 1.5); }

}  // namespace

TEST_CASE("RMSNorm backward matches finite differences", "[training][gradcheck]") {
  TestRng rng(1);
  const int N = 3, d = 16;
  Vec x = rng.vector(N * d), w = norm_weights(rng, d), R = rng.vector(N * d);
  Vec y(N * d), inv_rms(N), dx(N * d), dw(d);
  auto loss = [&] {
    rmsnorm_forward(x.data(), w.data(), N, d, 1e-5, y.data(), inv_rms.data());
    return dot(R, y);
  };
  loss();
  rmsnorm_backward(R.data(), x.data(), w.data(), inv_rms.data(), N, d, dx.data(), dw.data());
  check_gradient("rmsnorm dx", x, dx, loss);
  check_gradient("rmsnorm dw", w, dw, loss);
}

TEST_CASE("linear backward matches finite differences", "[training][gradcheck]") {
  TestRng rng(2);
  const int N = 3, K = 5, M = 4;
  Vec x = rng.vector(N * K), W = rng.vector(M * K), R = rng.vector(N * M), y(N * M), dx(N * K), dW(M * K);
  auto loss = [&] {
    linear_forward(x.data(), W.data(), N, K, M, y.data());
    return dot(R, y);
  };
  linear_backward(R.data(), x.data(), W.data(), N, K, M, dx.data(), dW.data());
  check_gradient("linear dx", x, dx, loss);
  check_gradient("linear dW", W, dW, loss);
}

TEST_CASE("RoPE backward matches finite differences", "[training][gradcheck]") {
  TestRng rng(3);
  const int B = 2, S = 5, heads = 2, D = 4, N = B * S;
  Vec x = rng.vector(N * heads * D), R = rng.vector(x.size());
  auto loss = [&] {
    Vec y = x;
    rope_forward(y.data(), N, S, heads, D, 10.0);
    return dot(R, y);
  };
  Vec dx = R;
  rope_backward(dx.data(), N, S, heads, D, 10.0);
  check_gradient("rope dx", x, dx, loss);
}

TEST_CASE("causal grouped-query attention backward matches finite differences", "[training][gradcheck]") {
  TestRng rng(4);
  const AttentionShape a{2, 5, 4, 2, 4};  // B, S, H, H_kv, D: two query heads per key/value head
  const int N = a.B * a.S;
  Vec q = rng.vector(N * a.H * a.D), k = rng.vector(N * a.H_kv * a.D), v = rng.vector(k.size());
  Vec R = rng.vector(q.size()), out(q.size()), probs(static_cast<std::size_t>(a.B * a.H * a.S * a.S));
  auto loss = [&] {
    attention_forward(q.data(), k.data(), v.data(), a, probs.data(), out.data());
    return dot(R, out);
  };
  loss();
  Vec dq(q.size()), dk(k.size()), dv(v.size());
  attention_backward(R.data(), q.data(), k.data(), v.data(), probs.data(), a, dq.data(), dk.data(), dv.data());
  check_gradient("attention dq", q, dq, loss);
  check_gradient("attention dk", k, dk, loss);
  check_gradient("attention dv", v, dv, loss);
}

TEST_CASE("SwiGLU backward matches finite differences", "[training][gradcheck]") {
  TestRng rng(5);
  const int n = 40;
  Vec g = rng.vector(n, -4, 4), u = rng.vector(n), R = rng.vector(n), out(n), dg(n), du(n);
  auto loss = [&] {
    swiglu_forward(g.data(), u.data(), n, out.data());
    return dot(R, out);
  };
  swiglu_backward(R.data(), g.data(), u.data(), n, dg.data(), du.data());
  check_gradient("swiglu dg", g, dg, loss);
  check_gradient("swiglu du", u, du, loss);
}

TEST_CASE("hard, soft and mixed losses: gradients match finite differences", "[training][gradcheck]") {
  TestRng rng(6);
  const int N = 4, V = 12;
  Vec logits = rng.vector(N * V, -3, 3);
  const std::vector<int32_t> labels = {3, -1, 0, 11};  // row 1 is not scored
  // The teacher: top-3 per row (distinct ids) with a tail bucket, and the full vocabulary (no tail).
  SoftTargets top3{3, {}, {}, {}}, full{V, {}, {}, {}};
  std::vector<int32_t> ids3, ids_full;
  std::vector<float> z3, z_full, tail3, no_tail(N, -INFINITY);
  for (int r = 0; r < N; ++r) {
    for (int i = 0; i < 3; ++i) ids3.push_back((r * 5 + i * 4) % V), z3.push_back(static_cast<float>(rng.uniform(-2, 4)));
    tail3.push_back(static_cast<float>(rng.uniform(0, 3)));  // the tail's log Σ exp(z / τ): any number will do here
    for (int v = 0; v < V; ++v) ids_full.push_back(v), z_full.push_back(static_cast<float>(rng.uniform(-3, 3)));
  }
  top3.ids = ids3, top3.logits = z3, top3.tail = tail3, full.ids = ids_full, full.logits = z_full, full.tail = no_tail;

  constexpr SoftTarget tail = SoftTarget::with_tail, renormalised = SoftTarget::top_k_renormalised;
  struct Case { const char* name; LossOptions options; const SoftTargets* soft; };
  const Case cases[] = {
      {"loss hard", {LabelKind::hard, 1.0, 0.5}, nullptr},
      {"loss soft top-3+tail T=1", {LabelKind::soft, 1.0, 0.5, tail}, &top3},
      {"loss soft top-3+tail T=2", {LabelKind::soft, 2.0, 0.5, tail}, &top3},
      {"loss soft top-3+tail T=4", {LabelKind::soft, 4.0, 0.5, tail}, &top3},
      {"loss soft top-3 renorm T=1", {LabelKind::soft, 1.0, 0.5, renormalised}, &top3},
      {"loss soft top-3 renorm T=2", {LabelKind::soft, 2.0, 0.5, renormalised}, &top3},
      {"loss soft full-vocab T=4", {LabelKind::soft, 4.0, 0.5, tail}, &full},
      {"loss mix+tail w=0.3 T=2", {LabelKind::mix, 2.0, 0.3, tail}, &top3},
      {"loss mix renorm w=0.3 T=2", {LabelKind::mix, 2.0, 0.3, renormalised}, &top3},
  };
  for (const Case& c : cases) {
    Vec d_logits(logits.size());
    auto loss = [&] { Vec scratch(logits.size()); return distillation_loss(logits.data(), N, V, labels, c.soft, c.options, scratch.data()); };
    distillation_loss(logits.data(), N, V, labels, c.soft, c.options, d_logits.data());
    check_gradient(c.name, logits, d_logits, loss);
  }
}

// A case worked by hand: V = 8, the teacher's logits (2, 1, 0, 0, 0, 0, 0, 0), the file keeps the
// top 2, so the tail is six tokens of logit 0: its log Σ exp(z / T) is log 6 at every T and its
// mass 6 / (e^(2/T) + e^(1/T) + 6). The student is uniform (q = 1/8 each, q_tail = 6/8).
TEST_CASE("the tail bucket: a known tail mass, the loss by hand, and its gradient", "[training][gradcheck]") {
  const int V = 8, k = 2;
  const std::vector<float> z = {2, 1, 0, 0, 0, 0, 0, 0};
  TeacherLabels file;
  file.k = k, file.vocab_size = V, file.window = 2, file.temperatures = {1, 2, 4};
  file.append(0, z.data());
  REQUIRE(file.ids == std::vector<int32_t>{0, 1});
  for (int t = 0; t < 3; ++t) {
    const double T = file.temperatures[t];
    INFO("T = " << T);
    CHECK(file.tail_lse[t] == Approx(std::log(6.0)).epsilon(1e-7));  // log 6, rounded to the file's float
    const double six = std::exp(double{file.tail_lse[t]});           // the tail's Σ exp(z / T) as stored
    const double p1 = std::exp(2 / T), p2 = std::exp(1 / T), total = p1 + p2 + six;
    CHECK(file.tail_mass(0, t) == Approx(six / total).epsilon(1e-12));

    Vec s(V, 0.0);  // the uniform student
    const std::vector<int32_t> labels = {0};
    const std::vector<float> tail = {file.tail_lse[t]};
    const SoftTargets soft{k, file.ids, file.logits, tail};
    Vec d(V);
    const double with_tail = distillation_loss(s.data(), 1, V, labels, &soft, {LabelKind::soft, T, 0, SoftTarget::with_tail}, d.data());
    auto kl_term = [](double p, double q) { return p * std::log(p / q); };
    const double by_hand = T * T * (kl_term(p1 / total, 1.0 / 8) + kl_term(p2 / total, 1.0 / 8) + kl_term(six / total, 6.0 / 8));
    CHECK(with_tail == Approx(by_hand).epsilon(1e-12));
    // ∂L/∂s = τ (q − p) at the kept ids, τ q_v (1 − p_tail / q_tail) in the tail
    CHECK(d[0] == Approx(T * (1.0 / 8 - p1 / total)).epsilon(1e-12));
    CHECK(d[5] == Approx(T * (1.0 / 8) * (1 - (six / total) / (6.0 / 8))).epsilon(1e-12));
    check_gradient(fmt::format("tail bucket by hand T={:g}", T), s, d, [&] {
      Vec scratch(V);
      return distillation_loss(s.data(), 1, V, labels, &soft, {LabelKind::soft, T, 0, SoftTarget::with_tail}, scratch.data());
    });

    // Renormalised, the same label says the six tail tokens have probability 0.
    const double renormalised = distillation_loss(s.data(), 1, V, labels, &soft, {LabelKind::soft, T, 0, SoftTarget::top_k_renormalised}, d.data());
    CHECK(renormalised == Approx(T * T * (kl_term(p1 / (p1 + p2), 1.0 / 8) + kl_term(p2 / (p1 + p2), 1.0 / 8))).epsilon(1e-12));
    CHECK(d[5] == Approx(T / 8).epsilon(1e-12));  // pushed down: the whole of τ q_v
  }
}

// With the tail the label is exact on its k + 1 buckets, so a student that equals the teacher is a
// minimum: loss 0, gradient 0. Renormalised, the same student is pushed to lower every tail token.
TEST_CASE("a student equal to the teacher: zero loss and gradient with the tail, not renormalised", "[training]") {
  TestRng rng(61);
  const int V = 50, k = 5;
  const Vec s = rng.vector(V, -3, 3);
  TeacherLabels file;
  file.k = k, file.vocab_size = V, file.window = 2, file.temperatures = {1, 4};
  std::vector<float> z(s.begin(), s.end());
  file.append(0, z.data());
  const std::vector<int32_t> labels = {0};
  for (int t = 0; t < 2; ++t) {
    const double T = file.temperatures[t];
    const std::vector<float> tail = {file.tail_lse[t]};
    const SoftTargets soft{k, file.ids, file.logits, tail};
    Vec d(V);
    const double with_tail = distillation_loss(s.data(), 1, V, labels, &soft, {LabelKind::soft, T, 0, SoftTarget::with_tail}, d.data());
    CHECK(std::abs(with_tail) < 1e-6);
    CHECK(*std::max_element(d.begin(), d.end(), [](double a, double b) { return std::abs(a) < std::abs(b); }) == Approx(0).margin(1e-6));
    const double renormalised = distillation_loss(s.data(), 1, V, labels, &soft, {LabelKind::soft, T, 0, SoftTarget::top_k_renormalised}, d.data());
    std::printf("student = teacher, T = %g: loss with the tail %.2e, renormalised %.4f (tail mass %.3f)\n", T, with_tail,
                renormalised, file.tail_mass(0, t));
    CHECK(renormalised > 0.01);
    for (int v = 0; v < V; ++v)
      if (std::find(file.ids.begin(), file.ids.end(), v) == file.ids.end()) CHECK(d[v] > 0);  // every tail logit pushed down
  }
}

TEST_CASE("a whole Llama block backward matches finite differences", "[training][gradcheck]") {
  TestRng rng(7);
  const LlamaConfig c = infer::test::tiny_llama();
  const int B = 2, S = 5, N = B * S;
  Vec w = rng.vector(static_cast<std::size_t>(block_parameter_count(c)), -0.5, 0.5);
  const BlockTensors<double> wt = block_tensors(c, w.data());
  std::fill(wt.attn_norm, wt.attn_norm + c.d_model, 1.1);
  std::fill(wt.ffn_norm, wt.ffn_norm + c.d_model, 0.9);
  Vec x = rng.vector(N * c.d_model), R = rng.vector(x.size()), y(x.size());
  BlockActivations<double> acts;
  auto loss = [&] {
    block_forward(c, B, S, block_tensors(c, static_cast<const double*>(w.data())), x.data(), acts, y.data());
    return dot(R, y);
  };
  loss();
  Vec dx(x.size()), dw(w.size());
  block_backward(c, B, S, block_tensors(c, static_cast<const double*>(w.data())), x.data(), acts, R.data(),
                 block_tensors(c, dw.data()), dx.data());
  check_gradient("block dx_in", x, dx, loss);
  check_gradient("block all weights", w, dw, loss);
}

TEST_CASE("the whole student (final norm, tied output, mixed loss) matches finite differences", "[training][gradcheck]") {
  TestRng rng(8);
  LlamaConfig c = infer::test::tiny_llama(2);
  c.tied_embeddings = GENERATE(true, false);  // untied: a separate (frozen) output matrix
  Student<double> s = Student<double>::random(c, 42, 0.3);
  const int B = 2, S = 5, N = B * S, k = 5;
  const std::vector<int32_t> tokens = rng.tokens(N, c.vocab_size);
  std::vector<int32_t> labels(N), ids;
  std::vector<float> z;
  for (int r = 0; r < N; ++r) {
    labels[r] = r % S == S - 1 ? -1 : tokens[r + 1];
    for (int i = 0; i < k; ++i) ids.push_back((r + 7 * i) % c.vocab_size), z.push_back(static_cast<float>(rng.uniform(-2, 3)));
  }
  std::vector<float> tail;
  for (int r = 0; r < N; ++r) tail.push_back(static_cast<float>(rng.uniform(-1, 2)));
  const SoftTargets soft{k, ids, z, tail};
  const LossOptions options{LabelKind::mix, 2.0, 0.25, SoftTarget::with_tail};
  Vec d_logits(static_cast<std::size_t>(N) * c.vocab_size);
  auto loss = [&] {
    const double* logits = s.forward(tokens, B, S);
    Vec scratch(d_logits.size());
    return distillation_loss(logits, N, c.vocab_size, labels, &soft, options, scratch.data());
  };
  s.zero_grad();
  distillation_loss(s.forward(tokens, B, S), N, c.vocab_size, labels, &soft, options, d_logits.data());
  s.backward(d_logits.data());
  const Vec analytic = s.grads;
  check_gradient(c.tied_embeddings ? "student, tied output" : "student, untied output", s.params, analytic, loss);
}
