// Table 7, both parts of the chapter: the block table over time. A short real run — the lesson's
// PagedEngine under its PagedScheduler, unchanged — on a pool of 24 blocks of 4 positions, with a
// scenario in which every kind of block event happens within about 35 steps:
//
//   allocate   a sequence grows into a new block (or prefills into fresh ones)
//   adopt      a prompt's first blocks found in the prefix cache: held by a running request
//              (retain) or already free, their request finished (reclaim)
//   share      a sample forked from a prompt lists the prompt's blocks (PagedEngine::fork)
//   copy       the first write into a shared block gives the writer a private copy
//   free       a finished request lets its blocks go (others may still hold them)
//   preempt    the pool ran out: the newest request gives all its blocks back, and is
//              readmitted (recomputed) later
//
// After every scheduler step the recorder reads the state — each request's block table, the
// pool's refcounts, which free blocks the prefix cache still indexes, the scheduler's preempted
// ids — and derives the step's events by diffing each table with its previous snapshot. The
// trace goes to figures["block_trace"] (one entry per step: who holds each block, the cached free
// blocks, the events) for the course report's picture; the table counts the events.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paging_tables.hpp"

namespace infer::paging {

// A request's table right after it was admitted or forked, before any step: its first
// `from_cache` blocks were adopted from the prefix cache (forked: shared with its parent; then
// from_cache is the whole table), the rest allocated.
struct Admission {
  std::vector<int> blocks;
  int from_cache = 0;
  bool forked = false;
};

// The pool after one scheduler step, and what the recorder saw of the step outside the tables.
struct BlockSnapshot {
  std::map<int, std::vector<int>> tables;  // each live request's physical blocks, in logical order
  std::vector<int> refcounts;              // per physical block
  std::vector<int> cached;                 // free blocks the prefix cache still indexes, ascending
  // Since the previous snapshot:
  std::map<int, Admission> admitted;       // requests admitted or forked
  std::map<int, std::vector<int>> released;  // requests that let their table go (finished or preempted):
                                             // the table as it was then — a block taken in a request's
                                             // last step is in no snapshot's `tables`
  std::vector<int> preempted;              // requests preempted (also in `released`), in order
};

struct BlockEvent {
  enum class Kind { allocate, adopt, share, copy, free, preempt };
  Kind kind = Kind::allocate;
  int request = -1;
  int block = -1;           // all but preempt
  int from = -1;            // copy: the shared block that was copied into `block`
  std::vector<int> blocks;  // preempt: the blocks it released
  bool operator==(const BlockEvent&) const = default;
};

const char* kind_name(BlockEvent::Kind kind);
nlohmann::json to_json(const BlockEvent& e);

// Who holds each physical block (request ids, ascending; [] = not held), checked against the
// pool: throws std::logic_error when a block's holders do not number its refcount, or a block
// listed as cached is held.
std::vector<std::vector<int>> block_holders(const BlockSnapshot& s);

// The events between two snapshots (`before` empty for the first), from each request's table —
// before.tables, or its admission; then after.tables, or the table it released: an entry of an
// admission is adopt or share (its first from_cache) or allocate; an entry new at the end of a
// table is allocate, one replaced at the same logical index a copy; a released table is free,
// block by block, or one preempt when the request is in after.preempted. In the order a step does
// them: admissions, preemptions, growth (copy, allocate), frees; requests in id order. Throws
// std::logic_error on a change no event explains (a table that shrank, or vanished unreleased).
std::vector<BlockEvent> block_events(const BlockSnapshot& before, const BlockSnapshot& after);

void block_trace_table(const Context& cx);

}  // namespace infer::paging
