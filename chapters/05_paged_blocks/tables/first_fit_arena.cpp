#include "first_fit_arena.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

namespace infer::paging {

FirstFitArena::FirstFitArena(int64_t capacity) : capacity_(capacity), free_total_(capacity) {
  if (capacity < 1) throw std::invalid_argument(fmt::format("FirstFitArena: capacity {} (at least 1)", capacity));
  free_[0] = capacity;
}

std::optional<int64_t> FirstFitArena::allocate(int64_t n) {
  if (n < 1) throw std::invalid_argument(fmt::format("FirstFitArena: allocate({})", n));
  // First fit: the lowest free range long enough. The request takes its front; the rest of the
  // range stays free where it was.
  const auto fit = std::find_if(free_.begin(), free_.end(), [&](const auto& range) { return range.second >= n; });
  if (fit == free_.end()) return std::nullopt;
  const auto [offset, length] = *fit;
  free_.erase(fit);
  if (length > n) free_[offset + n] = length - n;
  held_[offset] = n;
  free_total_ -= n;
  return offset;
}

void FirstFitArena::release(int64_t offset) {
  const auto held = held_.find(offset);
  if (held == held_.end()) throw std::logic_error(fmt::format("FirstFitArena: release({}) is not a held range (double free?)", offset));
  int64_t start = offset, end = offset + held->second;
  free_total_ += held->second;
  held_.erase(held);
  // Coalesce: merge with a free range that ends where this one starts, and with one that starts
  // where it ends. Without this, free neighbours would stay separate holes, each too small for a
  // request their sum could hold.
  const auto after = free_.lower_bound(offset);
  if (after != free_.end() && after->first == end) {
    end += after->second;
    free_.erase(after);
  }
  const auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    const auto before = std::prev(next);
    if (before->first + before->second == start) {
      start = before->first;
      free_.erase(before);
    }
  }
  free_[start] = end - start;
}

int64_t FirstFitArena::largest_free() const {
  int64_t largest = 0;
  for (const auto& [offset, length] : free_) largest = std::max(largest, length);
  return largest;
}

int64_t FirstFitArena::unusable_for(int64_t n) const {
  return free_total_ >= n && largest_free() < n ? free_total_ : 0;
}

void FirstFitArena::check_invariants() const {
  // Walk free and held ranges together in offset order: each must start where the last ended.
  std::map<int64_t, std::pair<int64_t, bool>> all;  // offset → (length, free?)
  for (const auto& [offset, length] : free_) all[offset] = {length, true};
  for (const auto& [offset, length] : held_)
    if (!all.emplace(offset, std::pair{length, false}).second)
      throw std::logic_error(fmt::format("FirstFitArena: offset {} is both free and held", offset));
  int64_t at = 0, free_sum = 0;
  bool last_free = false;
  for (const auto& [offset, range] : all) {
    const auto [length, is_free] = range;
    if (length < 1) throw std::logic_error(fmt::format("FirstFitArena: empty range at {}", offset));
    if (offset != at) throw std::logic_error(fmt::format("FirstFitArena: range at {} but the last ended at {}", offset, at));
    if (is_free && last_free) throw std::logic_error(fmt::format("FirstFitArena: free ranges touch at {} (not coalesced)", offset));
    at = offset + length;
    last_free = is_free;
    if (is_free) free_sum += length;
  }
  if (at != capacity_) throw std::logic_error(fmt::format("FirstFitArena: ranges end at {}, the arena at {}", at, capacity_));
  if (free_sum != free_total_) throw std::logic_error(fmt::format("FirstFitArena: {} free counted, {} in ranges", free_total_, free_sum));
}

}  // namespace infer::paging
