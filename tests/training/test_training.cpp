// Chapter 08's training behaviour on tiny random models: a batch can be memorised, the soft loss
// with a one-hot teacher is the hard loss, τ² keeps gradients comparable across temperatures,
// the same seed gives the same run, the schedule's shape, and which layer the importance score drops.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "adamw.hpp"
#include "distill_loss.hpp"
#include "layer_importance.hpp"
#include "student.hpp"
#include "teacher_labels.hpp"
#include "tiny_model.hpp"
#include "train_step.hpp"

using namespace infer;
using namespace infer::train;
using infer::test::TestRng;

namespace {

double l2_norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// A teacher file made by a random tiny teacher over random tokens.
TeacherLabels tiny_teacher_labels(const LlamaConfig& c, int windows, int window, int k, uint64_t seed) {
  Llama teacher = to_llama(Student<float>::random(c, seed, 0.5));
  TestRng rng(seed + 1);
  const std::vector<int32_t> tokens = rng.tokens(static_cast<std::size_t>(windows * window), c.vocab_size);
  const std::vector<double> temperatures = {1, 2};
  return teacher_pass(teacher, tokens, window, k, temperatures);
}

}  // namespace

TEST_CASE("a tiny student overfits one batch: the loss falls by at least 90%", "[training]") {
  LlamaConfig c = infer::test::tiny_llama(2);
  c.d_model = 32, c.head_dim = 8, c.d_ff = 64, c.vocab_size = 64;
  Student<float> s = Student<float>::random(c, 7, 0.2);
  TestRng rng(11);
  Batch batch;
  batch.B = 2, batch.S = 16;
  batch.tokens = rng.tokens(32, c.vocab_size);
  for (int r = 0; r < 32; ++r) batch.labels.push_back(r % 16 == 15 ? -1 : batch.tokens[r + 1]);
  StepOptions o;
  o.loss.labels = LabelKind::hard;
  o.schedule = {1e-2, 1.0, 5, 150};  // peak, floor ratio (constant after warm-up), warm-up, total
  AdamW optimizer;
  const double first = train_step(s, optimizer, batch, o, 0).loss;
  double last = first;
  for (int step = 1; step < 150; ++step) last = train_step(s, optimizer, batch, o, step).loss;
  std::printf("overfit one batch: loss %.4f → %.4f (%.1f%% lower)\n", first, last, 100 * (1 - last / first));
  CHECK(last <= 0.1 * first);
}

TEST_CASE("with a one-hot teacher at T = 1 the soft loss equals the hard loss", "[training]") {
  TestRng rng(12);
  const int N = 6, V = 40;
  std::vector<double> logits = rng.vector(N * V, -4, 4);
  const std::vector<int32_t> labels = {5, 0, 39, -1, 17, 17};
  // one-hot as the file would hold it (k = 1) and over the whole vocabulary (k = V, one logit far above the rest)
  std::vector<int32_t> ids1, ids_full;
  std::vector<float> z1, z_full;
  for (int r = 0; r < N; ++r) {
    const int32_t y = std::max(labels[r], 0);
    ids1.push_back(y), z1.push_back(3.0f);
    for (int v = 0; v < V; ++v) ids_full.push_back(v), z_full.push_back(v == y ? 1000.0f : 0.0f);
  }
  // a one-hot teacher has an empty tail: its tail bucket's logit is −∞ (mass 0)
  const std::vector<float> no_tail(N, -INFINITY);
  const SoftTargets one_hot_k1{1, ids1, z1, no_tail}, one_hot_full{V, ids_full, z_full, no_tail};
  std::vector<double> d_hard(logits.size()), d_soft(logits.size()), d_full(logits.size());
  const double hard = distillation_loss(logits.data(), N, V, labels, nullptr, {LabelKind::hard, 1.0, 0.5}, d_hard.data());
  for (const SoftTarget target : {SoftTarget::with_tail, SoftTarget::top_k_renormalised}) {
    const double soft = distillation_loss(logits.data(), N, V, labels, &one_hot_k1, {LabelKind::soft, 1.0, 0.5, target}, d_soft.data());
    const double full = distillation_loss(logits.data(), N, V, labels, &one_hot_full, {LabelKind::soft, 1.0, 0.5, target}, d_full.data());
    CHECK(soft == Approx(hard).epsilon(1e-12));
    CHECK(full == Approx(hard).epsilon(1e-12));
    for (std::size_t i = 0; i < logits.size(); ++i) {
      CHECK(d_soft[i] == Approx(d_hard[i]).margin(1e-14));
      CHECK(d_full[i] == Approx(d_hard[i]).margin(1e-14));
    }
  }
}

