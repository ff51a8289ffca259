// Chapter 04's layer, file 2: one step for many sequences.
//
// A decode step of one sequence multiplies one token's vector by every weight matrix: it streams
// all the weights from memory to do 2 FLOPs per weight, and the arithmetic units wait on memory.
// Put B sequences in the same step and the same weights, read once, serve B tokens:
//
//   step over B sequences     ids      = the new tokens of every sequence, concatenated
//                             x[N, d]  → one matrix-matrix product per weight (N = Σ tokens)
//                             attention: split back per sequence, each against its own cache
//
// Sequences in one step need not be alike. A request that has just been admitted feeds its whole
// prompt (prefill, P tokens), one that is running feeds its last token (decode, 1 token); both
// go into the same products, without padding the prompts to a common length — "selective
// batching": concatenate for the matrix products, split for attention. Llama::forward_batch
// works this way (lib/model/llama_batch.cpp, the same layers as the single-sequence forward);
// this file builds the chunks, keeps each sequence's chapter-03 GroupedKvCache and sampler, and
// picks every row's next token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "03_gqa/grouped_kv_cache.hpp"
#include "model/llama.hpp"
#include "request.hpp"
#include "sampling/sampler.hpp"

namespace infer {

// What a batching policy (static batches, the continuous Scheduler) asks of a step. The real
// engine runs the model; the simulation's engine only charges time on a VirtualClock; the unit
// tests' engine returns made-up tokens. The policies cannot tell them apart.
class StepEngine {
 public:
  virtual ~StepEngine() = default;
  // `r` takes a slot with room for its prompt and `new_tokens` generated tokens.
  virtual void admit(const Request& r, int new_tokens) = 0;
  // One step over `batch` (admitted requests, in slot order): one that has run no step yet
  // feeds its whole prompt, every other the token it produced last. Returns the next token of
  // each, in the same order. Requests are not modified: the policy decides what to keep.
  virtual std::vector<int32_t> step(std::span<Request* const> batch) = 0;
  // `r` leaves its slot; its memory is freed.
  virtual void release(const Request& r) = 0;
};

// What one slot did in a step: who held it, and whether it fed a prompt, decoded one token, was
// a padding row (static batching: a finished member still computed) or stood empty.
struct SlotUse {
  enum Kind : uint8_t { idle, prefill, decode, padding };
  int request = -1;  // id; −1 when idle
  Kind kind = idle;
};

// What one step of a policy did, for the tables and the tests.
struct StepLog {
  double start = 0, end = 0;  // clock time
  int batch = 0;              // requests in the step (static batching: finished ones too)
  int admitted = 0;           // of which prefilled their prompt in this step
  int retired = 0;            // finished and left their slot after it
  int64_t tokens_fed = 0;     // prompts of the admitted + one token per other request
  int useful = 0;             // generated tokens a request kept (static batching: not the padding)
  std::vector<SlotUse> slots;  // one per slot (static batching: per row of the batch size)
};

// One forward over the chunks, then each chunk's next token drawn from its last row of logits
// by its own sampler (samplers[i] for chunks[i]). The step of every engine that runs the model.
std::vector<int32_t> forward_and_sample(Llama& model, std::span<const SequenceChunk> chunks,
                                        std::span<Sampler* const> samplers);

// The real thing: every step is one Llama::forward_batch over the batch's chunks.
class BatchDecoder : public StepEngine {
 public:
  // Each request gets its own Sampler seeded with sampling.seed + id, so its draws do not depend
  // on which requests share its steps (greedy: no draws at all).
  BatchDecoder(Llama& model, SamplingParams sampling);

  void admit(const Request& r, int new_tokens) override;
  std::vector<int32_t> step(std::span<Request* const> batch) override;
  void release(const Request& r) override;

  int64_t last_step_tokens() const { return last_step_tokens_; }  // tokens fed by the last step
  std::size_t cache_bytes() const;                                 // K/V caches now allocated

 private:
  struct Sequence {
    std::unique_ptr<GroupedKvCache> cache;
    Sampler sampler;
    int64_t pos = 0;             // positions already in the cache
    std::vector<int32_t> feed;   // what the next step feeds: the prompt, then one token
  };
  Llama& model_;
  SamplingParams sampling_;
  std::unordered_map<int, Sequence> sequences_;  // by request id
  int64_t last_step_tokens_ = 0;
};

// The batch sweep: one decode step of B sequences together, each with `cached` positions in its
// own GroupedKvCache, timed for every B in `batches` (ascending) as the median of `repeats` runs
// after a warm-up; the B's take turns, one step each per round. The caches are prefilled once
// from `text` (repeated and shifted per sequence), 8 sequences per forward; each timed run
// writes the same position again. `tick` is called after every prefill group and every round
// (a progress bar: groups + repeats + 1).
struct DecodeTiming {
  int batch = 0;
  double seconds = 0;  // median step time
  double throughput() const { return batch / seconds; }
};
inline constexpr int kSweepPrefillGroup = 8;
std::vector<DecodeTiming> time_batched_decode(Llama& model, std::span<const int32_t> text, const std::vector<int>& batches,
                                              int64_t cached, int repeats, const std::function<void()>& tick = {});

}  // namespace infer
