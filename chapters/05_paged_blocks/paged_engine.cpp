#include "paged_engine.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

PagedEngine::PagedEngine(Llama& model, SamplingParams sampling, const PagedEngineOptions& options)
    : model_(model),
      sampling_(sampling),
      options_(options),
      pool_(model.config(), options.block_size, options.budget_bytes, model.device()),
      prefix_(options.block_size) {
  // Part 2: a free block the prefix cache still indexes is about to be overwritten: forget it first.
  pool_.set_reuse_listener([this](int block) { prefix_.forget(block); });
}

PagedEngine::~PagedEngine() {
  sequences_.clear();  // their caches release into the pool, which outlives them
  pool_.set_reuse_listener({});
}

PagedEngine::Sequence& PagedEngine::sequence(const Request& r) {
  const auto it = sequences_.find(r.id);
  if (it == sequences_.end()) throw std::logic_error(fmt::format("request {} has no sequence in the engine", r.id));
  return it->second;
}

const PagedEngine::Sequence& PagedEngine::sequence(const Request& r) const {
  return const_cast<PagedEngine*>(this)->sequence(r);
}

Sampler PagedEngine::sampler_for(const Request& r) const {
  SamplingParams own = sampling_;
  own.seed = sampling_.seed + static_cast<uint64_t>(r.id);  // as chapter 04: draws independent of the batch
  return Sampler(own);
}

namespace {
// What a (re)admitted request feeds: its prompt, then every token it generated before a
// preemption — all of them; the last one's logits give its next token.
std::vector<int32_t> tokens_to_restore(const Request& r) {
  std::vector<int32_t> all = r.prompt;
  all.insert(all.end(), r.tokens.begin(), r.tokens.end());
  return all;
}
}  // namespace

bool PagedEngine::can_admit(const Request& r) const {
  const std::vector<int32_t> all = tokens_to_restore(r);
  const PrefixCache::Hit hit = lookup(all);
  const int64_t need = pool_.blocks_for(std::ssize(all)) - hit.positions();
  // Cached blocks that sit on the free list stop being free once adopted.
  const auto reclaimed = std::count_if(hit.blocks.begin(), hit.blocks.end(), [&](int b) { return pool_.is_free(b); });
  // Leave the running sequences the blocks their next step needs, so that admitting r does not
  // preempt one of them right away.
  int64_t growth = 0;
  for (const auto& [id, s] : sequences_) growth += s.cache->blocks_needed(std::ssize(s.feed));
  return need + growth <= pool_.free_blocks() - reclaimed;
}

bool fits_in_pool(const BlockPool& pool, const Request& r) {
  return pool.blocks_for(std::ssize(r.prompt) + r.max_new_tokens - 1) <= pool.num_blocks();
}

bool PagedEngine::fits_alone(const Request& r) const { return fits_in_pool(pool_, r); }

bool PagedEngine::reserve(const Request& r) {
  Sequence& s = sequence(r);
  return s.cache->reserve(std::ssize(s.feed));
}

void PagedEngine::admit(const Request& r, int new_tokens) {
  if (r.prompt.empty()) throw std::invalid_argument(fmt::format("request {}: empty prompt", r.id));
  if (sequences_.count(r.id) != 0) throw std::logic_error(fmt::format("request {} admitted twice", r.id));
  const int64_t longest = std::ssize(r.prompt) + new_tokens - 1;
  if (longest > model_.config().context_length)
    throw std::invalid_argument(fmt::format("request {}: {} prompt + {} new tokens exceed the context length {}", r.id,
                                            r.prompt.size(), new_tokens, model_.config().context_length));
  std::vector<int32_t> all = tokens_to_restore(r);
  const PrefixCache::Hit hit = lookup(all);  // part 2: nothing when prefix caching is off

  Sequence s{std::make_unique<PagedKvCache>(pool_, model_.config(), &prefix_, options_.read), sampler_for(r), {}, {}, hit.hashes};
  s.cache->table().adopt(pool_, hit.blocks, hit.positions() * pool_.block_size());  // part 2: cached blocks as they are
  const int64_t cached = s.cache->length();
  s.feed.assign(all.begin() + cached, all.end());  // the uncached suffix
  if (!s.cache->reserve(std::ssize(s.feed)))
    throw std::runtime_error(fmt::format("request {}: the pool has no room for its {} tokens (ask can_admit first)", r.id, s.feed.size()));
  s.tokens = std::move(all);
  stats_.cached_tokens += cached;
  stats_.prefill_tokens += std::ssize(s.feed);
  ++stats_.admissions;
  sequences_.emplace(r.id, std::move(s));
}

// the-change: begin PagedEngine::step
std::vector<int32_t> PagedEngine::step(std::span<Request* const> batch) {
  std::vector<Sequence*> seqs;
  std::vector<SequenceChunk> chunks;
  std::vector<Sampler*> samplers;
  last_step_tokens_ = 0;
  for (Request* r : batch) {
    Sequence& s = sequence(*r);
    if (!s.cache->reserve(std::ssize(s.feed)))
      throw std::runtime_error(fmt::format("request {}: the block pool is out of blocks (a scheduler must preempt)", r->id));
    seqs.push_back(&s);
    chunks.push_back({s.feed, s.cache->length(), s.cache.get(), /*all_logits=*/false});
    samplers.push_back(&s.sampler);
    last_step_tokens_ += std::ssize(s.feed);
  }
  // Chapter 04's step: one forward over every chunk, each row sampled by its request's sampler.
  const std::vector<int32_t> next = forward_and_sample(model_, chunks, samplers);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    Sequence& s = *seqs[i];
    index_full_blocks(s);  // part 2: full blocks into the prefix cache
    s.tokens.push_back(next[i]);
    s.feed.assign(1, next[i]);
  }
  return next;
}
// the-change: end PagedEngine::step

void PagedEngine::release(const Request& r) {
  const auto it = sequences_.find(r.id);
  if (it == sequences_.end()) throw std::logic_error(fmt::format("request {} released without a sequence", r.id));
  copies_of_released_ += it->second.cache->copies();
  sequences_.erase(it);
}

PagedStats PagedEngine::stats() const {
  PagedStats out = stats_;
  out.copies = copies_of_released_;
  for (const auto& [id, s] : sequences_) out.copies += s.cache->copies();
  return out;
}

int64_t PagedEngine::stored_positions() const {
  int64_t n = 0;
  for (const auto& [id, s] : sequences_) n += s.cache->length();
  return n;
}

std::vector<const BlockTable*> PagedEngine::tables() const {
  std::vector<const BlockTable*> out;
  for (const auto& [id, s] : sequences_) out.push_back(&s.cache->table());
  return out;
}

// Part 2's lookup, index_full_blocks and fork are in sharing/ (prefix_reuse.cpp, fork.cpp).

}  // namespace infer
