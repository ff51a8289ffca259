// Chapter 06's calibrated INT4 rows (tables/gptq.hpp, tables/awq.hpp): both reduce to plain
// round-to-nearest INT4 g128 when calibration says nothing (H = I for GPTQ, α = 0 for AWQ), and
// both lower the output error ‖(Ŵ − W)·Xᵀ‖² — what they minimise — on inputs where it can be
// lowered: correlated channels for GPTQ, a few large channels for AWQ.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "absmax.hpp"
#include "awq.hpp"
#include "calibration.hpp"
#include "gptq.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

std::vector<float> normal(int64_t n, float sigma, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// XᵀX [cols, cols] of X [t, cols], by the definition.
Tensor gram(const std::vector<float>& x, int64_t t, int64_t cols) {
  Tensor g = Tensor::zeros({cols, cols});
  float* p = g.host<float>();
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t k = 0; k < t; ++k) s += static_cast<double>(x[k * cols + i]) * x[k * cols + j];
      p[i * cols + j] = static_cast<float>(s);
    }
  return g;
}

std::vector<float> rtn(const std::vector<float>& w, int64_t rows, int64_t cols) {
  return round_trip(AbsmaxScheme(4, Granularity::per_group, 128), w, rows, cols);
}

// Every group of 128 consecutive weights holds integer multiples −7…7 of one step.
bool on_int4_g128_grid(const std::vector<float>& w_hat) {
  for (std::size_t begin = 0; begin < w_hat.size(); begin += 128) {
    const std::size_t end = std::min(w_hat.size(), begin + 128);
    float smallest = 0;
    for (std::size_t i = begin; i < end; ++i)
      if (w_hat[i] != 0 && (smallest == 0 || std::fabs(w_hat[i]) < smallest)) smallest = std::fabs(w_hat[i]);
    bool found = smallest == 0;
    for (int k = 1; k <= 7 && !found; ++k) {  // the smallest nonzero level is k steps
      const float step = smallest / static_cast<float>(k);
      found = std::all_of(w_hat.begin() + begin, w_hat.begin() + end, [&](float v) {
        const float q = v / step;
        return std::fabs(q - std::round(q)) < 1e-3f && std::fabs(q) <= 7.001f;
      });
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("GPTQ's factor: U upper triangular with UᵀU = H⁻¹, on a hand matrix", "[quant][gptq]") {
  // H = (UᵀU)⁻¹ for U = [[1, 2, 3], [0, 1, 4], [0, 0, 2]]: U⁻¹ = [[1, −2, 2.5], [0, 1, −2], [0, 0, 0.5]], H = U⁻¹U⁻ᵀ.
  const std::vector<double> h = {11.25, -7, 1.25, -7, 5, -1, 1.25, -1, 0.25};
  const std::vector<double> u = inverse_cholesky_upper(h, 3);
  const std::vector<double> expected = {1, 2, 3, 0, 1, 4, 0, 0, 2};
  for (std::size_t i = 0; i < 9; ++i) CHECK(u[i] == Approx(expected[i]).margin(1e-9));
  // [[1, 2], [2, 1]] has the eigenvalue −1: not positive definite.
  CHECK_THROWS_AS(inverse_cholesky_upper(std::vector<double>{1, 2, 2, 1}, 2), std::runtime_error);
  CHECK_THROWS_AS(inverse_cholesky_upper(h, 2), std::invalid_argument);
}

TEST_CASE("GPTQ with uncorrelated inputs (diagonal H) is round-to-nearest INT4 g128, bit for bit", "[quant][gptq]") {
  std::mt19937 rng(11);
  // 192 = 1.5 × 128: groups span two rows, as in the 576-wide model; 100 < 128: groups span several.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{6, 192}, {4, 256}, {3, 100}}) {
    const std::vector<float> w = normal(rows * cols, 0.05f, rng);
    Tensor identity = Tensor::zeros({cols, cols});
    Tensor diagonal = Tensor::zeros({cols, cols});
    for (int64_t j = 0; j < cols; ++j) {
      identity.host<float>()[j * cols + j] = 1.0f;
      diagonal.host<float>()[j * cols + j] = 0.1f + static_cast<float>(j % 7);
    }
    INFO(rows << " × " << cols);
    CHECK(gptq_quantize(w, rows, cols, identity) == rtn(w, rows, cols));
    CHECK(gptq_quantize(w, rows, cols, diagonal) == rtn(w, rows, cols));
  }
  // Exact ties (scale 1, weights k/2): both round half away from zero.
  std::vector<float> ties(256);
  for (std::size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(static_cast<int>(i % 29) - 14) * 0.5f;
  Tensor identity = Tensor::zeros({128, 128});
  for (int64_t j = 0; j < 128; ++j) identity.host<float>()[j * 128 + j] = 1.0f;
  CHECK(gptq_quantize(ties, 2, 128, identity) == rtn(ties, 2, 128));
}

TEST_CASE("GPTQ lowers the output error on correlated inputs, on INT4 g128's grid", "[quant][gptq]") {
  std::mt19937 rng(7);
  const int64_t rows = 32, cols = 192, t = 512;
  const std::vector<float> w = normal(rows * cols, 0.05f, rng);
  // X = Z·M: every channel a mix of the same 192 sources, so the channels are correlated.
  const std::vector<float> z = normal(t * cols, 1.0f, rng), m = normal(cols * cols, 1.0f / 8, rng);
  std::vector<float> x(static_cast<std::size_t>(t * cols), 0.0f);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t j = 0; j < cols; ++j) x[i * cols + j] += z[i * cols + k] * m[k * cols + j];
  const Tensor xtx = gram(x, t, cols);
  const std::vector<float> g = gptq_quantize(w, rows, cols, xtx);
  const double e_gptq = output_error_squared(w, g, rows, cols, xtx);
  const double e_rtn = output_error_squared(w, rtn(w, rows, cols), rows, cols, xtx);
  INFO("output error² GPTQ " << e_gptq << ", RTN " << e_rtn);
  CHECK(e_gptq < 0.8 * e_rtn);
  CHECK(on_int4_g128_grid(g));
  CHECK(relative_error(w, g) < 0.5);  // still W, not some other matrix with a small error
}

TEST_CASE("GPTQ for q, k, v weighs a window's first position as much as the window", "[quant][gptq]") {
  // One window of 128 positions, 192 channels (more than positions, as 576 against 512 in the
  // model). Positions 1…127 mix 160 sources; position 0, the attention sink, lies along the last 4
  // channels (rounded last, so they take the others' updates) with a tenth of a typical position's
  // norm (in the model, from layer 12 on, its input to q, k, v has about a third of a typical
  // position's norm and its value vector a tenth to a third). Every later position reads its keys
  // and values.
  std::mt19937 rng(7);
  const int64_t rows = 16, cols = 192, t = 128, sources = 160;
  const std::vector<float> w = normal(rows * cols, 0.05f, rng);
  const std::vector<float> z = normal(t * sources, 1.0f, rng), m = normal(sources * cols, 1.0f / 4, rng),
                           noise = normal(t * cols, 0.02f, rng);
  std::vector<float> x(noise);
  for (int64_t i = 1; i < t; ++i)
    for (int64_t k = 0; k < sources; ++k)
      for (int64_t j = 0; j < cols; ++j) x[i * cols + j] += z[i * sources + k] * m[k * cols + j];
  for (int64_t j = 0; j < cols; ++j) x[j] = j >= cols - 4 ? 2.0f : 0.0f;  // norm 4; the others' about 44
  const std::vector<float> sink(x.begin(), x.begin() + cols);

  // The calibration of one layer by hand: XᵀX for all 7 projections, (t − 1)·x₀x₀ᵀ for q, k, v.
  CalibrationInputs c;
  const Tensor xtx = gram(x, t, cols), sink_gram = gram(sink, 1, cols);
  Tensor first = Tensor::zeros({cols, cols});
  for (int64_t i = 0; i < cols * cols; ++i) first.host<float>()[i] = static_cast<float>(t - 1) * sink_gram.host<float>()[i];
  for (std::size_t k = 0; k < 7; ++k) {
    c.gram.push_back(xtx);
    c.first_gram.push_back(k <= 2 ? first : Tensor());
  }
  const Tensor h_q = gptq_gram(c, 0), h_down = gptq_gram(c, 6);
  CHECK(h_down.host<float>() == xtx.host<float>());  // the same storage: o, gate, up, down keep XᵀX
  CHECK(h_q.host<float>()[0] == Approx(xtx.host<float>()[0] + first.host<float>()[0]));

  const std::vector<float> r = rtn(w, rows, cols);
  const std::vector<float> plain = gptq_quantize(w, rows, cols, xtx), weighted = gptq_quantize(w, rows, cols, h_q);
  const double sink_rtn = output_error_squared(w, r, rows, cols, sink_gram),
               sink_plain = output_error_squared(w, plain, rows, cols, sink_gram),
               sink_weighted = output_error_squared(w, weighted, rows, cols, sink_gram);
  const double all_rtn = output_error_squared(w, r, rows, cols, xtx),
               all_weighted = output_error_squared(w, weighted, rows, cols, xtx);
  INFO("sink's output error² RTN " << sink_rtn << ", GPTQ on XᵀX " << sink_plain << ", on gptq_gram " << sink_weighted
                                   << "; all positions RTN " << all_rtn << ", GPTQ on gptq_gram " << all_weighted);
  // Counted once, the sink is where GPTQ puts the other positions' error: worse than rounding.
  CHECK(sink_plain > 2 * sink_rtn);
  // Weighted as the window that reads it, it keeps less error than rounding, and so do the rest.
  CHECK(sink_weighted < sink_rtn);
  CHECK(all_weighted < 0.8 * all_rtn);
  CHECK(on_int4_g128_grid(weighted));
}

TEST_CASE("output error from XᵀX is ‖(Ŵ − W)·Xᵀ‖²", "[quant][gptq][awq]") {
  std::mt19937 rng(3);
  const int64_t rows = 5, cols = 12, t = 9;
  const std::vector<float> w = normal(rows * cols, 1.0f, rng), w_hat = normal(rows * cols, 1.0f, rng),
                           x = normal(t * cols, 1.0f, rng);
  double direct = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < t; ++i) {
      double y = 0;
      for (int64_t j = 0; j < cols; ++j) y += static_cast<double>(w_hat[r * cols + j] - w[r * cols + j]) * x[i * cols + j];
      direct += y * y;
    }
  CHECK(output_error_squared(w, w_hat, rows, cols, gram(x, t, cols)) == Approx(direct).epsilon(1e-5));
  CHECK(output_error_squared(w, w, rows, cols, gram(x, t, cols)) == 0.0);
}

TEST_CASE("AWQ's scales: mean |x|^α, normalised to max · min = 1", "[quant][awq]") {
  const std::vector<float> s = awq_scales(std::vector<float>{1, 4, 16}, 0.5f);  // 1, 2, 4 → ÷ √(4 · 1)
  CHECK(s[0] == Approx(0.5));
  CHECK(s[1] == Approx(1.0));
  CHECK(s[2] == Approx(2.0));
  CHECK(awq_scales(std::vector<float>{0, 1e-4f, 1}, 1.0f)[0] == awq_scales(std::vector<float>{0, 1e-4f, 1}, 1.0f)[1]);
  for (float v : awq_scales(std::vector<float>{0, 3, 700}, 0.0f)) CHECK(v == 1.0f);
  CHECK(awq_grid().size() == 21);
  CHECK(awq_grid().front() == 0.0f);
  CHECK(awq_grid().back() == 1.0f);
}

TEST_CASE("AWQ at α = 0 is round-to-nearest INT4 g128, bit for bit", "[quant][awq]") {
  std::mt19937 rng(5);
  const int64_t rows = 6, cols = 192;
  const std::vector<float> w = normal(rows * cols, 0.05f, rng), mean = normal(cols, 3.0f, rng);
  std::vector<float> mean_abs(mean.size());
  std::transform(mean.begin(), mean.end(), mean_abs.begin(), [](float v) { return std::fabs(v); });
  CHECK(awq_weight(w, rows, cols, awq_scales(mean_abs, 0.0f)) == rtn(w, rows, cols));
}

TEST_CASE("AWQ's search protects salient channels: never worse than α = 0, better when a few inputs are large",
          "[quant][awq]") {
  std::mt19937 rng(9);
  const int64_t rows = 48, cols = 256, t = 256;
  const std::vector<Tensor> ws = {Tensor::from_vector(normal(rows * cols, 0.05f, rng), {rows, cols}),
                                  Tensor::from_vector(normal(rows * cols, 0.05f, rng), {rows, cols})};
  std::vector<float> x = normal(t * cols, 1.0f, rng);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j : {3, 70, 130, 200}) x[i * cols + j] *= 30.0f;  // four salient input channels
  std::vector<float> mean_abs(static_cast<std::size_t>(cols), 0.0f);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < cols; ++j) mean_abs[j] += std::fabs(x[i * cols + j]) / static_cast<float>(t);
  const Tensor xtx = gram(x, t, cols);

  const AwqChoice best = awq_search(ws, mean_abs, xtx, awq_grid());
  const AwqChoice plain = awq_search(ws, mean_abs, xtx, std::vector<float>{0.0f});
  INFO("α " << best.alpha << ": error " << best.error << " against " << plain.error << " at α = 0");
  CHECK(plain.weights[0] == rtn(ws[0].to_vector(), rows, cols));
  CHECK(best.alpha > 0.0f);
  CHECK(best.error < 0.8 * plain.error);
  // The choice is the grid's minimum, and its weights are those of its α.
  for (float a : awq_grid()) CHECK(best.error <= awq_search(ws, mean_abs, xtx, std::vector<float>{a}).error);
  CHECK(best.weights[1] == awq_weight(ws[1].to_vector(), rows, cols, awq_scales(mean_abs, best.alpha)));
  CHECK(best.error == Approx(output_error_squared(ws[0].to_vector(), best.weights[0], rows, cols, xtx) +
                             output_error_squared(ws[1].to_vector(), best.weights[1], rows, cols, xtx)));
}
