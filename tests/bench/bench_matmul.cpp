// bench_matmul — the matrix products of a decode step, for a few activation rows at a time.
//
// A decode step multiplies n activation rows (n = 1 for one sequence, the batch size in chapter
// 04, γ + 1 in chapter 07's verification) by every weight matrix of the model. For small n the
// cost is reading the weights once; for large n it is the arithmetic. This benchmark times
// ops::matmul_t (which uses lib's small-n kernel up to kSmallN rows and OpenBLAS's sgemm above)
// and a plain sgemm for the same product, on one layer's matrices plus the output matrix, so that
// the crossover between the two is measured rather than assumed.
//
// The weights here are small enough to stay in the caches between repeats, so the table shows the
// kernels' arithmetic speed; whole decode steps, which stream the weights from memory, are timed
// by bench_batching (the performance targets for batched decode live there).
#include <random>

#include <fmt/format.h>

#include "app/cli.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"
#include "tensor/ops_cpu.hpp"
#include "tensor/small_matmul.hpp"

using namespace infer;

namespace {

struct WeightShape {
  const char* name;
  int64_t m, k;   // weight [m, k]: m outputs, k inputs
  int per_layer;  // how many of a layer's seven matrices have this shape
};

// SmolLM2-135M: one layer's seven matrices and the tied output matrix.
constexpr WeightShape kShapes[] = {{"Wq, Wo [576 × 576]", 576, 576, 2},
                             {"Wk, Wv [192 × 576]", 192, 576, 2},
                             {"Wgate, Wup [1536 × 576]", 1536, 576, 2},
                             {"Wdown [576 × 1536]", 576, 1536, 1},
                             {"output [49152 × 576]", 49152, 576, 0}};

Tensor random_tensor(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  for (float& v : values) v = normal(rng);
  return Tensor::from_vector(values, {rows, cols});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: matrix products for n = 1 … 32 activation rows, lib's kernel against sgemm"};
  int threads = 2, repeats = 21;
  app.add_option("-t,--threads", threads, "threads")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--repeats", repeats, "timed repeats (median reported)")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  set_num_threads(threads);
  const BandwidthResult bw = measure_read_bandwidth();
  std::mt19937 rng(7);
  const std::vector<int> ns = {1, 2, 4, 8, 12, 16, 24, 32};

  Table t(fmt::format("Matrix products y[n, m] = x[n, k] · W[m, k]ᵀ, {} threads, median of {}; read bandwidth {:.1f} GB/s",
                      num_threads(), repeats, bw.bytes_per_second / 1e9),
          {"weights", "n", "matmul_t (ms)", "× n=1", "GB/s of weights", "GFLOP/s", "sgemm (ms)", "faster"});
  double layer_seconds[2][8] = {};  // [0] matmul_t, [1] sgemm, per n: the sum over one layer's matrices
  for (const WeightShape& s : kShapes) {
    const Tensor w = random_tensor(s.m, s.k, rng);
    double first = 0;
    for (std::size_t i = 0; i < ns.size(); ++i) {
      const int n = ns[i];
      const Tensor x = random_tensor(n, s.k, rng);
      Tensor y({n, s.m}, DType::f32, Device::cpu());
      const double ours = median_seconds(repeats, [&] { ops::matmul_t(x, w, y); });
      const double blas = median_seconds(repeats, [&] {
        cpu::sgemm(false, true, n, static_cast<int>(s.m), static_cast<int>(s.k), 1.0f, x.host<float>(), w.host<float>(),
                   0.0f, y.host<float>());
      });
      if (n == 1) first = ours;
      const double bytes = static_cast<double>(s.m * s.k) * 4, flops = 2.0 * static_cast<double>(n * s.m * s.k);
      t.add_row({s.name, std::to_string(n), fmt::format("{:.3f}", ours * 1e3), fmt::format("{:.2f}", ours / first),
                 fmt::format("{:.1f}", bytes / ours / 1e9), fmt::format("{:.1f}", flops / ours / 1e9),
                 fmt::format("{:.3f}", blas * 1e3), ours <= blas ? "matmul_t" : "sgemm"});
      layer_seconds[0][i] += s.per_layer * ours;
      layer_seconds[1][i] += s.per_layer * blas;
    }
  }
  t.print();

  Table l("One layer's seven products (Wq, Wk, Wv, Wo, Wgate, Wup, Wdown), summed",
          {"n", "matmul_t (ms)", "× n=1", "sgemm (ms)", "× n=1"});
  for (std::size_t i = 0; i < ns.size(); ++i)
    l.add_row({std::to_string(ns[i]), fmt::format("{:.3f}", layer_seconds[0][i] * 1e3),
               fmt::format("{:.2f}", layer_seconds[0][i] / layer_seconds[0][0]), fmt::format("{:.3f}", layer_seconds[1][i] * 1e3),
               fmt::format("{:.2f}", layer_seconds[1][i] / layer_seconds[0][0])});
  l.add_note(fmt::format("ops::matmul_t uses lib's kernel up to n = {} rows (bit-identical rows whatever n) and sgemm above",
                         cpu::kSmallN));
  l.print();
  return 0;
}
