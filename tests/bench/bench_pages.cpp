// bench_pages — does a decode step stream its weights faster from 2 MiB pages than from 4 KiB pages?
//
// lib's allocator (tensor/memory.cpp) starts every buffer of 2 MiB or more on a 2 MiB boundary
// and offers the pages inside it to Linux as transparent huge pages; the loader keeps a layer's
// seven fp32 matrices in one such buffer, and chapter 06 keeps a model's packed matrices in one.
// A decode step reads every weight once, so on 4 KiB pages it crosses ~130 000 pages of the
// default model (each an address translation to look up), on 2 MiB pages ~270.
//
// This benchmark builds the default model's layers twice with the same (random) values, in the
// engine's layout, allocated by lib's allocator: the first as it comes, the second with
// madvise(MADV_NOHUGEPAGE) before its first touch, so that it stays on 4 KiB pages. It then times
// a decode step's products (one row of x through every matrix of every layer) on both copies in
// turn, round after round, with a plain read of 512 MiB, so that a machine whose speed drifts
// slows all three alike. fp32 runs lib's small-n kernel, Q8_0 / Q4_1 / NF4 chapter 06's kernels
// with int8 activations. It prints how many bytes of each copy Linux put on huge pages
// (/proc/self/smaps_rollup): where it granted none (transparent_hugepage set to "never"), both
// columns time the same thing.
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "app/cli.hpp"
#include "layer_shapes.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "packed_kernels.hpp"
#include "quant_scheme.hpp"
#include "tensor/ops.hpp"
#include "tensor/small_matmul.hpp"
#include "tensor/tensor.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

using bench::kFfn;
using bench::kHidden;
using bench::kLayer;
using bench::MatrixShape;

// AnonHugePages of this process, in bytes (0 where the file or the line is missing).
int64_t anon_huge_page_bytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("AnonHugePages:", 0) == 0) return std::stoll(line.substr(14)) * 1024;  // "… kB"
  return 0;
}

// One copy of the model's matrices: one buffer per layer (fp32) or one for the model (packed),
// each matrix at a 64-byte-aligned offset, as the engine lays them out.
struct Weights {
  std::vector<std::shared_ptr<Storage>> buffers;
  std::vector<const uint8_t*> matrices;  // layer after layer, kLayer's order
  int64_t bytes = 0;                     // the weights a step reads
  int64_t huge_bytes = 0;                // of the buffers, on huge pages
};

// `fill(i, dst)` writes matrix i's bytes; `size(i)` is its byte count. `small_pages`: keep the
// buffers on 4 KiB pages (advised before anything touches them).
Weights build(int layers, bool one_buffer, bool small_pages, const std::function<std::size_t(int)>& size,
              const std::function<void(int, uint8_t*)>& fill) {
  Weights w;
  const int per_buffer = one_buffer ? layers * 7 : 7, buffers = one_buffer ? 1 : layers;
  const int64_t huge_before = anon_huge_page_bytes();
  for (int b = 0; b < buffers; ++b) {
    std::vector<std::size_t> offsets;
    std::size_t total = 0;
    for (int j = 0; j < per_buffer; ++j) {
      offsets.push_back(total);
      total += (size(b * per_buffer + j) + 63) / 64 * 64;
    }
    auto buffer = std::make_shared<Storage>(Device::cpu(), total);
#if defined(__linux__) && defined(MADV_NOHUGEPAGE)
    if (small_pages) {  // the whole pages inside the buffer, as memory.cpp advises the opposite
      const auto begin = (reinterpret_cast<uintptr_t>(buffer->data()) + 4095) / 4096 * 4096;
      const auto end = (reinterpret_cast<uintptr_t>(buffer->data()) + total) / 4096 * 4096;
      if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE);
    }
#endif
    for (int j = 0; j < per_buffer; ++j) {
      auto* dst = static_cast<uint8_t*>(buffer->data()) + offsets[static_cast<std::size_t>(j)];
      fill(b * per_buffer + j, dst);
      w.matrices.push_back(dst);
      w.bytes += static_cast<int64_t>(size(b * per_buffer + j));
    }
    w.buffers.push_back(std::move(buffer));
  }
  w.huge_bytes = anon_huge_page_bytes() - huge_before;
  return w;
}

