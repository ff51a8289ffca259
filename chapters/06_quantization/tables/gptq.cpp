#include "gptq.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xtensor.hpp>

#include "absmax.hpp"
#include "gguf/ggml_types.hpp"  // fp16 conversions
#include "measure/timing.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

constexpr float kTop = 7.0f;  // INT4's largest code, as AbsmaxScheme(4, ...)

// The scale INT4 g128 stores for a group whose largest |w| is amax: fp16, as AbsmaxScheme rounds it.
float group_scale(float amax) { return gguf::fp16_to_fp32(gguf::fp32_to_fp16(amax / kTop)); }

// One weight on the grid of `scale`: round half away from zero of w · (1/scale), clamped, as
// AbsmaxScheme computes it (the H = I test holds the two to the same bits).
float on_grid(float w, float scale) {
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  return std::clamp(std::round(w * inv), -kTop, kTop) * scale;
}

}  // namespace

std::vector<double> inverse_cholesky_upper(std::span<const double> h, int64_t n) {
  if (n <= 0 || std::ssize(h) != n * n) throw std::invalid_argument("inverse_cholesky_upper: H is not n × n");
  const std::vector<std::size_t> shape = {static_cast<std::size_t>(n), static_cast<std::size_t>(n)};
  const xt::xtensor<double, 2> H = xt::adapt(h.data(), h.size(), xt::no_ownership(), shape);
  try {
    // H = L·Lᵀ, then H⁻¹ from the factor (LAPACK's potri: the paper's cholesky_inverse; it fills
    // the lower triangle), mirrored, then H⁻¹ = L'·L'ᵀ.
    xt::xtensor<double, 2, xt::layout_type::column_major> inv = xt::linalg::cholesky(H);
    if (cxxlapack::potri<int>('L', static_cast<int>(n), inv.data(), static_cast<int>(n)) != 0)
      throw std::runtime_error("potri");
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) inv(i, j) = inv(j, i);
    const xt::xtensor<double, 2> L_inv = xt::linalg::cholesky(inv);
    std::vector<double> u(h.size(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i; j < n; ++j) u[i * n + j] = L_inv(j, i);  // U = L'ᵀ
    return u;
  } catch (const std::runtime_error&) {
    throw std::runtime_error(fmt::format("inverse_cholesky_upper: the {} × {} matrix is not positive definite", n, n));
  }
}

