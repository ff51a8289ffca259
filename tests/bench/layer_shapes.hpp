// SmolLM2-135M's seven weight matrices of one layer, [rows = outputs, cols = inputs], in the
// loader's order (q, k, v, o, gate, up, down): the shapes the benchmarks time kernels on when
// they build layers of their own (bench_pages, bench_quant's kernel in cache).
#pragma once

#include <cstdint>

namespace infer::bench {

struct MatrixShape {
  int64_t rows, cols;
};
constexpr MatrixShape kLayer[] = {{576, 576}, {192, 576}, {192, 576}, {576, 576}, {1536, 576}, {1536, 576}, {576, 1536}};
constexpr int64_t kHidden = 576, kFfn = 1536;

}  // namespace infer::bench
