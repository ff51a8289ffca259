// Chapter 06's 8-bit activations (w8a8.hpp) and SmoothQuant's scale migration (smoothing.hpp):
// the per-token rounding and the smoothing factors against values worked by hand, the layer exact
// where both operands sit on their int8 grids, and the calibration pass on a tiny random model.
#include "catch_compat.hpp"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "absmax.hpp"
#include "grouped_kv_cache.hpp"
#include "smoothing.hpp"
#include "w8a8.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

Tensor normal_matrix(int64_t rows, int64_t cols, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector(v, {rows, cols});
}

// Two layers of d = 8, random weights, tied embeddings: enough for every projection to run.
Llama small_random_model() {
  const LlamaConfig c = LlamaConfig::from_shape(2, 8, 2, 1, 12, 20, 16);
  std::mt19937 rng(5);
  LlamaWeights w;
  const Tensor embedding = normal_matrix(c.vocab_size, c.d_model, rng, 1.0f);
  w.token_embedding = std::make_shared<DenseEmbedding>(embedding);
  w.output = std::make_unique<DenseLinear>(embedding);
  w.output_norm = Tensor::from_vector(std::vector<float>(static_cast<std::size_t>(c.d_model), 1.0f), {c.d_model});
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{c.q_width(), c.d_model}, {c.kv_width(), c.d_model},
                                                           {c.kv_width(), c.d_model}, {c.d_model, c.q_width()},
                                                           {c.d_ff, c.d_model},       {c.d_ff, c.d_model},
                                                           {c.d_model, c.d_ff}};
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights L;
    L.attn_norm = w.output_norm;
    L.ffn_norm = w.output_norm;
    std::size_t k = 0;
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      *slot = std::make_unique<DenseLinear>(normal_matrix(shapes[k].first, shapes[k].second, rng, 0.4f));
      ++k;
    }
    w.layers.push_back(std::move(L));
  }
  return Llama(c, std::move(w), Device::cpu());
}

std::vector<float> last_logits(Llama& model, const std::vector<int32_t>& tokens) {
  GroupedKvCache cache(model.config(), std::ssize(tokens), model.device());
  return model.forward(tokens, 0, cache).to_vector();
}

}  // namespace

TEST_CASE("W8A8: each token rounded to 255 levels of its own absmax / 127", "[quant][w8a8]") {
  std::vector<float> x = {1.27f, -0.5f, 0.004f, 0.0f,   // scale 0.01: 127, −50, 0.4 → 0, 0
                          0.0f, 0.0f, 0.0f, 0.0f,       // an all-zero token stays zero
                          -2.0f, 1.0f, 0.0f, 0.0f};     // scale 2/127: 1 → 63.5 → 64 (half away from zero)
  fake_quantize_rows_int8(x, 3, 4);
  CHECK(x[0] == Approx(1.27f));
  CHECK(x[1] == Approx(-0.5f));
  CHECK(x[2] == 0.0f);
  for (int i = 4; i < 8; ++i) CHECK(x[i] == 0.0f);
  CHECK(x[8] == Approx(-2.0f));
  CHECK(x[9] == Approx(64.0f * 2.0f / 127.0f));
}

