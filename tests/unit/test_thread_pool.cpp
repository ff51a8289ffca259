// lib's thread pool: every item runs exactly once, whoever runs it; nested and concurrent calls
// are safe; the sgemm split over the pool gives OpenBLAS's bits exactly.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <cmath>
#include <map>
#include <array>
#include <random>
#include <thread>
#include <vector>

#include <cblas.h>
#include "catch_compat.hpp"

#include "tensor/ops.hpp"
#include "tensor/ops_cpu.hpp"
#include "tensor/thread_pool.hpp"

using namespace infer;

namespace {
// Chunks handed out empty (first >= last), counted by visits() and checked by the test cases.
std::atomic<int> empty_chunks{0};

// Runs parallel_for over n items and returns how often each item was visited.
std::vector<int> visits(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> count(static_cast<std::size_t>(n));
  parallel_for(n, grain, [&](int64_t first, int64_t last) {
    if (first >= last) empty_chunks.fetch_add(1);  // not REQUIRE: Catch2 (v3 aborts) asserts
    for (int64_t i = first; i < last; ++i) count[i].fetch_add(1);  // on the test's thread only
  });
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}
}  // namespace

TEST_CASE("parallel_for runs every item exactly once", "[thread_pool]") {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 4097})
      for (int64_t grain : {1, 3, 64, 5000}) {
        INFO(threads << " threads, n = " << n << ", grain " << grain);
        REQUIRE(visits(n, grain) == std::vector<int>(static_cast<std::size_t>(n), 1));
      }
  }
  set_num_threads(0);
  REQUIRE(visits(0, 1).empty());
  REQUIRE(empty_chunks.load() == 0);
}

TEST_CASE("parallel_for_shares runs every item once, each thread streaming its share front to back", "[thread_pool]") {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (int64_t n : {1, 5, 16, 17, 192, 576, 1001, 49152})
      for (int64_t align : {1, 2, 3}) {
        INFO(threads << " threads, n = " << n << ", align " << align);
        const int64_t cell = (16 + align - 1) / align * align;  // 16 items, rounded up to whole multiples
        std::vector<std::atomic<int>> count(static_cast<std::size_t>(n));
        std::mutex mutex;
        std::map<std::thread::id, std::vector<std::pair<int64_t, int64_t>>> calls;  // each thread's, in order
        parallel_for_shares(n, align, 16, [&](int64_t first, int64_t last) {
          for (int64_t i = first; i < last; ++i) count[i].fetch_add(1);
          std::lock_guard<std::mutex> lock(mutex);
          calls[std::this_thread::get_id()].emplace_back(first, last);
        });
        for (auto& c : count) REQUIRE(c.load() == 1);
        std::size_t total = 0;
        for (const auto& [id, list] : calls) total += list.size();
        if (threads == 1 || n <= cell) {  // nothing to split: one call over everything
          REQUIRE(total == 1);
          continue;
        }
        for (const auto& [id, list] : calls)
          for (const auto& [first, last] : list) {  // every call is one cell
            CHECK(first % cell == 0);
            CHECK(last == std::min(n, first + cell));
          }
        if (threads != 2) continue;
        // With two threads each one's calls are a run of cells going up from the start of its
        // share (cell 0 or the middle cell), then a run going down (cells taken from the back of
        // the other's share).
        const int64_t cells = (n + cell - 1) / cell;
        for (const auto& [id, list] : calls) {
          CHECK((list.front().first == 0 || list.front().first == cells / 2 * cell));
          std::size_t c = 1;
          while (c < list.size() && list[c].first == list[c - 1].second) ++c;
          for (++c; c < list.size(); ++c) CHECK(list[c].second == list[c - 1].first);
        }
      }
  }
  set_num_threads(0);
}

TEST_CASE("many short jobs in a row never lose or repeat a chunk", "[thread_pool]") {
  // Back-to-back jobs are what a decode step is; a worker that wakes late must not run a chunk
  // of a job that has already finished.
  set_num_threads(0);
  std::vector<int64_t> sums(20000);
  for (std::size_t job = 0; job < sums.size(); ++job) {
    std::atomic<int64_t> sum{0};
    parallel_for(37, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) sum += i + static_cast<int64_t>(job);
    });
    sums[job] = sum.load();
  }
  for (std::size_t job = 0; job < sums.size(); ++job) REQUIRE(sums[job] == 36 * 37 / 2 + 37 * static_cast<int64_t>(job));
}

TEST_CASE("a parallel_for inside a chunk, or from a second thread, still covers every item", "[thread_pool]") {
  set_num_threads(0);
  std::vector<std::atomic<int>> count(100 * 50);
  parallel_for(100, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      parallel_for(50, 4, [&](int64_t a, int64_t b) {  // runs serially on this thread
        for (int64_t j = a; j < b; ++j) count[i * 50 + j].fetch_add(1);
      });
  });
  for (auto& c : count) REQUIRE(c.load() == 1);

  // Two threads of the program calling at once: one gets the pool, the other runs serially.
  std::vector<int> a, b;
  std::thread other([&] {
    for (int r = 0; r < 200; ++r) a = visits(999, 7);
  });
  for (int r = 0; r < 200; ++r) b = visits(999, 7);
  other.join();
  REQUIRE(a == std::vector<int>(999, 1));
  REQUIRE(b == std::vector<int>(999, 1));
  REQUIRE(empty_chunks.load() == 0);
}

TEST_CASE("sgemm split over the pool: the same bits on any thread count, OpenBLAS's values", "[thread_pool][ops]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (auto [M, N, K] : {std::array{300, 70, 129}, std::array{40, 500, 64}, std::array{520, 576, 576}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        std::vector<float> A(static_cast<std::size_t>(M) * K), B(static_cast<std::size_t>(K) * N);
        for (float& v : A) v = normal(rng);
        for (float& v : B) v = normal(rng);
        std::vector<float> whole(static_cast<std::size_t>(M) * N, 1.0f);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 0.5f,
                    A.data(), ta ? M : K, B.data(), tb ? K : N, 2.0f, whole.data(), N);  // one call, one thread
        // The tolerance scales with Σ|terms| (0.5·|A|·|B| + 2·1), not with |result|: where the
        // terms cancel, OpenBLAS's kernels (e.g. Zen's on an AVX2 machine) differ from a split
        // product by more than 1e-5 of the small result, as any two summation orders may.
        std::vector<float> absA(A.size()), absB(B.size()), magnitude(whole.size(), 1.0f);
        for (std::size_t i = 0; i < A.size(); ++i) absA[i] = std::abs(A[i]);
        for (std::size_t i = 0; i < B.size(); ++i) absB[i] = std::abs(B[i]);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 0.5f,
                    absA.data(), ta ? M : K, absB.data(), tb ? K : N, 2.0f, magnitude.data(), N);
        std::vector<float> first;
        for (int threads : {1, 2, 3}) {
          set_num_threads(threads);
          std::vector<float> split(static_cast<std::size_t>(M) * N, 1.0f);
          cpu::sgemm(ta, tb, M, N, K, 0.5f, A.data(), B.data(), 2.0f, split.data());
          INFO("M " << M << " N " << N << " K " << K << " transposed " << ta << tb << ", " << threads << " threads");
          if (first.empty()) first = split;
          REQUIRE(split == first);
          for (std::size_t i = 0; i < split.size(); ++i)
            REQUIRE(std::abs(split[i] - whole[i]) <= 1e-5f * magnitude[i]);
        }
      }
  }
  set_num_threads(0);
}
