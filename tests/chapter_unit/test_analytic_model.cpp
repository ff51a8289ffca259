// Chapter 04's analytic model (chapters/04_batching/analytic_model.hpp): the lecture's
// arithmetic intensities, its Llama-2-13B-on-an-H100 example, and replicas against one model
// split over several cards, against values worked out by hand here.
#include <cmath>

#include "catch_compat.hpp"

#include "analytic_model.hpp"

using namespace infer;

TEST_CASE("analytic model: arithmetic intensities of the lecture", "[batching][analytic]") {
  // A plain matrix product [B, D] × [D, F]: 2BDF / e(BD + DF + BF).
  CHECK(matmul_intensity(2, 3, 4, 2) == Approx(48.0 / (2 * (6 + 12 + 8))));
  CHECK(matmul_intensity(4096, 4096, 4096, 2) == Approx(4096.0 / 3));  // square: N/3 in bf16
  CHECK(matmul_intensity(1, 5120, 13824, 2) == Approx(1.0).epsilon(1e-3));  // a matrix-vector product: ≈ 1
  CHECK(matmul_intensity(64, 5120, 13824, 4) == Approx(matmul_intensity(64, 5120, 13824, 2) / 2));  // fp32 halves it
  // MLP: 6BTDF / e(2BTD + 2BTF + 3DF); B = 2, T = 3, D = 4, F = 5: 720 / (2 · (48 + 60 + 60)).
  CHECK(mlp_intensity(2, 3, 4, 5, 2) == Approx(720.0 / 336));
  // Attention: S·T/(S+T) in bf16: S/2 in a prefill (T = S), S/(S+1) in decode (T = 1).
  CHECK(attention_intensity(1024, 1024, 2) == Approx(512.0));
  CHECK(attention_intensity(4096, 4096, 2) == Approx(2048.0));
  CHECK(attention_intensity(1024, 1, 2) == Approx(1024.0 / 1025));
  CHECK(attention_intensity(1024, 1, 4) == Approx(512.0 / 1025));
}

TEST_CASE("analytic model: the course's Llama-2-13B on an H100", "[batching][analytic]") {
  const LlamaConfig c = llama2_13b_config();
  const Machine h100 = h100_sxm();
  const DecodeShape s = DecodeShape::of("13B", c, 2, 2);
  CHECK(c.parameter_count() == 13015864320);
  CHECK(s.weight_bytes == 26031728640.0);
  CHECK(s.kv_bytes_per_token == 2.0 * 40 * 40 * 128 * 2);  // 819 200 B
  const StepModel one = model_decode_step(s, h100, 1, 1024);
  // (26 031 728 640 + 838 860 800) B / 3.35 TB/s = 8.02 ms; the course: 0.008 s and 124 tokens/s.
  CHECK(one.latency == Approx((26031728640.0 + 838860800.0) / 3.35e12));
  CHECK(one.throughput == Approx(124.7).epsilon(1e-3));
  CHECK(one.memory_bound());
  // Beside 26.03 GB of weights, 80 GB hold floor(53 968 271 360 / 838 860 800) = 64 caches.
  CHECK(largest_batch(s, h100, 1024) == 64);
  CHECK(model_decode_step(s, h100, 64, 1024).fits);
  CHECK_FALSE(model_decode_step(s, h100, 65, 1024).fits);
}

TEST_CASE("analytic model: replicas against one model split over the cards", "[batching][analytic]") {
  const DecodeShape s = DecodeShape::of("13B", llama2_13b_config(), 2, 2);
  const Machine card = h100_sxm();
  const Machine eight = sharded(card, 8);
  CHECK(eight.bandwidth == 8 * card.bandwidth);
  CHECK(eight.peak_flops == 8 * card.peak_flops);
  CHECK(eight.memory_bytes == 640e9);
  CHECK(sharded(card, 1).bandwidth == card.bandwidth);
  CHECK_THROWS_AS(sharded(card, 0), std::invalid_argument);
  // Split over 8 cards: the weights once, so floor((640e9 − 26 031 728 640) / 838 860 800) = 731 caches.
  CHECK(largest_batch(s, eight, 1024) == 731);
  // One user: the same bytes read by 8 cards at once, 8× faster than on one card (1.00 ms).
  const StepModel split_one = model_decode_step(s, eight, 1, 1024);
  CHECK(split_one.latency == Approx(model_decode_step(s, card, 1, 1024).latency / 8));
  // At the replicas' total batch (8 × 64), the split model reads the weights once instead of 8
  // times: (26.03 GB + 512 × 838.9 MB) / 26.8 TB/s against 8 replicas at 23.8 ms.
  const StepModel split = model_decode_step(s, eight, 512, 1024);
  const StepModel replica = model_decode_step(s, card, 64, 1024);
  CHECK(split.latency == Approx((26031728640.0 + 512 * 838860800.0) / (8 * 3.35e12)));
  CHECK(split.throughput > 8 * replica.throughput);
  // A machine too small for the weights holds no batch at all.
  Machine tiny = card;
  tiny.memory_bytes = 10e9;
  CHECK(largest_batch(s, tiny, 1024) == 0);
}