std::vector<float> gptq_quantize(std::span<const float> w, int64_t rows, int64_t cols, const Tensor& xtx,
                                 const GptqOptions& options) {
  if (rows <= 0 || cols <= 0 || std::ssize(w) != rows * cols)
    throw std::invalid_argument(fmt::format("gptq_quantize: shape [{}, {}] does not match {} values", rows, cols, w.size()));
  if (xtx.rank() != 2 || xtx.dim(0) != cols || xtx.dim(1) != cols)
    throw std::invalid_argument("gptq_quantize: XᵀX is not [cols, cols]");
  const int64_t g = options.group;
  if (g < 2) throw std::invalid_argument("gptq_quantize: group < 2");

  // H = 2·XᵀX, dampened; a column no calibration token reached is dropped (its weights set to 0).
  std::vector<float> work(w.begin(), w.end());
  std::vector<double> h(static_cast<std::size_t>(cols * cols));
  const float* x = xtx.host<float>();
  double mean_diag = 0;
  for (int64_t i = 0; i < cols * cols; ++i) h[i] = 2.0 * x[i];
  for (int64_t j = 0; j < cols; ++j) {
    if (h[j * cols + j] == 0) {
      h[j * cols + j] = 1;
      for (int64_t r = 0; r < rows; ++r) work[r * cols + j] = 0;
    }
    mean_diag += h[j * cols + j] / static_cast<double>(cols);
  }
  for (int64_t j = 0; j < cols; ++j) h[j * cols + j] += options.damp * mean_diag;
  const std::vector<double> u64 = inverse_cholesky_upper(h, cols);
  const std::vector<float> u(u64.begin(), u64.end());  // fp32 for the updates, as the paper's code

  // Groups spanning two rows hold column 0 of the second: their scale is fixed before any update.
  const int64_t n = rows * cols, groups = (n + g - 1) / g;
  std::vector<float> scale(static_cast<std::size_t>(groups));
  for (int64_t gi = 0; gi < groups; ++gi) {
    float amax = 0;
    for (int64_t i = gi * g; i < std::min(n, gi * g + g); ++i) amax = std::max(amax, std::fabs(work[i]));
    scale[gi] = group_scale(amax);
  }

  std::vector<float> out(static_cast<std::size_t>(n));
  parallel_for(rows, balanced_grain(rows, 4), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      float* row = work.data() + r * cols;  // this row's weights, updated in place as columns are rounded
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t i = r * cols + j, gi = i / g, end = std::min(n, i + g);
        // A group inside this row starting here: its scale from the row as it is now.
        if (i % g == 0 && end <= (r + 1) * cols) {
          float amax = 0;
          for (int64_t k = j; k < j + (end - i); ++k) amax = std::max(amax, std::fabs(row[k]));
          scale[gi] = group_scale(amax);
        }
        const float rounded = on_grid(row[j], scale[gi]);
        out[i] = rounded;
        // Spread the error over the columns not yet rounded: w_{j+1:} −= (w_j − ŵ_j)/U_jj · U_{j, j+1:}.
        const float* uj = u.data() + j * cols;
        const float e = (row[j] - rounded) / uj[j];
        for (int64_t k = j + 1; k < cols; ++k) row[k] -= e * uj[k];
      }
    }
  });
  return out;
}

Tensor gptq_gram(const CalibrationInputs& calibration, std::size_t projection) {
  const Tensor& xtx = calibration.gram.at(projection);
  if (projection % 7 > 2) return xtx;  // o, gate, up, down: each position's error on its own
  const Tensor& first = calibration.first_gram.at(projection);
  if (first.rank() != 2 || first.numel() != xtx.numel())
    throw std::invalid_argument("gptq_gram: no first-position Gram matrix for q, k, v (calibrate with needs.gram)");
  Tensor h = Tensor::zeros({xtx.dim(0), xtx.dim(1)});
  float* p = h.host<float>();
  const float* a = xtx.host<float>();
  const float* b = first.host<float>();
  for (int64_t i = 0; i < xtx.numel(); ++i) p[i] = a[i] + b[i];
  return h;
}

QuantizedModel quantize_model_gptq(Llama& model, const ReferenceWeights& reference, const CalibrationInputs& calibration,
                                   const std::string& name) {
  Stopwatch clock;
  const AbsmaxScheme int4(4, Granularity::per_group, 128);
  QuantizedModel info = quantize_model(model, reference, &int4);  // the embedding/output matrix as INT4 g128
  info.scheme = name;
  if (calibration.gram.size() != reference.projections.size())
    throw std::invalid_argument("quantize_model_gptq: no Gram matrix per projection (calibrate with needs.gram)");
  std::size_t i = 0;
  Tensor attention;  // gptq_gram of q, computed once for k and v too (they read the same input)
  for (LayerWeights& L : model.weights().layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      const Tensor& w = reference.projections.at(i);
      const int64_t rows = w.dim(0), cols = w.dim(1);
      if (i % 7 == 0) attention = gptq_gram(calibration, i);
      const std::vector<float> w_hat = gptq_quantize({w.host<float>(), static_cast<std::size_t>(rows * cols)}, rows, cols,
                                                     i % 7 <= 2 ? attention : calibration.gram.at(i));
      *slot = std::make_unique<DenseLinear>(Tensor::from_vector(w_hat, {rows, cols}));
      ++i;
    }
  info.seconds = clock.seconds();
  return info;
}

}  // namespace infer::quant
