// The shared CPU thread pool (see thread_pool.hpp for why it exists).
//
// One 64-bit word describes the job on offer: the job's generation number in the high 32 bits,
// the chunks not yet claimed in the low 32. A thread claims a chunk by decrementing the word with
// a compare-and-swap, so a claim can only succeed on the job it looked at: a worker that wakes up
// late, after its job finished and a new one began, cannot run a chunk of the wrong job. Chunk
// `remaining - 1` is the one claimed, so chunks go out from the last to the first.
#include "tensor/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#else
static inline void cpu_relax() {}
#endif

namespace infer {
namespace {

// Measured with tests/bench/bench_contention.sh (the top-level README gives the numbers): long
// enough that the gaps between the ~240 regions of a decode step never put a worker to sleep,
// short enough that an idle worker gives its core back within a fraction of a
// millisecond on a loaded machine.
constexpr int kSpinMicroseconds = 1000;

thread_local bool t_inside_job = false;  // true in workers, and in a caller while it runs a job

using Clock = std::chrono::steady_clock;

class ThreadPool {
 public:
  ThreadPool(int threads, void (*on_start)()) : spin_(std::chrono::microseconds(spin_microseconds())), on_start_(on_start) {
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this, on_start] {
        if (on_start != nullptr) on_start();
        worker_loop();
      });
  }