// A window's last position has no next token inside the window (label −1). The teacher's label
// there exists, but the soft term must skip the row as the hard term does, so that both are means
// over the same positions: a mix weighs like with like, and a soft run trains on exactly the
// positions a hard run does. Scoring the soft term there would change the loss when that row's
// teacher label changes, and give the row a gradient.
TEST_CASE("hard and soft losses are over the same rows: an unscored row gets neither", "[training]") {
  TestRng rng(14);
  const int N = 6, V = 30, k = 4;
  const std::vector<double> logits = rng.vector(N * V, -3, 3);
  const std::vector<int32_t> labels = {4, 9, -1, 0, 29, -1};  // rows 2 and 5: the last position of a window
  std::vector<int32_t> ids;
  std::vector<float> z, tail;
  for (int r = 0; r < N; ++r) {
    for (int i = 0; i < k; ++i) ids.push_back((3 * r + 7 * i) % V), z.push_back(static_cast<float>(rng.uniform(0, 4)));
    tail.push_back(static_cast<float>(rng.uniform(1, 3)));
  }
  std::vector<float> z_other = z, tail_other = tail;  // another teacher at the unscored rows only
  for (int r : {2, 5}) {
    for (int i = 0; i < k; ++i) z_other[r * k + i] = static_cast<float>(rng.uniform(-5, 9));
    tail_other[r] = 7.5f;
  }
  const SoftTargets teacher{k, ids, z, tail}, other{k, ids, z_other, tail_other};
  for (const LossOptions& o : {LossOptions{LabelKind::soft, 2.0, 0.5, SoftTarget::with_tail},
                               LossOptions{LabelKind::soft, 1.0, 0.5, SoftTarget::top_k_renormalised},
                               LossOptions{LabelKind::mix, 2.0, 0.3, SoftTarget::with_tail}}) {
    std::vector<double> d(logits.size()), d_other(logits.size());
    const double loss = distillation_loss(logits.data(), N, V, labels, &teacher, o, d.data());
    const double loss_other = distillation_loss(logits.data(), N, V, labels, &other, o, d_other.data());
    CHECK(loss == loss_other);  // bit for bit: the unscored rows' labels are never read
    CHECK(d == d_other);
    for (int r : {2, 5})
      for (int v = 0; v < V; ++v) CHECK(d[r * V + v] == 0.0);
    // the mean is over the four scored rows: the mix is exactly w · hard + (1 − w) · soft of the same rows
    if (o.labels == LabelKind::mix) {
      std::vector<double> scratch(logits.size());
      const double hard = distillation_loss(logits.data(), N, V, labels, nullptr, {LabelKind::hard, 1.0, 0.5}, scratch.data());
      const double soft = distillation_loss(logits.data(), N, V, labels, &teacher, {LabelKind::soft, o.temperature, 0.5, o.target}, scratch.data());
      CHECK(loss == Approx(o.hard_weight * hard + (1 - o.hard_weight) * soft).epsilon(1e-12));
    }
  }
  // and make_batch marks exactly the last position of every window
  const LlamaConfig c = infer::test::tiny_llama(1);
  const TeacherLabels file = tiny_teacher_labels(c, 3, 8, 4, 15);
  const std::vector<int64_t> windows = {2, 0};
  const Batch b = make_batch(file, windows, {LabelKind::soft, 2.0, 0.5, SoftTarget::with_tail});
  REQUIRE(std::ssize(b.labels) == 16);
  for (int r = 0; r < 16; ++r) CHECK((b.labels[r] < 0) == (r % 8 == 7));
  REQUIRE(std::ssize(b.teacher_tail) == 16);
  CHECK(b.teacher_tail[0] == file.tail_lse[2 * 8 * 2 + 1]);  // window 2, position 0, the column of T = 2
  CHECK_THROWS_WITH(make_batch(file, windows, {LabelKind::soft, 3.0, 0.5, SoftTarget::with_tail}),
                    Catch::Contains("not at T = 3"));
  CHECK(make_batch(file, windows, {LabelKind::soft, 3.0, 0.5, SoftTarget::top_k_renormalised}).teacher_tail.empty());
}

