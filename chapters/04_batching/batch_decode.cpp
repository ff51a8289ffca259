#include "batch_decode.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/timing.hpp"

namespace infer {

BatchDecoder::BatchDecoder(Llama& model, SamplingParams sampling) : model_(model), sampling_(sampling) {}

void BatchDecoder::admit(const Request& r, int new_tokens) {
  if (r.prompt.empty()) throw std::invalid_argument(fmt::format("request {}: empty prompt", r.id));
  if (new_tokens < 1) throw std::invalid_argument(fmt::format("request {}: room for {} new tokens", r.id, new_tokens));
  if (sequences_.count(r.id) != 0) throw std::logic_error(fmt::format("request {} admitted twice", r.id));
  // The last generated token is sampled but never fed back, so prompt + new_tokens − 1
  // positions are ever stored.
  const auto capacity = std::ssize(r.prompt) + new_tokens - 1;
  if (capacity > model_.config().context_length)
    throw std::invalid_argument(fmt::format("request {}: {} prompt + {} new tokens exceed the context length {}", r.id,
                                            r.prompt.size(), new_tokens, model_.config().context_length));
  SamplingParams own = sampling_;
  own.seed = sampling_.seed + static_cast<uint64_t>(r.id);
  sequences_.emplace(r.id, Sequence{std::make_unique<GroupedKvCache>(model_.config(), capacity, model_.device()),
                                    Sampler(own), 0, r.prompt});
}

// the-change: begin BatchDecoder::step
std::vector<int32_t> BatchDecoder::step(std::span<Request* const> batch) {
  // Build one chunk per sequence: its new tokens at its next position, its own cache.
  std::vector<Sequence*> seqs;
  std::vector<SequenceChunk> chunks;
  std::vector<Sampler*> samplers;
  last_step_tokens_ = 0;
  for (Request* r : batch) {
    const auto it = sequences_.find(r->id);
    if (it == sequences_.end()) throw std::logic_error(fmt::format("request {} stepped without a slot", r->id));
    Sequence& s = it->second;
    seqs.push_back(&s);
    chunks.push_back({s.feed, s.pos, s.cache.get(), /*all_logits=*/false});
    samplers.push_back(&s.sampler);
    last_step_tokens_ += std::ssize(s.feed);
  }
  const std::vector<int32_t> next = forward_and_sample(model_, chunks, samplers);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    seqs[i]->pos += std::ssize(seqs[i]->feed);
    seqs[i]->feed.assign(1, next[i]);
  }
  return next;
}
// the-change: end BatchDecoder::step

// the-change: begin forward_and_sample
std::vector<int32_t> forward_and_sample(Llama& model, std::span<const SequenceChunk> chunks,
                                        std::span<Sampler* const> samplers) {
  if (chunks.empty()) return {};
  // One forward for all of them; row i of the logits is chunk i's last token.
  const Tensor logits = model.forward_batch(chunks).to(Device::cpu());
  const int64_t V = logits.dim(1);
  std::vector<int32_t> next(chunks.size());
  for (int64_t i = 0; i < std::ssize(chunks); ++i)
    next[i] = samplers[i]->sample(std::span<const float>(logits.host<float>() + i * V, V));
  return next;
}
// the-change: end forward_and_sample

void BatchDecoder::release(const Request& r) { sequences_.erase(r.id); }

std::size_t BatchDecoder::cache_bytes() const {
  std::size_t total = 0;
  for (const auto& [id, s] : sequences_) total += s.cache->bytes();
  return total;
}

std::vector<DecodeTiming> time_batched_decode(Llama& model, std::span<const int32_t> text, const std::vector<int>& batches,
                                              int64_t cached, int repeats, const std::function<void()>& tick) {
  if (batches.empty() || !std::is_sorted(batches.begin(), batches.end()) || batches.front() < 1)
    throw std::invalid_argument("time_batched_decode: batch sizes must be positive and ascending");
  if (text.empty() || cached < 1) throw std::invalid_argument("time_batched_decode: no text or an empty cache");
  const int largest = batches.back();
  const auto token = [&](int64_t i) { return text[i % std::ssize(text)]; };
  std::vector<std::unique_ptr<GroupedKvCache>> caches;
  std::vector<std::vector<int32_t>> prompts;
  for (int b = 0; b < largest; ++b) {
    caches.push_back(std::make_unique<GroupedKvCache>(model.config(), cached + 1, model.device()));
    std::vector<int32_t> p;
    for (int64_t i = 0; i < cached; ++i) p.push_back(token(i + 7 * b));
    prompts.push_back(std::move(p));
  }
  for (int b0 = 0; b0 < largest; b0 += kSweepPrefillGroup) {
    std::vector<SequenceChunk> chunks;
    for (int b = b0; b < std::min(largest, b0 + kSweepPrefillGroup); ++b)
      chunks.push_back({prompts[b], 0, caches[b].get(), false});
    model.forward_batch(chunks);
    if (tick) tick();
  }
  std::vector<int32_t> next;
  for (int b = 0; b < largest; ++b) next.push_back(token(3 + b));
  // One step of every batch size per round (medians_in_turn): the figures are read as ratios to
  // B = 1, and a machine that slows down for a few seconds then slows every B alike instead of
  // whichever B happened to be timed then. Each step rewrites the same cache position.
  std::vector<std::vector<SequenceChunk>> steps;
  std::vector<std::function<void()>> work;
  for (int B : batches) {
    std::vector<SequenceChunk> chunks;
    for (int b = 0; b < B; ++b)
      chunks.push_back({std::span<const int32_t>(next).subspan(b, 1), cached, caches[b].get(), false});
    steps.push_back(std::move(chunks));
  }
  for (const std::vector<SequenceChunk>& chunks : steps) work.push_back([&model, &chunks] { model.forward_batch(chunks); });
  const std::vector<double> seconds = medians_in_turn(repeats, work, tick);
  std::vector<DecodeTiming> out;
  for (std::size_t i = 0; i < batches.size(); ++i) out.push_back({batches[i], seconds[i]});
  return out;
}

}  // namespace infer