TEST_CASE("W8A8Linear: exact when x / s and W·s sit on their int8 grids", "[quant][w8a8]") {
  // x / s = {127, −3, 5, 0} · 0.25 and {−64, 127, 1, 2} · 0.5 (each row's absmax is 127 steps);
  // W·s rows {127, 1, −2, 3} · 0.125 and {−127, 0, 5, 7} · 0.5. s: powers of two, so x = (x/s)·s is exact.
  const std::vector<float> s = {2.0f, 0.5f, 4.0f, 1.0f};
  const std::vector<float> xs = {127 * 0.25f, -3 * 0.25f, 5 * 0.25f, 0.0f, -64 * 0.5f, 127 * 0.5f, 1 * 0.5f, 2 * 0.5f};
  const std::vector<float> ws = {127 * 0.125f, 1 * 0.125f, -2 * 0.125f, 3 * 0.125f, -127 * 0.5f, 0.0f, 5 * 0.5f, 7 * 0.5f};
  std::vector<float> x(xs.size()), inverse(s.size());
  for (std::size_t i = 0; i < xs.size(); ++i) x[i] = xs[i] * s[i % 4];
  for (std::size_t j = 0; j < s.size(); ++j) inverse[j] = 1.0f / s[j];
  const W8A8Linear layer(Tensor::from_vector(ws, {2, 4}), inverse);
  Tensor y({2, 2});
  layer.forward(Tensor::from_vector(x, {2, 4}), y);
  const std::vector<float> got = y.to_vector();
  for (int t = 0; t < 2; ++t)
    for (int o = 0; o < 2; ++o) {
      double want = 0;
      for (int j = 0; j < 4; ++j) want += double(xs[t * 4 + j]) * ws[o * 4 + j];
      CHECK(got[t * 2 + o] == Approx(want).margin(1e-5));
    }
  CHECK(layer.weight_bytes() == 2 * 4 + 2 * 2);  // a byte per weight, an fp16 scale per row
  CHECK(layer.storage() == "W8A8 smoothed");
}

TEST_CASE("SmoothQuant: an outlier channel costs plain W8A8 far more than the smoothed layer", "[quant][w8a8]") {
  std::mt19937 rng(21);
  const int64_t n = 32, d = 64, out = 48;
  Tensor x = normal_matrix(n, d, rng, 1.0f);
  for (int64_t t = 0; t < n; ++t) x.host<float>()[t * d + 5] *= 100.0f;  // channel 5: 100× the others
  const Tensor w = normal_matrix(out, d, rng, 0.05f);
  const AbsmaxScheme int8(8, Granularity::per_row);
  // The paper's factors by hand: s_j = √(max|X_j| / max|W_j|) at α = 0.5.
  std::vector<float> s(static_cast<std::size_t>(d)), inverse(s.size()), ws(static_cast<std::size_t>(out * d));
  for (int64_t j = 0; j < d; ++j) {
    float a = 0, b = 0;
    for (int64_t t = 0; t < n; ++t) a = std::max(a, std::fabs(x.host<float>()[t * d + j]));
    for (int64_t o = 0; o < out; ++o) b = std::max(b, std::fabs(w.host<float>()[o * d + j]));
    s[j] = std::sqrt(a / b);
    inverse[j] = 1.0f / s[j];
  }
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < d; ++j) ws[o * d + j] = w.host<float>()[o * d + j] * s[j];
  const std::span<const float> w_values(w.host<float>(), static_cast<std::size_t>(out * d));
  const W8A8Linear plain(Tensor::from_vector(round_trip(int8, w_values, out, d), {out, d}), {});
  const W8A8Linear smoothed(Tensor::from_vector(round_trip(int8, ws, out, d), {out, d}), inverse);
  Tensor exact({n, out}), y_plain({n, out}), y_smooth({n, out});
  DenseLinear(w).forward(x, exact);
  plain.forward(x, y_plain);
  smoothed.forward(x, y_smooth);
  const double e_plain = relative_error(exact.to_vector(), y_plain.to_vector());
  const double e_smooth = relative_error(exact.to_vector(), y_smooth.to_vector());
  INFO("plain " << e_plain << ", smoothed " << e_smooth);
  CHECK(e_smooth < 0.5 * e_plain);
}

