// A first-fit allocator of contiguous ranges: what a cache that must be one piece gets from one
// shared arena, and so the foil table 6 sets against the block pool.
//
// The arena is a line of `capacity` positions. allocate(n) walks the free ranges from the lowest
// offset and cuts n positions off the front of the first one that holds n (first fit); release
// puts a range back and merges it with a free neighbour on either side (coalescing), so two
// adjacent holes become one hole that a larger request can use. Even so, ranges of different
// sizes coming and going leave holes between the ranges still held, and a request can find no
// hole big enough while the holes together are: that free memory is **external fragmentation**.
// Blocks cannot suffer it: every block fits every sequence.
//
// Why it lives in tables/ and not beside the block pool: it is not part of the lesson and no
// later chapter links it. It is the allocator paging replaces, kept only to measure what paging
// saves, and it allocates offsets, not storage: fragmentation depends on where the ranges lie,
// not on what they hold.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace infer::paging {

class FirstFitArena {
 public:
  // An arena of `capacity` positions, all free. Throws std::invalid_argument if capacity < 1.
  explicit FirstFitArena(int64_t capacity);

  // The offset of n positions cut from the front of the lowest free range that holds them, or
  // nothing when no single free range does (even if the free ranges together do). n < 1 throws.
  std::optional<int64_t> allocate(int64_t n);
  // Frees the range that allocate() returned at `offset`, merging it with adjacent free ranges.
  // An offset that is not the start of a held range (a double free) throws std::logic_error.
  void release(int64_t offset);

  int64_t capacity() const { return capacity_; }
  int64_t free_positions() const { return free_total_; }
  int64_t held_positions() const { return capacity_ - free_total_; }
  int64_t largest_free() const;  // the longest free range: the largest request that fits now
  // Free positions that a request of n cannot use: all of them when no single range holds n
  // though their sum does (external fragmentation), otherwise 0.
  int64_t unusable_for(int64_t n) const;
  const std::map<int64_t, int64_t>& free_ranges() const { return free_; }  // offset → length
  const std::map<int64_t, int64_t>& held_ranges() const { return held_; }  // offset → length

  // Throws std::logic_error naming the first broken invariant: free and held ranges tile the
  // arena without gap or overlap, and no two free ranges touch (they would have been merged).
  void check_invariants() const;

 private:
  int64_t capacity_;
  int64_t free_total_;
  std::map<int64_t, int64_t> free_, held_;
};

}  // namespace infer::paging
