#include "fragmentation_table.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "04_batching/workload/workload.hpp"
#include "block_table.hpp"
#include "first_fit_arena.hpp"
#include "paged_engine.hpp"  // fits_in_pool
#include "measure/table.hpp"
#include "workload_runs.hpp"

namespace infer::paging {
namespace {

// Free memory in positions: all of it, and the most one request could get in one piece.
struct FreeSpace {
  int64_t free = 0, largest = 0;
};
// An admission refused: what the longest-waiting request needed, the free space then, and how
// many sequences were running.
struct Refusal {
  int64_t need = 0;
  FreeSpace space;
  int running = 0;
  bool fragmented() const { return space.free >= need; }  // enough free memory, not in one piece
};

// A model-free engine that logs its free space during every step and at every refusal. Its
// step "generates" token 0: the replay needs only lengths (workload_runs.hpp's replay).
class LoggingEngine : public MemoryBoundEngine {
 public:
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    steps.push_back(space());
    return std::vector<int32_t>(batch.size(), 0);
  }
  virtual FreeSpace space() const = 0;

  std::vector<FreeSpace> steps;
  mutable std::vector<Refusal> refusals;  // can_admit is a question, but the answer "no" is the datum
};

// Contiguous: each request one range of the arena, `size(r)` positions, taken whole at admission.
class ArenaEngine : public LoggingEngine {
 public:
  ArenaEngine(int64_t positions, std::function<int64_t(const Request&)> size) : arena(positions), size_(std::move(size)) {}
  void admit(const Request& r, int) override {
    const std::optional<int64_t> at = arena.allocate(size_(r));
    if (!at) throw std::logic_error(fmt::format("request {} admitted without a free range", r.id));
    offsets_[r.id] = *at;
  }
  void release(const Request& r) override {
    arena.release(offsets_.at(r.id));
    offsets_.erase(r.id);
  }
  bool can_admit(const Request& r) const override {
    if (arena.largest_free() >= size_(r)) return true;
    refusals.push_back({size_(r), space(), static_cast<int>(offsets_.size())});
    return false;
  }
  bool reserve(const Request&) override { return true; }  // the whole range was taken at admission
  bool fits_alone(const Request& r) const override { return size_(r) <= arena.capacity(); }
  FreeSpace space() const override { return {arena.free_positions(), arena.largest_free()}; }

  FirstFitArena arena;

 private:
  std::function<int64_t(const Request&)> size_;
  std::map<int, int64_t> offsets_;  // request id → offset of its range
};

// Paged, prefix caching off: each request a BlockTable over the lesson's pool, growing a block at
// a time, admitted by PagedEngine's rule (blocks for its prompt plus the running sequences' next
// step). Any free block serves any sequence, so the largest usable piece is all free memory.
class BlockEngine : public LoggingEngine {
 public:
  BlockEngine(const LlamaConfig& c, int block_size, std::size_t budget) : pool(c, block_size, budget) {}
  void admit(const Request& r, int) override {
    Sequence& s = sequences_[r.id];
    s.table = std::make_unique<BlockTable>(pool.block_size());
    s.pending = std::ssize(r.prompt) + std::ssize(r.tokens);  // a preempted request recomputes its tokens
    if (!s.table->reserve(pool, s.pending)) throw std::logic_error(fmt::format("request {} admitted without blocks", r.id));
  }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    std::vector<int32_t> next = LoggingEngine::step(batch);
    for (const Request* r : batch) {
      Sequence& s = sequences_.at(r->id);
      s.table->advance(s.pending);
      s.pending = 1;
    }
    return next;
  }
  void release(const Request& r) override {
    sequences_.at(r.id).table->release(pool);
    sequences_.erase(r.id);
  }
  bool can_admit(const Request& r) const override {
    int64_t growth = 0;
    for (const auto& [id, s] : sequences_) growth += s.table->blocks_needed(pool, s.pending);
    const int64_t need = pool.blocks_for(std::ssize(r.prompt) + std::ssize(r.tokens)) + growth;
    if (need <= pool.free_blocks()) return true;
    refusals.push_back({need * pool.block_size(), space(), static_cast<int>(sequences_.size())});
    return false;
  }
  bool reserve(const Request& r) override {
    Sequence& s = sequences_.at(r.id);
    return s.table->reserve(pool, s.pending);
  }
  bool fits_alone(const Request& r) const override { return fits_in_pool(pool, r); }
  FreeSpace space() const override {
    const int64_t free = int64_t{pool.free_blocks()} * pool.block_size();
    return {free, free};
  }

  BlockPool pool;

 private:
  struct Sequence {
    std::unique_ptr<BlockTable> table;
    int64_t pending = 0;  // positions the next step writes
  };
  std::map<int, Sequence> sequences_;
};

// One replayed layout and what its engine logged.
struct Replayed {
  WorkloadRun run;
  std::vector<FreeSpace> steps;
  std::vector<Refusal> refusals;
};

Replayed replay_arena(const Context& cx, const std::vector<Request>& requests, int64_t positions, std::function<int64_t(const Request&)> size,
                      std::string layout) {
  ArenaEngine engine(positions, std::move(size));
  WorkloadRun run = replay(
      cx, requests, engine, [&] { return static_cast<double>(engine.arena.held_positions() * int64_t(cx.bytes_per_token)); }, std::move(layout));
  engine.arena.check_invariants();
  if (engine.arena.free_positions() != engine.arena.capacity()) throw std::logic_error("ranges left in the arena after the replay");
  return {std::move(run), std::move(engine.steps), std::move(engine.refusals)};
}