TEST_CASE("smoothing factors: √(max|X_j| / max|W_j|), shared by projections that read the same input", "[quant][w8a8]") {
  // One layer of d = 2 (q k v o gate up down); only the shapes' columns matter.
  auto m = [](std::vector<float> v, int64_t rows) { return Tensor::from_vector(v, {rows, 2}); };
  ReferenceWeights ref;
  ref.projections = {m({1.0f, 0.25f, -0.5f, 0.1f}, 2), m({0.5f, -0.5f}, 1), m({0.25f, 0.25f}, 1),  // q k v: max |W_j| = 1, 0.5
                     m({1.0f, 2.0f, 0.0f, 0.0f}, 2),                                                // o: 1, 2
                     m({0.25f, 4.0f}, 1), m({1.0f, 1.0f}, 1),                                       // gate up: 1, 4
                     m({9.0f, 1.0f}, 1)};                                                           // down: 9, 1
  InputMaxima maxima;
  maxima.tokens = 3;
  maxima.channels = {{4, 1}, {4, 1}, {4, 1}, {9, 0}, {16, 1}, {16, 1}, {1, 4}};
  const auto s = smoothing_factors(maxima, ref, 0.5f);
  REQUIRE(s.size() == 7);
  for (int k : {0, 1, 2}) {
    CHECK(s[k][0] == Approx(2.0));                // √(4 / 1)
    CHECK(s[k][1] == Approx(std::sqrt(2.0)));     // √(1 / 0.5)
  }
  CHECK(s[3][0] == Approx(3.0));  // √(9 / 1)
  CHECK(s[3][1] == 1.0f);         // an input channel that was always 0 keeps 1
  for (int k : {4, 5}) {
    CHECK(s[k][0] == Approx(4.0));  // √(16 / 1)
    CHECK(s[k][1] == Approx(0.5));  // √(1 / 4)
  }
  CHECK(s[6][0] == Approx(1.0 / 3.0));  // √(1 / 9)
  CHECK(s[6][1] == Approx(2.0));        // √(4 / 1)
  // α = 1 puts the whole range into the weights: s = max|X|.
  CHECK(smoothing_factors(maxima, ref, 1.0f)[0][0] == Approx(4.0));
}

TEST_CASE("calibration records every projection's input and gives the model back unchanged", "[quant][w8a8]") {
  Llama model = small_random_model();
  const ReferenceWeights ref = keep_reference(model);
  const std::vector<int32_t> tokens = {1, 5, 7, 2, 19, 3};
  const std::vector<float> before = last_logits(model, tokens);
  const InputMaxima maxima = calibrate_input_maxima(model, ref, tokens);
  CHECK(last_logits(model, tokens) == before);
  REQUIRE(maxima.channels.size() == 14);
  CHECK(maxima.tokens == 6);
  for (std::size_t layer = 0; layer < 14; layer += 7) {
    CHECK(maxima.channels[layer + 1] == maxima.channels[layer]);      // q, k, v read the same normed x
    CHECK(maxima.channels[layer + 2] == maxima.channels[layer]);
    CHECK(maxima.channels[layer + 5] == maxima.channels[layer + 4]);  // gate, up too
    CHECK(maxima.channels[layer + 6].size() == 12);                   // down reads the MLP's hidden width
    for (const auto& c : {maxima.channels[layer], maxima.channels[layer + 3], maxima.channels[layer + 6]})
      CHECK(*std::max_element(c.begin(), c.end()) > 0.0f);
  }

  // W8A8 on the same model: close to fp32, every projection replaced; factors of 1 change nothing.
  const QuantizedModel plain = quantize_model_w8a8(model, ref, {}, "W8A8");
  const std::vector<float> w8a8 = last_logits(model, tokens);
  CHECK(dynamic_cast<const W8A8Linear*>(model.weights().layers[1].w_down.get()) != nullptr);
  CHECK(plain.scheme == "W8A8");
  CHECK(relative_error(before, w8a8) > 0.0);
  CHECK(relative_error(before, w8a8) < 0.05);
  std::vector<std::vector<float>> ones;
  for (const Tensor& w : ref.projections) ones.emplace_back(static_cast<std::size_t>(w.dim(1)), 1.0f);
  quantize_model_w8a8(model, ref, ones, "W8A8 ones");
  CHECK(last_logits(model, tokens) == w8a8);
  quantize_model_w8a8(model, ref, smoothing_factors(maxima, ref, 0.5f), "W8A8 SmoothQuant");
  CHECK(relative_error(before, last_logits(model, tokens)) < 0.05);
  quantize_model(model, ref, nullptr);
  CHECK(last_logits(model, tokens) == before);
}
