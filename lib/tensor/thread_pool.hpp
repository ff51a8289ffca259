// The threads every CPU kernel shares: parallel_for(n, grain, body) runs body(begin, end) over
// [0, n) in chunks of `grain` items, on the calling thread and the pool's workers.
//
// Why our own pool and not `#pragma omp parallel for`: a decode step opens ~240 parallel regions
// (one per matrix product, one per attention), and an OpenMP region ends in a barrier that waits
// for *every* thread of the team. On a quiet machine that is cheap. On a busy one (a laptop, a
// shared CI runner) a thread is often waiting for a core, and each of the 240 barriers waits for
// it — a time slice each, which made the test suite 40× slower under load. Here the chunks are
// handed out by an atomic counter and the caller works too: a thread that has not started yet
// does not hold anyone up, because by the time it wakes the work is done and the caller has only
// waited for chunks actually in progress. A loaded machine then slows a run by about the share of
// the cores it takes, not by a time slice per region.
//
// Between jobs a worker spins for a bounded time (kSpinMicroseconds, chosen by measuring a quiet
// and a loaded machine: tests/bench/bench_contention.sh) so that back-to-back regions in a forward
// pass do not pay a wake-up, then sleeps on a futex so that an idle program costs nothing.
//
// Chunks are fixed by (n, grain) alone (or, in shares, by n and the cell size), never by which
// thread runs them, so results do not depend on scheduling. A parallel_for called from inside a chunk, or while another thread of the program
// owns the pool, runs serially on its caller.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace infer {

// The type-erased body: a function pointer and the caller's closure.
struct ChunkBody {
  void (*call)(const void* closure, int64_t begin, int64_t end);
  const void* closure;
};

template <typename F>
ChunkBody chunk_body(const F& body) {
  static_assert(std::is_invocable_v<const F&, int64_t, int64_t>, "body(begin, end)");
  return ChunkBody{[](const void* f, int64_t b, int64_t e) { (*static_cast<const F*>(f))(b, e); }, &body};
}

void parallel_for_chunks(int64_t n, int64_t grain, ChunkBody body);

template <typename F>
void parallel_for(int64_t n, int64_t grain, const F& body) {
  parallel_for_chunks(n, grain, chunk_body(body));
}

// parallel_for for the weight products of a decode step (~211 regions in a row, each a stream
// of rows from memory): [0, n) is cut into cells of `cell` items (rounded up to a multiple of
// `align`), and each thread gets an equal share of whole cells. A thread runs its own share
// front to back, one cell at a time, so its reads are one long ascending stream that its
// prefetches run ahead of; once its share is done it takes cells from the back of another
// thread's share, so the first to finish waits only for a cell in progress. The cells depend on
// n, align and cell alone; which thread runs a cell depends on timing. Run serially (one thread,
// one cell, or a call from inside a chunk) it is one call over all of [0, n).
void parallel_for_shares_chunks(int64_t n, int64_t align, int64_t cell, ChunkBody body);

template <typename F>
void parallel_for_shares(int64_t n, int64_t align, int64_t cell, const F& body) {
  parallel_for_shares_chunks(n, align, cell, chunk_body(body));
}

// Threads in the pool, the caller included (set by set_num_threads in ops.hpp). Each new worker
// first calls on_start, if given: per-thread settings of the libraries the chunks call.
void resize_thread_pool(int threads, void (*on_start)() = nullptr);
int thread_pool_size();

// A chunk size for n items: about eight chunks per thread, so that a thread that starts late or
// runs slower leaves its share to the others, and never fewer than min_grain items per chunk, so
// that claiming a chunk stays cheap beside running it.
int64_t balanced_grain(int64_t n, int64_t min_grain);

// How long an idle worker spins before sleeping, in microseconds (default kSpinMicroseconds; the
// environment variable INFER_SPIN_US overrides it, for the contention benchmark).
int spin_microseconds();

}  // namespace infer
