// Chapter 05's layer, part 1 (paging), file 4: the paged engine — chapter 04's step over paged
// caches.
//
// PagedEngine is a StepEngine like chapter 04's BatchDecoder: one Llama::forward_batch per step over
// every sequence's chunk, one Sampler per request (seed + id). What changes is memory:
//
//   admit     the request's tokens (its prompt; after a preemption, prompt + what it generated)
//             become its prefill chunk, and the pool gives it the blocks they need
//   step      every sequence reserves the blocks its new positions need, and the forward writes
//             and reads keys/values through the block tables
//   release   the sequence's blocks go back to the pool
//
// The scheduler's questions (can_admit, reserve, fits_alone) are answered in blocks.
//
// Part 2 (sharing/), declared at the end of the class and defined in sharing/: admit takes the
// request's cached prefix from the prefix cache and feeds only the uncached suffix, every step
// enters the blocks that became full into the prefix cache (prefix_reuse.cpp), and fork starts
// n samples of one prompt on its shared blocks (fork.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "block_pool.hpp"
#include "model/llama.hpp"
#include "paged_kv_cache.hpp"
#include "prefix_cache.hpp"  // part 2, sharing/
#include "04_batching/batch_decode.hpp"
#include "04_batching/request.hpp"
#include "sampling/sampler.hpp"

namespace infer {

// A StepEngine whose sequences draw memory from one finite pool: the questions a scheduler that
// admits by memory asks (part 1b, admission/paged_scheduler.hpp), here answered in blocks.
class MemoryBoundEngine : public StepEngine {
 public:
  // Could `r` be admitted now (its prefill and this step's growth of the running sequences)?
  virtual bool can_admit(const Request& r) const = 0;
  // Takes the memory for the next step of admitted request `r`; false when the pool is out.
  virtual bool reserve(const Request& r) = 0;
  // Would `r`, alone in an empty pool, fit until its last token?
  virtual bool fits_alone(const Request& r) const = 0;
};

struct PagedEngineOptions {
  int block_size = kDefaultBlockSize;  // positions per block
  std::size_t budget_bytes = std::size_t{256} << 20;  // the pool: K/V memory of every sequence together
  bool prefix_caching = true;          // part 2: share cached full blocks between requests
  PagedRead read = PagedRead::in_place;
};

// What the engine did, counted as it ran.
struct PagedStats {
  int64_t prefill_tokens = 0;  // prompt (and recomputed) tokens fed through the model at admission
  int64_t cached_tokens = 0;   // part 2: prompt positions taken from the prefix cache instead
  int64_t forks = 0;           // part 2: samples forked from a prompt
  int64_t shared_at_fork = 0;  // part 2: blocks they shared when forked
  int64_t copies = 0;          // part 2: copy-on-write block copies
  int64_t admissions = 0;      // including readmissions after preemption
};

class PagedEngine : public MemoryBoundEngine {
 public:
  PagedEngine(Llama& model, SamplingParams sampling, const PagedEngineOptions& options);
  ~PagedEngine() override;

  // StepEngine. admit() throws std::runtime_error when the pool lacks the blocks (ask
  // can_admit first); step() throws when a sequence cannot get its blocks (reserve first).
  void admit(const Request& r, int new_tokens) override;
  std::vector<int32_t> step(std::span<Request* const> batch) override;
  void release(const Request& r) override;

  // MemoryBoundEngine, in blocks.
  bool can_admit(const Request& r) const override;
  bool reserve(const Request& r) override;
  bool fits_alone(const Request& r) const override;

  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  PagedStats stats() const;
  int64_t last_step_tokens() const { return last_step_tokens_; }
  std::size_t sequences() const { return sequences_.size(); }
  // Positions the live sequences have written, each sequence counted in full (what contiguous
  // caches holding exactly these sequences would need).
  int64_t stored_positions() const;
  // The block tables of the live sequences (for check_tables).
  std::vector<const BlockTable*> tables() const;

  // ==== Part 2: sharing (prefix reuse, fork, copy-on-write) ====
  // Defined in sharing/fork.cpp (fork) and sharing/prefix_reuse.cpp (lookup, index_full_blocks).
  // `child` (same prompt, not admitted) becomes a sample of `parent`, whose prompt has been
  // prefilled: it shares the blocks of the prompt's first P−1 positions and feeds the last
  // prompt token itself in its first step.
  void fork(const Request& parent, const Request& child);
  const PrefixCache& prefix_cache() const { return prefix_; }

 private:
  struct Sequence {
    std::unique_ptr<PagedKvCache> cache;
    Sampler sampler;
    std::vector<int32_t> tokens;   // whose keys/values are stored or fed next: prompt, then generated
    std::vector<int32_t> feed;     // the next step's chunk
    std::vector<uint64_t> hashes;  // part 2: chained hash of each full block entered into the prefix cache
  };
  Sequence& sequence(const Request& r);
  const Sequence& sequence(const Request& r) const;
  Sampler sampler_for(const Request& r) const;
  // Part 2 (sharing/prefix_reuse.cpp): the cached prefix of `tokens`; the blocks that became
  // full, into the prefix cache.
  PrefixCache::Hit lookup(std::span<const int32_t> tokens) const;
  void index_full_blocks(Sequence& s);

  Llama& model_;
  SamplingParams sampling_;
  PagedEngineOptions options_;
  BlockPool pool_;       // declared before the sequences: their caches release into it
  PrefixCache prefix_;   // part 2
  std::unordered_map<int, Sequence> sequences_;  // by request id
  PagedStats stats_;
  int64_t copies_of_released_ = 0;  // copy-on-write copies made by caches already gone
  int64_t last_step_tokens_ = 0;
};

// Whether request r could ever run on `pool`: at its longest (prompt + max_new_tokens − 1
// positions; the last token is never fed back) it needs no more blocks than the whole pool has.
// The scheduler refuses a request that fails this instead of queueing it forever. (Shared with
// the tables' and tests' model-free engines, which answer the scheduler's questions the same way.)
bool fits_in_pool(const BlockPool& pool, const Request& r);

}  // namespace infer