  ~ThreadPool() {
    stop_.store(true, std::memory_order_seq_cst);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  auto on_start() const { return on_start_; }

  // Runs the job on this thread and the workers; false (nothing run) if another thread of the
  // program is using the pool right now.
  bool run(int64_t n, int64_t grain, ChunkBody body, std::span<const int64_t> bounds = {}) {
    std::unique_lock<std::mutex> owner(owner_, std::try_to_lock);
    if (!owner.owns_lock()) return false;
    n_ = n;
    grain_ = grain;
    bounds_ = bounds;
    body_ = body;
    const auto chunks = static_cast<uint32_t>(bounds.empty() ? (n + grain - 1) / grain : bounds.size() - 1);
    done_.store(0, std::memory_order_relaxed);
    ++generation_;
    // Publish: everything written above becomes visible to whoever claims a chunk of this job.
    state_.store((static_cast<uint64_t>(generation_) << 32) | chunks, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      wake_.fetch_add(1, std::memory_order_seq_cst);
      wake_.notify_all();
    }
    t_inside_job = true;
    run_chunks();
    t_inside_job = false;
    // Only chunks that some thread has claimed and is still running are waited for.
    for (int spins = 0; done_.load(std::memory_order_acquire) < chunks; ++spins) {
      if (spins < 4096) cpu_relax();
      else std::this_thread::yield();  // the thread running it may be waiting for a core
    }
    return true;
  }

 private:
  static uint32_t generation_of(uint64_t state) { return static_cast<uint32_t>(state >> 32); }
  static uint32_t remaining_of(uint64_t state) { return static_cast<uint32_t>(state); }

  // Claims and runs chunks of the current job until none is left.
  void run_chunks() {
    uint64_t s = state_.load(std::memory_order_acquire);
    while (remaining_of(s) > 0) {
      if (!state_.compare_exchange_weak(s, s - 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      const int64_t chunk = remaining_of(s) - 1;
      const int64_t begin = bounds_.empty() ? chunk * grain_ : bounds_[chunk];
      const int64_t end = bounds_.empty() ? std::min(n_, begin + grain_) : bounds_[chunk + 1];
      body_.call(body_.closure, begin, end);
      done_.fetch_add(1, std::memory_order_release);
      s = state_.load(std::memory_order_acquire);
    }
  }

  void worker_loop() {
    t_inside_job = true;  // a parallel_for inside a chunk runs serially
    uint32_t seen = 0;    // the generation of the last job this worker looked at
    while (!stop_.load(std::memory_order_acquire)) {
      const uint64_t s = state_.load(std::memory_order_acquire);
      if (generation_of(s) == seen) {
        wait_for_new_job(seen);
        continue;
      }
      seen = generation_of(s);
      run_chunks();
    }
  }

  // Spin for spin_ (the next region of a forward pass usually comes within microseconds), then
  // sleep on a futex until a caller publishes a job and sees a sleeper.
  void wait_for_new_job(uint32_t seen) {
    const auto give_up = Clock::now() + spin_;
    for (int i = 1;; ++i) {
      if (generation_of(state_.load(std::memory_order_acquire)) != seen || stop_.load(std::memory_order_relaxed))
        return;
      cpu_relax();
      if (i % 64 == 0 && Clock::now() > give_up) break;
    }
    // The order matters: announce the sleeper, read the wake counter, then look at the job once
    // more. A caller publishes the job before it reads sleepers_, so either it sees this sleeper
    // and bumps wake_ (and the wait below returns at once), or this thread sees the new job.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t ticket = wake_.load(std::memory_order_seq_cst);
    if (generation_of(state_.load(std::memory_order_seq_cst)) == seen && !stop_.load(std::memory_order_seq_cst))
      wake_.wait(ticket, std::memory_order_seq_cst);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

  const Clock::duration spin_;
  void (*const on_start_)();
  std::vector<std::thread> workers_;
  std::mutex owner_;  // held by the one caller whose job is on offer

  // The job: written by the owner before it publishes state_, read by a thread only after it
  // has claimed a chunk, which the owner waits for before writing the next job.
  int64_t n_ = 0, grain_ = 1;
  std::span<const int64_t> bounds_;  // chunk c is [bounds_[c], bounds_[c + 1]) when not empty
  ChunkBody body_{};
  uint32_t generation_ = 0;

  std::atomic<uint64_t> state_{0};  // generation << 32 | chunks not yet claimed
  std::atomic<uint32_t> done_{0};   // chunks finished
  std::atomic<int> sleepers_{0};
  std::atomic<uint32_t> wake_{0};
  std::atomic<bool> stop_{false};
};

std::mutex g_pool_mutex;
std::unique_ptr<ThreadPool> g_pool;

ThreadPool* pool() {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (!g_pool)  // until set_num_threads (tensor/ops.hpp) says otherwise: all cores
    g_pool = std::make_unique<ThreadPool>(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), nullptr);
  return g_pool.get();
}

void run_serially(int64_t n, int64_t grain, ChunkBody body) {
  for (int64_t begin = 0; begin < n; begin += grain) body.call(body.closure, begin, std::min(n, begin + grain));
}

}  // namespace

int spin_microseconds() {
  static const int us = [] {
    const char* env = std::getenv("INFER_SPIN_US");
    return env != nullptr ? std::max(0, std::atoi(env)) : kSpinMicroseconds;
  }();
  return us;
}

void resize_thread_pool(int threads, void (*on_start)()) {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (g_pool && g_pool->threads() == threads && g_pool->on_start() == on_start) return;
  g_pool.reset();  // joins the old workers
  g_pool = std::make_unique<ThreadPool>(std::max(1, threads), on_start);
}

int thread_pool_size() { return pool()->threads(); }

int64_t balanced_grain(int64_t n, int64_t min_grain) {
  const int64_t chunks = 8 * static_cast<int64_t>(thread_pool_size());
  return std::max<int64_t>(std::max<int64_t>(1, min_grain), (n + chunks - 1) / chunks);
}

// One thread's share of the cells: the next cell from the front (its owner's) and one past the
// last cell not yet taken from the back (by a thread whose own share is done), in one word so
// that one compare-and-swap claims a cell from either end.
struct alignas(64) Share {  // a cache line each: the owners update theirs without disturbing the others
  std::atomic<uint64_t> front_back;  // front << 32 | back, in cells
};

void parallel_for_shares_chunks(int64_t n, int64_t align, int64_t cell, ChunkBody body) {
  if (n <= 0) return;
  ThreadPool* p = pool();
  const int64_t threads = p->threads();
  align = std::max<int64_t>(1, align);
  cell = (std::max<int64_t>(1, cell) + align - 1) / align * align;
  const int64_t cells = (n + cell - 1) / cell;
  if (cells >= (int64_t{1} << 32)) return parallel_for_chunks(n, cell, body);  // cell numbers fit in 32 bits
  if (cells == 1 || t_inside_job || threads == 1) return run_serially(n, n, body);
  thread_local std::vector<Share> shares;  // the caller's; a new vector, as atomics cannot be moved
  if (std::ssize(shares) < threads) shares = std::vector<Share>(threads);
  for (int64_t s = 0; s < threads; ++s)
    shares[s].front_back.store(static_cast<uint64_t>(cells * s / threads) << 32 | static_cast<uint64_t>(cells * (s + 1) / threads),
                               std::memory_order_relaxed);
  struct Job {
    Share* shares;
    int64_t threads, n, cell;
    ChunkBody body;
    // Claims one cell of share s, from the front (the owner) or the back; false if none is left.
    bool run_one(int64_t s, bool from_front) const {
      std::atomic<uint64_t>& word = shares[s].front_back;
      uint64_t v = word.load(std::memory_order_acquire);
      for (;;) {
        const uint64_t front = v >> 32, back = v & 0xffffffffu;
        if (front >= back) return false;
        const uint64_t taken = from_front ? front : back - 1;
        const uint64_t next = from_front ? (front + 1) << 32 | back : front << 32 | (back - 1);
        if (word.compare_exchange_weak(v, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
          const int64_t begin = static_cast<int64_t>(taken) * cell;
          body.call(body.closure, begin, std::min(n, begin + cell));
          return true;
        }
      }
    }
  };
  const Job job{shares.data(), threads, n, cell, body};
  // The pool's chunk s is "the owner of share s": its own cells first, then the others' from the back.
  const ChunkBody owner{[](const void* j, int64_t s, int64_t) {
                          const Job& job = *static_cast<const Job*>(j);
                          while (job.run_one(s, true)) {}
                          for (int64_t other = 1; other < job.threads; ++other)
                            while (job.run_one((s + other) % job.threads, false)) {}
                        },
                        &job};
  if (!p->run(threads, 1, owner)) run_serially(n, n, body);
}

void parallel_for_chunks(int64_t n, int64_t grain, ChunkBody body) {
  if (n <= 0) return;
  grain = std::max<int64_t>({1, grain, n / (int64_t{1} << 31) + 1});  // the chunk count fits in 32 bits
  if (n <= grain || t_inside_job) return run_serially(n, grain, body);
  ThreadPool* p = pool();
  if (p->threads() == 1 || !p->run(n, grain, body)) run_serially(n, grain, body);
}

}  // namespace infer