TEST_CASE("the T² factor keeps soft-label gradients comparable across temperatures", "[training]") {
  TestRng rng(13);
  const int N = 32, V = 256;
  std::vector<double> logits = rng.vector(N * V, -3, 3);
  std::vector<int32_t> labels(N, 0), ids;
  std::vector<float> z;
  for (int r = 0; r < N; ++r)
    for (int v = 0; v < V; ++v)
      ids.push_back(v), z.push_back(static_cast<float>(logits[r * V + v] + rng.uniform(-2, 2)));
  const std::vector<float> no_tail(N, -INFINITY);  // k = V: nothing left for the tail
  const SoftTargets teacher{V, ids, z, no_tail};
  std::vector<double> scaled, unscaled;
  for (double T : {1.0, 2.0, 4.0, 8.0}) {
    std::vector<double> d(logits.size());
    distillation_loss(logits.data(), N, V, labels, &teacher, {LabelKind::soft, T, 0.5}, d.data());
    scaled.push_back(l2_norm(d));
    unscaled.push_back(l2_norm(d) / (T * T));  // what KL(p_T ‖ q_T) alone would give
    std::printf("T = %g: gradient norm with T² %.4g, without %.4g\n", T, scaled.back(), unscaled.back());
  }
  const auto [lo, hi] = std::minmax_element(scaled.begin(), scaled.end());
  CHECK(*hi / *lo < 2.0);                       // with T²: within a factor 2 from T = 1 to 8
  CHECK(unscaled.front() / unscaled.back() > 30);  // without: shrinking like 1/T²
}

TEST_CASE("the same seed gives the same run", "[training]") {
  const LlamaConfig c = infer::test::tiny_llama(3);
  const TeacherLabels labels = tiny_teacher_labels(c, 6, 8, 8, 21);
  auto run = [&](uint64_t seed) {
    Llama teacher = to_llama(Student<float>::random(c, 21, 0.5));
    const std::vector<int> keep = {0, 2};
    Student<float> s = Student<float>::from_teacher(teacher, keep);
    AdamW optimizer;
    StepOptions o;
    o.loss = {LabelKind::mix, 2.0, 0.5};
    o.schedule = {1e-3, 0.1, 2, 6};
    const std::vector<int64_t> order = shuffled_order(labels.windows(), seed);
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      const Batch b = make_batch(labels, std::span(order).subspan(static_cast<std::size_t>(step * 2), 2), o.loss);
      losses.push_back(train_step(s, optimizer, b, o, step).loss);
    }
    return std::make_pair(losses, s.params);
  };
  const auto a = run(5), b = run(5), other = run(6);
  CHECK(a.first == b.first);    // bit for bit
  CHECK(a.second == b.second);
  CHECK(shuffled_order(100, 5) != shuffled_order(100, 6));
  CHECK(a.first != other.first);  // another seed visits the windows in another order
}

TEST_CASE("learning rate: linear warm-up, then a cosine down to the floor", "[training]") {
  const LrSchedule s{1e-3, 0.1, 10, 110};
  CHECK(s.at(0) == Approx(1e-4));
  CHECK(s.at(9) == Approx(1e-3));
  CHECK(s.at(60) == Approx(0.55e-3));  // half-way down the cosine
  CHECK(s.at(110) == Approx(1e-4));
  CHECK(s.at(500) == Approx(1e-4));
  for (int i = 10; i < 110; ++i) CHECK(s.at(i + 1) <= s.at(i));
}

TEST_CASE("gradient clipping caps the norm and reports it", "[training]") {
  std::vector<float> g = {3, 4};
  CHECK(clip_grad_norm(g, 1.0) == Approx(5.0));
  CHECK(g[0] == Approx(0.6f));
  CHECK(g[1] == Approx(0.8f));
  CHECK(clip_grad_norm(g, 10.0) == Approx(1.0));
  CHECK(g[0] == Approx(0.6f));
}

TEST_CASE("block influence scores an identity block 0 and the pruning drops it", "[training]") {
  const LlamaConfig c = infer::test::tiny_llama(3);
  Student<float> s = Student<float>::random(c, 31, 0.3);
  const BlockTensors<float> b1 = s.block(1, s.params.data());  // block 1 adds nothing to the stream
  std::fill(b1.wo, b1.wo + c.d_model * c.q_width(), 0.0f);
  std::fill(b1.w_down, b1.w_down + c.d_model * c.d_ff, 0.0f);
  TestRng rng(32);
  const std::vector<double> scores = block_influence(s, rng.tokens(24, c.vocab_size), 8);
  REQUIRE(scores.size() == 3);
  CHECK(scores[1] == Approx(0.0).margin(1e-6));
  CHECK(scores[0] > 1e-3);
  CHECK(scores[2] > 1e-3);
  CHECK(layers_to_keep(scores, 2) == std::vector<int>{0, 2});
}
