#include "prefix_cache.hpp"

#include <algorithm>
#include <stdexcept>

namespace infer {

uint64_t PrefixCache::chain(uint64_t prefix, std::span<const int32_t> block_tokens) {
  // splitmix64's finaliser over (running hash ⊕ token): cheap, and every bit of every token
  // reaches every bit of the result. Equality is checked on the tokens anyway.
  const auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(prefix);
  for (int32_t t : block_tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h;
}

// the-change: begin PrefixCache::lookup
PrefixCache::Hit PrefixCache::lookup(std::span<const int32_t> tokens, int64_t max_positions) const {
  Hit hit;
  const int64_t usable = std::min<int64_t>(max_positions, std::ssize(tokens));
  uint64_t h = kNoPrefix;
  for (int64_t start = 0; start + block_size_ <= usable; start += block_size_) {
    const auto block = tokens.subspan(start, block_size_);
    h = chain(h, block);
    const auto it = by_hash_.find(h);
    if (it == by_hash_.end() || !std::equal(block.begin(), block.end(), it->second.tokens.begin(), it->second.tokens.end()))
      break;
    hit.blocks.push_back(it->second.block);
    hit.hashes.push_back(h);
  }
  return hit;
}
// the-change: end PrefixCache::lookup

void PrefixCache::insert(uint64_t hash, int block, std::span<const int32_t> block_tokens) {
  if (std::ssize(block_tokens) != block_size_) throw std::logic_error("PrefixCache: only full blocks are cached");
  if (by_hash_.count(hash) != 0 || hash_of_.count(block) != 0) return;
  by_hash_.emplace(hash, Entry{block, std::vector<int32_t>(block_tokens.begin(), block_tokens.end())});
  hash_of_.emplace(block, hash);
}

void PrefixCache::forget(int block) {
  const auto it = hash_of_.find(block);
  if (it == hash_of_.end()) return;
  by_hash_.erase(it->second);
  hash_of_.erase(it);
}

}  // namespace infer