std::string verdict_note(double ratio) {
  if (ratio < 0.98) return "faster on 2 MiB pages";
  if (ratio > 1.02) return "slower on 2 MiB pages";
  return "the same within 2%";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: a decode step's weight streaming from 2 MiB pages against 4 KiB pages, same weights, in turn"};
  int threads = 2, rounds = 15, layers = 30;
  app.add_option("-t,--threads", threads, "threads")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--rounds", rounds, "rounds: each copy timed once per round (median reported)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--layers", layers, "layers of SmolLM2-135M's shapes (the model has 30)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  set_num_threads(threads);
  const int count = layers * 7;
  auto shape = [](int i) { return kLayer[i % 7]; };

  // The same random values for every format and both copies.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<std::vector<float>> values(7);
  for (int j = 0; j < 7; ++j) {
    values[static_cast<std::size_t>(j)].resize(static_cast<std::size_t>(kLayer[j].rows * kLayer[j].cols));
    for (float& v : values[static_cast<std::size_t>(j)]) v = normal(rng);
  }
  std::vector<float> x(kFfn), y(kFfn);
  for (float& v : x) v = normal(rng);

  const ReadBandwidthProbe probe;  // read in turn with the two copies: "of read bandwidth" divides figures of the same minutes
  Table t(fmt::format("A decode step's products (x: 1 row) over {} layers, {} threads, median of {} rounds in turn",
                      layers, num_threads(), rounds),
          {"weights", "MB per step", "on huge pages (MB)", "2 MiB pages (ms)", "4 KiB pages (ms)", "2 MiB ÷ 4 KiB", "verdict",
           "GB/s (2 MiB)", "read bandwidth (GB/s)", "of read bandwidth"});

  struct Case {
    std::string name;
    std::optional<PackedFormat> format;  // none: fp32
    bool packed() const { return format.has_value(); }
  };
  const Case cases[] = {{"fp32 (a buffer per layer)", std::nullopt},
                        {"Q8_0 · int8 x (one buffer)", PackedFormat::q8_0},
                        {"Q4_1 · int8 x (one buffer)", PackedFormat::q4_1},
                        {"NF4 · int8 x (one buffer)", PackedFormat::nf4}};
  for (const Case& c : cases) {
    std::vector<PackedMatrix> packed;  // one per matrix of a layer
    if (c.packed())
      for (int j = 0; j < 7; ++j)
        packed.push_back(scheme_for(*c.format)->quantize(values[static_cast<std::size_t>(j)], kLayer[j].rows, kLayer[j].cols));
    auto size = [&](int i) {
      const MatrixShape s = shape(i);
      return c.packed() ? packed[static_cast<std::size_t>(i % 7)].bytes.size() : static_cast<std::size_t>(s.rows * s.cols) * 4;
    };
    auto fill = [&](int i, uint8_t* dst) {
      if (c.packed())
        std::memcpy(dst, packed[static_cast<std::size_t>(i % 7)].bytes.data(), size(i));
      else
        std::memcpy(dst, values[static_cast<std::size_t>(i % 7)].data(), size(i));
    };
    const Weights huge = build(layers, c.packed(), false, size, fill);
    const Weights small = build(layers, c.packed(), true, size, fill);

    auto step = [&](const Weights& w) {
      return [&w, &c, &x, &y, &shape, count] {
        for (int i = 0; i < count; ++i) {
          const MatrixShape s = shape(i);
          if (c.packed())
            packed_matmul_cpu(*c.format, w.matrices[static_cast<std::size_t>(i)], s.rows, s.cols, x.data(), 1, y.data(),
                              Activations::int8);
          else
            cpu::matmul_small_n(1, static_cast<int>(s.rows), static_cast<int>(s.cols),
                                reinterpret_cast<const float*>(w.matrices[static_cast<std::size_t>(i)]), x.data(), y.data());
        }
      };
    };
    const std::function<void()> work[] = {step(huge), step(small), [&probe] { probe.read_once(); }};
    const std::vector<double> s = medians_in_turn(rounds, work);
    const double ratio = s[0] / s[1], bandwidth = probe.result(s[2]).bytes_per_second;
    t.add_row({c.name, fmt::format("{:.1f}", static_cast<double>(huge.bytes) / 1e6),
               fmt::format("{:.0f} / {:.0f}", static_cast<double>(huge.huge_bytes) / 1e6, static_cast<double>(small.huge_bytes) / 1e6),
               fmt::format("{:.2f}", s[0] * 1e3), fmt::format("{:.2f}", s[1] * 1e3), fmt::format("{:.3f}", ratio),
               verdict_note(ratio), fmt::format("{:.1f}", static_cast<double>(huge.bytes) / s[0] / 1e9),
               fmt::format("{:.1f}", bandwidth / 1e9), fmt::format("{:.0f}%", 100.0 * static_cast<double>(huge.bytes) / s[0] / bandwidth)});
  }
  t.add_note("on huge pages: bytes of the 2 MiB-page copy / of the 4 KiB-page copy that Linux put on huge pages "
             "(AnonHugePages); a buffer's partial pages at either end stay on 4 KiB pages.");
  t.add_note(fmt::format("x has {} or {} values; the products' outputs are discarded: the weights are what streams.", kHidden, kFfn));
  t.print();
  return 0;
}