Replayed replay_blocks(const Context& cx, const std::vector<Request>& requests, std::size_t budget) {
  BlockEngine engine(cx.m.model.config(), cx.s.block_size, budget);
  WorkloadRun run = replay(
      cx, requests, engine, [&] { return static_cast<double>(engine.pool.used_blocks()) * static_cast<double>(engine.pool.bytes_per_block()); },
      fmt::format("paged, blocks of {}", cx.s.block_size));
  if (engine.pool.free_blocks() != engine.pool.num_blocks()) throw std::logic_error("blocks left in the pool after the replay");
  return {std::move(run), std::move(engine.steps), std::move(engine.refusals)};
}

}  // namespace

void fragmentation_table(const Context& cx, const std::vector<Request>& requests, const Budget& budget) {
  const auto bytes_per_token = static_cast<double>(cx.bytes_per_token);
  const auto arena = static_cast<int64_t>(budget.bytes / bytes_per_token);  // positions in table 2's budget
  const int cap = cx.s.max_len;
  const std::vector<Replayed> layouts = {
      replay_arena(cx, requests, arena, [&](const Request&) { return budget.positions; },
                   fmt::format("contiguous, fixed slots of longest prompt + {}", cap)),
      replay_arena(cx, requests, arena, [&](const Request& r) { return std::ssize(r.prompt) + cap - 1; },
                   fmt::format("contiguous, first fit, prompt + {} each", cap)),
      replay_blocks(cx, requests, static_cast<std::size_t>(budget.bytes)),
  };

  const auto mb_of = [&](double positions) { return mb(positions * bytes_per_token); };
  Table t(fmt::format("6. External fragmentation: table 2's budget of {:.1f} MB as one arena of {} positions, chapter 04's workload "
                      "replayed without the model",
                      budget.bytes / 1e6, arena),
          {"layout", "steps", "internal waste", "mean free (MB)", "admissions refused", "running meanwhile", "refused, free ≥ need",
           "free but unusable (MB)", "largest free range (MB)", "need (MB)"});
  for (const Replayed& l : layouts) {
    const ServeSummary s = summarize(l.run.requests, l.run.steps);
    double free = 0;
    for (const FreeSpace& f : l.steps) free += static_cast<double>(f.free);
    free /= static_cast<double>(std::max<std::size_t>(l.steps.size(), 1));
    int fragmented = 0;
    double unusable = 0, largest = 0, need = 0, running = 0;
    nlohmann::json events = nlohmann::json::array();
    for (const Refusal& r : l.refusals) {
      events.push_back({{"need", r.need}, {"free", r.space.free}, {"largest_free", r.space.largest}, {"running", r.running}});
      running += r.running;
      if (!r.fragmented()) continue;
      ++fragmented;
      unusable += static_cast<double>(r.space.free);
      largest += static_cast<double>(r.space.largest);
      need += static_cast<double>(r.need);
    }
    const double n = std::max(fragmented, 1);
    const bool any = fragmented > 0;
    t.add_row({l.run.layout, std::to_string(s.steps), cell::percent(l.run.memory.waste()), mb_of(free), std::to_string(l.refusals.size()),
               l.refusals.empty() ? "" : fmt::format("{:.1f}", running / static_cast<double>(l.refusals.size())),
               std::to_string(fragmented), any ? mb_of(unusable / n) : "0", any ? mb_of(largest / n) : "", any ? mb_of(need / n) : ""});
    cx.figures["fragmentation"].push_back({{"layout", l.run.layout}, {"arena_positions", arena}, {"steps", s.steps},
                                           {"mean_batch", s.mean_batch()}, {"internal_waste", l.run.memory.waste()},
                                           {"mean_reserved", l.run.memory.mean_reserved}, {"mean_written", l.run.memory.mean_written},
                                           {"mean_free_bytes", free * bytes_per_token}, {"refusals", l.refusals.size()},
                                           {"fragmented_refusals", fragmented},
                                           {"mean_unusable_bytes", any ? unusable / n * bytes_per_token : 0.0},
                                           {"refusal_events_positions", events}});
  }
  t.add_note(fmt::format("The {} requests of tables 1 and 2, in the same order, under the PagedScheduler with memory, not slots, as the "
                         "limit. No model runs: each request generates exactly its max_new_tokens, so which requests run at each step "
                         "depends only on lengths and on the layout. Contiguous rows: one range of the arena per request, taken whole "
                         "at admission, placed first fit, freed ranges merged with free neighbours (tables/first_fit_arena.hpp). "
                         "Paged: the lesson's BlockPool and BlockTable, prefix caching off.",
                         requests.size()));
  t.add_note("internal waste = 1 − written / reserved, averaged over the steps as in table 1. A refusal: the longest-waiting request "
             "finds no room and admission stops for that step. Refused, free ≥ need: the free memory together would hold it but no "
             "single free range does: external fragmentation. The last three columns are means over those refusals; free but "
             "unusable is all the free memory at one. Running meanwhile: the sequences running at a refusal (mean), the "
             "concurrency the layout allowed while requests waited.");
  t.add_note(fmt::format("Reservations are prompt + {0} − 1 positions, as in table 1 (fixed slots: the longest prompt's, as table 2's "
                         "contiguous run). Fixed slots cannot fragment: every range is one size, so the range one request frees fits the next. Ranges sized to each prompt "
                         "reserve a few positions less, but the holes they leave can be a few positions too short for the next request: "
                         "compare the largest free range with the need. Blocks leave no free memory unusable, as any free block serves "
                         "any sequence; what they waste is the unwritten tail of each sequence's last block.",
                         cap));
  cx.emit(t);
}

}  // namespace infer::paging
