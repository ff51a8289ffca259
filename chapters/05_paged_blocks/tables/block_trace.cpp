#include "block_trace.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "block_table.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "paged_engine.hpp"
#include "paged_scheduler.hpp"

namespace infer::paging {

const char* kind_name(BlockEvent::Kind kind) {
  switch (kind) {
    case BlockEvent::Kind::allocate: return "allocate";
    case BlockEvent::Kind::adopt: return "adopt";
    case BlockEvent::Kind::share: return "share";
    case BlockEvent::Kind::copy: return "copy";
    case BlockEvent::Kind::free: return "free";
    case BlockEvent::Kind::preempt: return "preempt";
  }
  return "?";
}

nlohmann::json to_json(const BlockEvent& e) {
  nlohmann::json j = {{"kind", kind_name(e.kind)}};
  if (e.kind == BlockEvent::Kind::preempt) {
    j["request"] = e.request;
    j["blocks"] = e.blocks;
    return j;
  }
  j["block"] = e.block;
  if (e.kind == BlockEvent::Kind::copy) j["from"] = e.from;
  j["request"] = e.request;
  return j;
}

std::vector<std::vector<int>> block_holders(const BlockSnapshot& s) {
  const int n = static_cast<int>(s.refcounts.size());
  std::vector<std::vector<int>> holders(s.refcounts.size());
  for (const auto& [id, blocks] : s.tables)  // ascending ids
    for (int b : blocks) {
      if (b < 0 || b >= n) throw std::logic_error(fmt::format("block trace: request {} holds block {}, outside the pool of {}", id, b, n));
      holders[b].push_back(id);
    }
  for (int b = 0; b < n; ++b)
    if (std::ssize(holders[b]) != s.refcounts[b])
      throw std::logic_error(fmt::format("block trace: block {} has {} holders but refcount {}", b, holders[b].size(), s.refcounts[b]));
  for (int b : s.cached) {
    if (b < 0 || b >= n) throw std::logic_error(fmt::format("block trace: cached block {} outside the pool of {}", b, n));
    if (!holders[b].empty()) throw std::logic_error(fmt::format("block trace: block {} is both held and in the free cached list", b));
  }
  return holders;
}

std::vector<BlockEvent> block_events(const BlockSnapshot& before, const BlockSnapshot& after) {
  using Kind = BlockEvent::Kind;
  static const std::vector<int> none;
  const auto table = [](const BlockSnapshot& s, int r) -> const std::vector<int>& {
    const auto it = s.tables.find(r);
    return it == s.tables.end() ? none : it->second;
  };
  std::set<int> ids;
  for (const auto& [id, t] : before.tables) ids.insert(id);
  for (const auto& [id, t] : after.tables) ids.insert(id);
  for (const auto& [id, a] : after.admitted) ids.insert(id);
  for (const auto& [id, t] : after.released) ids.insert(id);
  const std::set<int> preempted(after.preempted.begin(), after.preempted.end());

  std::vector<BlockEvent> admissions, growth, frees;
  std::map<int, std::vector<int>> released;  // preempted request → its blocks
  for (int r : ids) {
    const std::vector<int>* base = &table(before, r);  // the table the step's growth started from
    if (const auto a = after.admitted.find(r); a != after.admitted.end()) {
      const Admission& adm = a->second;
      if (!base->empty()) throw std::logic_error(fmt::format("block trace: request {} admitted while holding blocks", r));
      if (adm.from_cache < 0 || adm.from_cache > std::ssize(adm.blocks))
        throw std::logic_error(fmt::format("block trace: request {} adopted {} of {} blocks", r, adm.from_cache, adm.blocks.size()));
      for (int i = 0; i < std::ssize(adm.blocks); ++i) {
        const Kind k = i >= adm.from_cache ? Kind::allocate : adm.forked ? Kind::share : Kind::adopt;
        admissions.push_back({k, r, adm.blocks[i], -1, {}});
      }
      base = &adm.blocks;
    }
    const auto gone = after.released.find(r);
    const std::vector<int>& last = gone != after.released.end() ? gone->second : table(after, r);  // where the growth ended
    if (gone != after.released.end() && after.tables.count(r) != 0)
      throw std::logic_error(fmt::format("block trace: request {} released and holding blocks in one step", r));
    if (gone == after.released.end() && last.empty() && !base->empty())
      throw std::logic_error(fmt::format("block trace: the table of request {} vanished without a release", r));
    if (last.size() < base->size()) throw std::logic_error(fmt::format("block trace: the table of request {} shrank", r));
    for (std::size_t i = 0; i < last.size(); ++i) {
      if (i >= base->size()) growth.push_back({Kind::allocate, r, last[i], -1, {}});
      else if (last[i] != (*base)[i]) growth.push_back({Kind::copy, r, last[i], (*base)[i], {}});
    }
    if (gone == after.released.end()) continue;
    if (preempted.count(r) != 0) released[r] = last;
    else
      for (int b : last) frees.push_back({Kind::free, r, b, -1, {}});
  }
  std::vector<BlockEvent> out = std::move(admissions);
  for (int r : after.preempted) {
    const auto it = released.find(r);
    if (it == released.end()) throw std::logic_error(fmt::format("block trace: request {} preempted without a release", r));
    out.push_back({Kind::preempt, r, -1, -1, it->second});
  }
  out.insert(out.end(), growth.begin(), growth.end());
  out.insert(out.end(), frees.begin(), frees.end());
  return out;
}

namespace {

constexpr int kBlockSize = 4;
constexpr int kBlocks = 24;
constexpr int kSlots = 8;
constexpr int kMaxSteps = 200;  // the scenario takes about 35; more means something is stuck

// One request of the scenario; `arrival` is a step number, `parent` the request it is a sample of.
struct Planned {
  std::string label;
  std::vector<int32_t> prompt;
  int new_tokens = 0;
  int arrival = 0;
  int parent = -1;
};

// Exactly n tokens of `text` (repeated if it is shorter), so that block boundaries fall where
// the scenario wants them whatever the tokenizer.
std::vector<int32_t> tokens(const Context& cx, const std::string& text, int n) {
  const std::vector<int32_t> once = cx.m.tokenizer.encode(text);
  std::vector<int32_t> out;
  while (std::ssize(out) < n) out.push_back(once[out.size() % once.size()]);
  return out;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The scenario, in blocks of 4: a 12-token system prompt (3 full blocks) with questions A and B
// (B adopts the blocks A's request still holds), a 10-token poem prompt whose two further samples
// are forked from it one step later (their first writes copy the shared, partly filled third
// block), question C after A and B have finished (it reclaims the system prompt's free, cached
// blocks), then four long answers that outgrow the 24-block pool (the newest is preempted and
// readmitted when one finishes).
std::vector<Planned> scenario(const Context& cx) {
  const auto system = tokens(cx, "You are a helpful assistant at a small public library. Answer briefly.", 12);
  const auto poem = tokens(cx, "Write a short poem about the sea and an old lighthouse keeper:", 10);
  std::vector<Planned> p = {
      {"system prompt + question A", concat(system, tokens(cx, " When do you open on Sundays?", 5)), 6, 0},
      {"system prompt + question B", concat(system, tokens(cx, " Can I renew a book online?", 5)), 4, 1},
      {"poem prompt, sample 1", poem, 8, 2},
      {"poem prompt, sample 2 (forked from 2)", poem, 8, 3, 2},
      {"poem prompt, sample 3 (forked from 2)", poem, 8, 3, 2},
      {"system prompt + question C (after A and B)", concat(system, tokens(cx, " Where is the reference desk?", 5)), 4, 6},
  };
  const std::array<std::string, 4> stories = {"Tell me a long story about a dragon.", "Describe a walk through a rainy city.",
                                              "Explain how a steam engine works.", "Write a letter to a friend far away."};
  for (int i = 0; i < 4; ++i) p.push_back({fmt::format("long answer {}", i + 1), tokens(cx, stories[i], 8), 20, 7});
  return p;
}

// The lesson's PagedEngine as the scheduler sees it, with two additions that change nothing it
// does: a request planned as a sample of a running, prefilled parent is forked from it
// (PagedEngine::fork, as table 4 does) instead of admitted; and every admission is noted — which
// block table is the request's (the one new in engine.tables()), and how many of its first blocks
// came from the prefix cache (the PagedStats::cached_tokens it added); and every release, with the
// table as it was released.
class TracingEngine : public MemoryBoundEngine {
 public:
  TracingEngine(PagedEngine& engine, std::vector<Request>& requests, std::map<int, int> parent_of)
      : engine_(engine), requests_(requests), parent_of_(std::move(parent_of)) {}

  void admit(const Request& r, int new_tokens) override {
    const std::vector<const BlockTable*> before = engine_.tables();
    const int64_t cached_before = engine_.stats().cached_tokens;
    const Request* parent = fork_parent(r);
    if (parent != nullptr) engine_.fork(*parent, r);
    else engine_.admit(r, new_tokens);
    const BlockTable* t = new_table(before);
    tables_[r.id] = t;
    const auto adopted = (engine_.stats().cached_tokens - cached_before) / engine_.pool().block_size();
    admitted_[r.id] = {t->blocks(), parent != nullptr ? static_cast<int>(t->blocks().size()) : static_cast<int>(adopted), parent != nullptr};
  }
  std::vector<int32_t> step(std::span<Request* const> batch) override { return engine_.step(batch); }
  void release(const Request& r) override {
    const auto t = tables_.find(r.id);
    if (t == tables_.end()) throw std::logic_error(fmt::format("block trace: request {} released but never seen admitted", r.id));
    released_[r.id] = t->second->blocks();  // its last state: a block taken in its last step is in no snapshot
    tables_.erase(t);
    engine_.release(r);
  }
  bool can_admit(const Request& r) const override { return engine_.can_admit(r); }
  bool reserve(const Request& r) override { return engine_.reserve(r); }
  bool fits_alone(const Request& r) const override { return engine_.fits_alone(r); }

  // The state now, with the admissions and releases since the last snapshot (preemptions: the caller's).
  BlockSnapshot snapshot() {
    if (tables_.size() != engine_.sequences()) throw std::logic_error("block trace: a sequence the recorder did not see admitted");
    BlockSnapshot s;
    for (const auto& [id, t] : tables_) s.tables[id] = t->blocks();
    const BlockPool& pool = engine_.pool();
    for (int b = 0; b < pool.num_blocks(); ++b) {
      s.refcounts.push_back(pool.refcount(b));
      if (pool.is_free(b) && engine_.prefix_cache().contains_block(b)) s.cached.push_back(b);
    }
    s.admitted = std::move(admitted_);
    s.released = std::move(released_);
    admitted_.clear();
    released_.clear();
    return s;
  }

 private:
  const Request* fork_parent(const Request& r) const {
    const auto p = parent_of_.find(r.id);
    if (p == parent_of_.end() || !r.tokens.empty()) return nullptr;  // readmitted after a preemption: recomputed
    const auto t = tables_.find(p->second);
    const Request& parent = requests_[static_cast<std::size_t>(p->second)];
    return t != tables_.end() && t->second->length() >= std::ssize(parent.prompt) ? &parent : nullptr;
  }
  const BlockTable* new_table(const std::vector<const BlockTable*>& before) const {
    const BlockTable* found = nullptr;
    for (const BlockTable* t : engine_.tables())
      if (std::find(before.begin(), before.end(), t) == before.end()) {
        if (found != nullptr) throw std::logic_error("block trace: two new block tables in one admission");
        found = t;
      }
    if (found == nullptr) throw std::logic_error("block trace: an admission without a new block table");
    return found;
  }

  PagedEngine& engine_;
  std::vector<Request>& requests_;  // by id
  std::map<int, int> parent_of_;
  std::map<int, const BlockTable*> tables_;  // live request → its table (owned by the engine)
  std::map<int, Admission> admitted_;
  std::map<int, std::vector<int>> released_;
};

struct KindSummary {
  int events = 0, blocks = 0, first_step = -1;
  std::string example;
};

std::string example_of(const BlockEvent& e, int step, bool reclaimed) {
  using Kind = BlockEvent::Kind;
  switch (e.kind) {
    case Kind::allocate: return fmt::format("step {}: request {} takes free block {}", step, e.request, e.block);
    case Kind::adopt:
      return fmt::format("step {}: request {} adopts block {} ({})", step, e.request, e.block, reclaimed ? "free, reclaimed" : "held, retained");
    case Kind::share: return fmt::format("step {}: request {} shares block {} (fork)", step, e.request, e.block);
    case Kind::copy: return fmt::format("step {}: request {} copies shared block {} into {}", step, e.request, e.from, e.block);
    case Kind::free: return fmt::format("step {}: request {} lets block {} go", step, e.request, e.block);
    case Kind::preempt: return fmt::format("step {}: request {} preempted, {} blocks released", step, e.request, e.blocks.size());
  }
  return "";
}

}  // namespace

void block_trace_table(const Context& cx) {
  Stopwatch watch;
  const std::vector<Planned> plan = scenario(cx);
  std::vector<Request> requests(plan.size());
  std::map<int, int> parent_of;
  nlohmann::json trace = {{"block_size", kBlockSize}, {"blocks", kBlocks}, {"requests", nlohmann::json::array()},
                          {"steps", nlohmann::json::array()}};
  for (std::size_t i = 0; i < plan.size(); ++i) {
    Request& r = requests[i];
    r.id = static_cast<int>(i);
    r.prompt = plan[i].prompt;
    r.max_new_tokens = plan[i].new_tokens;
    r.arrival = plan[i].arrival;
    if (plan[i].parent >= 0) parent_of[r.id] = plan[i].parent;
    trace["requests"].push_back(
        {{"id", r.id}, {"prompt_tokens", r.prompt.size()}, {"new_tokens", r.max_new_tokens}, {"label", plan[i].label}});
  }

  SamplingParams sampling = cx.o.sampling;
  sampling.temperature = cx.s.sample_temp;  // the forked samples differ, as in table 4
  PagedEngineOptions po;
  po.block_size = kBlockSize;
  po.budget_bytes = std::size_t{kBlocks} * kBlockSize * cx.bytes_per_token;
  PagedEngine engine(cx.m.model, sampling, po);
  if (engine.pool().num_blocks() != kBlocks) throw std::logic_error("block trace: the pool is not the planned size");
  TracingEngine tracer(engine, requests, parent_of);
  VirtualClock clock;  // one second per step: arrivals are step numbers
  PagedScheduler scheduler(kSlots, tracer, clock);
  for (Request& r : requests) scheduler.submit(r);

  BlockSnapshot before;
  before.refcounts.assign(kBlocks, 0);
  std::map<BlockEvent::Kind, KindSummary> kinds;
  struct Preemption {
    int request, at, back = -1;  // back: the step it was admitted again
  };
  std::vector<Preemption> preemptions;
  int steps = 0, peak = 0, peak_step = 0, reclaims = 0;
  std::size_t preemptions_seen = 0;
  while (!scheduler.idle()) {
    if (steps == kMaxSteps) throw std::logic_error("block trace: the scenario did not finish");
    scheduler.step();
    clock.advance(1.0);
    BlockSnapshot now = tracer.snapshot();
    const std::vector<int>& preempted = scheduler.preempted_ids();
    now.preempted.assign(preempted.begin() + static_cast<std::ptrdiff_t>(preemptions_seen), preempted.end());
    preemptions_seen = preempted.size();
    check_tables(engine.pool(), engine.tables());
    const std::vector<std::vector<int>> holders = block_holders(now);
    const std::vector<BlockEvent> events = block_events(before, now);

    nlohmann::json entry = {{"holders", holders}, {"cached", now.cached}, {"events", nlohmann::json::array()}};
    for (const BlockEvent& e : events) {
      entry["events"].push_back(to_json(e));
      const bool reclaimed = e.kind == BlockEvent::Kind::adopt && std::binary_search(before.cached.begin(), before.cached.end(), e.block);
      reclaims += reclaimed;
      KindSummary& k = kinds[e.kind];
      if (k.events++ == 0) {
        k.first_step = steps;
        k.example = example_of(e, steps, reclaimed);
      }
      k.blocks += e.kind == BlockEvent::Kind::preempt ? static_cast<int>(e.blocks.size()) : 1;
    }
    for (Preemption& p : preemptions)
      if (p.back < 0 && now.admitted.count(p.request) != 0) p.back = steps;
    for (int id : now.preempted) preemptions.push_back({id, steps, -1});
    trace["steps"].push_back(std::move(entry));
    const int held = kBlocks - engine.pool().free_blocks();
    if (held > peak) {
      peak = held;
      peak_step = steps;
    }
    before = std::move(now);
    ++steps;
  }
  if (engine.pool().free_blocks() != kBlocks) throw std::logic_error("block trace: blocks still held at the end");
  const double seconds = watch.seconds();
  cx.figures["block_trace"] = std::move(trace);

  Table t(fmt::format("7. The block table over time: {} requests on a pool of {} blocks of {} positions, {} steps, peak {} of {} blocks held",
                      requests.size(), kBlocks, kBlockSize, steps, peak, kBlocks),
          {"event", "events", "blocks", "first at step", "the first one"});
  for (const auto k : {BlockEvent::Kind::allocate, BlockEvent::Kind::adopt, BlockEvent::Kind::share, BlockEvent::Kind::copy,
                       BlockEvent::Kind::free, BlockEvent::Kind::preempt}) {
    const KindSummary& s = kinds[k];
    t.add_row({kind_name(k), std::to_string(s.events), std::to_string(s.blocks), s.events == 0 ? "never" : std::to_string(s.first_step),
               s.example});
  }
  std::string preempts;
  for (const Preemption& p : preemptions)
    preempts += fmt::format("{}request {} at step {}, readmitted at step {}", preempts.empty() ? "" : "; ", p.request, p.at, p.back);
  t.add_note(fmt::format(
      "The lesson's PagedEngine under its PagedScheduler ({} slots), prefix cache on, temperature {:g}: a 12-token system prompt with "
      "questions A and B (B adopts the 3 blocks A holds), a 10-token poem prompt with two samples forked from it (their first writes "
      "copy the shared, partly filled block), question C after A and B finished ({} adoptions reclaimed free, cached blocks), then "
      "four long answers that outgrow the pool.",
      kSlots, cx.s.sample_temp, reclaims));
  t.add_note(fmt::format("Peak {} of {} blocks held, at step {}. Preempted: {}{}{}; each readmitted request recomputes its prompt and "
                         "the tokens it had, less any of its full blocks still in the prefix cache. Blocks: for a preemption, the "
                         "blocks it released.",
                         peak, kBlocks, peak_step, scheduler.preemptions(), preempts.empty() ? "" : ": ", preempts));
  t.add_note(fmt::format("Events are derived by diffing each request's block table after every step; checked after every step: each block's "
                         "holders number its refcount, no cached block is held. Every step's holders are in the record's "
                         "figures.block_trace. The run took {:.1f} s.",
                         seconds));
  cx.emit(t);
}

}  // namespace infer::paging
