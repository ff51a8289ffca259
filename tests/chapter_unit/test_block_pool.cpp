// Chapter 05's allocator without a model: the BlockPool, block tables, the prefix cache's index,
// and the PagedScheduler under memory pressure with a fake engine over a real pool.
//
// The invariants checked after every operation (check_tables):
//   - no block is both on the free list and held, none is neither (lost);
//   - every block's refcount equals the number of block tables that list it (a held block no
//     table lists is a leak; a listed block with refcount 0 is a use after free);
// and, through values written into the blocks, that sharing and copy-on-write never let one
// sequence see another's writes.
#include "catch_compat.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "block_pool.hpp"
#include "block_table.hpp"
#include "paged_engine.hpp"  // fits_in_pool
#include "paged_scheduler.hpp"
#include "prefix_cache.hpp"

using namespace infer;

namespace {

// A model shape small enough that a pool of hundreds of blocks costs a few kilobytes.
LlamaConfig tiny_config() {
  LlamaConfig c;
  c.n_layers = 2;
  c.d_model = 8;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.d_ff = 16;
  c.vocab_size = 32;
  c.context_length = 4096;
  return c;
}

std::size_t budget_for(int blocks, int block_size) {
  const LlamaConfig c = tiny_config();
  return static_cast<std::size_t>(blocks) * 2 * c.n_layers * block_size * c.kv_width() * sizeof(float);
}

// A sequence in the random test: its table and the value it wrote at each position.
struct Seq {
  std::unique_ptr<BlockTable> table;
  std::vector<float> written;
};

// Writes value `x` for position p into element 0 of its key row of head 0 in layer 1 (a block is
// [H_kv, B, D]: head 0's rows come first, D floats apart).
void write_position(BlockPool& pool, const BlockTable& t, int64_t p, float x) {
  Tensor block = pool.keys(1, t.physical_block(p));
  block.host<float>()[(p % t.block_size()) * block.dim(2)] = x;
}

float read_position(const BlockPool& pool, const BlockTable& t, int64_t p) {
  const float* block = pool.key_data(1, t.physical_block(p));
  return block[(p % t.block_size()) * pool.keys(1, 0).dim(2)];
}

void check_all(const BlockPool& pool, const std::vector<Seq>& seqs) {
  std::vector<const BlockTable*> tables;
  for (const Seq& s : seqs) tables.push_back(s.table.get());
  check_tables(pool, tables);  // throws on a broken invariant
  for (const Seq& s : seqs)
    for (int64_t p = 0; p < s.table->length(); ++p) REQUIRE(read_position(pool, *s.table, p) == s.written[p]);
}

}  // namespace

TEST_CASE("BlockPool: sizes from the budget, never overcommits, refuses bad input", "[unit][paged]") {
  const LlamaConfig c = tiny_config();
  BlockPool pool(c, 4, budget_for(10, 4) + 100, Device::cpu());  // 100 bytes short of an 11th block
  CHECK(pool.num_blocks() == 10);
  CHECK(pool.bytes_per_block() == std::size_t{2} * 2 * 4 * 4 * 4);
  CHECK(pool.blocks_for(0) == 0);
  CHECK(pool.blocks_for(4) == 1);
  CHECK(pool.blocks_for(5) == 2);
  std::vector<int> got;
  for (int i = 0; i < 10; ++i) {
    const auto b = pool.allocate();
    REQUIRE(b.has_value());
    got.push_back(*b);
  }
  CHECK_FALSE(pool.allocate().has_value());  // empty: no eleventh block
  CHECK(pool.free_blocks() == 0);
  std::sort(got.begin(), got.end());
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());  // ten different blocks
  for (int b : got) pool.release(b);
  CHECK(pool.free_blocks() == 10);
  pool.check_invariants();

  CHECK_THROWS_AS(BlockPool(c, 0, budget_for(10, 4)), std::invalid_argument);
  CHECK_THROWS_AS(BlockPool(c, 4, budget_for(1, 4) - 1), std::invalid_argument);  // no whole block
}

TEST_CASE("BlockPool and tables detect a double free, a leak and a use after free", "[unit][paged]") {
  BlockPool pool(tiny_config(), 4, budget_for(8, 4));
  const int b = *pool.allocate();
  pool.release(b);
  CHECK_THROWS_AS(pool.release(b), std::logic_error);  // double free
  CHECK_THROWS_AS(pool.retain(b), std::logic_error);   // sharing a free block
  pool.check_invariants();

  // A leak: a table forgotten without releasing its blocks.
  auto leaky = std::make_unique<BlockTable>(4);
  REQUIRE(leaky->reserve(pool, 6));
  BlockTable kept(4);
  REQUIRE(kept.reserve(pool, 3));
  std::vector<const BlockTable*> both{leaky.get(), &kept};
  check_tables(pool, both);
  const std::vector<int> leaked = leaky->blocks();
  leaky.reset();  // dropped, blocks still held
  std::vector<const BlockTable*> only_kept{&kept};
  CHECK_THROWS_WITH(check_tables(pool, only_kept), Catch::Contains("leaked"));
  for (int l : leaked) pool.release(l);
  check_tables(pool, only_kept);

  // A use after free: a table still listing a block that went back to the pool.
  BlockTable stale(4);
  REQUIRE(stale.reserve(pool, 2));
  const std::vector<int> stale_blocks = stale.blocks();
  BlockTable alias(4);
  alias.share(pool, stale_blocks, 2);
  pool.release(stale_blocks[0]);  // released behind alias's back: refcount 1, two tables hold it
  std::vector<const BlockTable*> aliasing{&kept, &stale, &alias};
  CHECK_THROWS_WITH(check_tables(pool, aliasing), Catch::Contains("tables hold it"));
}

TEST_CASE("BlockTable: growth, all-or-nothing reserve, copy-on-write on a shared partial block", "[unit][paged]") {
  BlockPool pool(tiny_config(), 4, budget_for(6, 4));
  BlockTable a(4);
  REQUIRE(a.reserve(pool, 6));  // positions 0…5: two blocks, the second half full
  a.advance(6);
  for (int64_t p = 0; p < 6; ++p) write_position(pool, a, p, static_cast<float>(p));
  CHECK(a.blocks().size() == 2);
  CHECK(a.capacity() == 8);

  BlockTable b(4);
  b.share(pool, a.blocks(), 6);  // a fork: both blocks shared
  CHECK(pool.refcount(a.blocks()[0]) == 2);
  CHECK(pool.refcount(a.blocks()[1]) == 2);
  CHECK(b.blocks_needed(pool, 1) == 1);  // position 6 falls in the shared block: one copy

  int64_t copies = 0;
  REQUIRE(b.reserve(pool, 1, &copies));
  CHECK(copies == 1);
  CHECK(b.blocks()[0] == a.blocks()[0]);  // the full block stays shared
  CHECK(b.blocks()[1] != a.blocks()[1]);  // the written one is b's own copy …
  CHECK(read_position(pool, b, 5) == 5.0f);  // … holding what a had written
  b.advance(1);
  write_position(pool, b, 6, 600.0f);
  REQUIRE(a.reserve(pool, 1, &copies));  // a alone holds its second block now: no copy
  CHECK(copies == 1);
  a.advance(1);
  write_position(pool, a, 6, 6.0f);
  CHECK(read_position(pool, a, 6) == 6.0f);
  CHECK(read_position(pool, b, 6) == 600.0f);

  // All or nothing: 6 blocks in the pool, 3 used; 14 more positions (7 … 20) need 4.
  CHECK(pool.free_blocks() == 3);
  const std::vector<int> before = a.blocks();
  CHECK(a.blocks_needed(pool, 14) == 4);
  CHECK_FALSE(a.reserve(pool, 14));
  CHECK(a.blocks() == before);
  CHECK(pool.free_blocks() == 3);
  a.release(pool);
  b.release(pool);
  CHECK(pool.free_blocks() == 6);
  pool.check_invariants();
}

TEST_CASE("BlockPool: thousands of random allocate / append / fork / free keep every invariant", "[unit][paged]") {
  for (int block_size : {1, 4, 16}) {
    INFO("block size " << block_size);
    BlockPool pool(tiny_config(), block_size, budget_for(64, block_size));
    std::mt19937_64 rng(20240605 + static_cast<uint64_t>(block_size));
    std::vector<Seq> seqs;
    int64_t copies = 0, refused = 0, forks = 0;
    float next_value = 1;
    const auto append = [&](Seq& s, int64_t n) {
      if (!s.table->reserve(pool, n, &copies)) {
        ++refused;
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = s.table->length();
        s.table->advance(1);
        write_position(pool, *s.table, p, next_value);
        s.written.push_back(next_value++);
      }
    };
    for (int op = 0; op < 4000; ++op) {
      const auto pick = [&] { return static_cast<std::size_t>(rng() % seqs.size()); };
      switch (rng() % 4) {
        case 0: {  // allocate: a new sequence with a prompt
          Seq s{std::make_unique<BlockTable>(block_size), {}};
          append(s, 1 + static_cast<int64_t>(rng() % 40));
          if (s.table->length() > 0) seqs.push_back(std::move(s));
          break;
        }
        case 1:  // append: decode steps or a chunk
          if (!seqs.empty()) append(seqs[pick()], rng() % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 20) : 1);
          break;
        case 2:  // fork: a sample sharing a prefix of another sequence
          if (!seqs.empty()) {
            const Seq& parent = seqs[pick()];
            const int64_t shared = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(parent.table->length()));
            Seq child{std::make_unique<BlockTable>(block_size),
                      std::vector<float>(parent.written.begin(), parent.written.begin() + shared)};
            child.table->share(pool, parent.table->blocks(), shared);
            seqs.push_back(std::move(child));
            ++forks;
          }
          break;
        default:  // free
          if (!seqs.empty()) {
            const std::size_t i = pick();
            seqs[i].table->release(pool);
            seqs.erase(seqs.begin() + static_cast<std::ptrdiff_t>(i));
          }
      }
      REQUIRE_NOTHROW(check_all(pool, seqs));
      REQUIRE(pool.used_blocks() <= pool.num_blocks());
    }
    // The run did exercise what it is about.
    if (block_size > 1) CHECK(copies > 0);  // blocks of one position are never partly filled
    CHECK(refused > 0);  // the pool ran out and said so
    CHECK(forks > 100);
    for (Seq& s : seqs) s.table->release(pool);
    seqs.clear();
    CHECK(pool.free_blocks() == pool.num_blocks());  // no leak
    pool.check_invariants();
  }
}

TEST_CASE("PrefixCache: chained hashes find the longest cached prefix, and forget reused blocks", "[unit][paged]") {
  PrefixCache cache(4);
  const std::vector<int32_t> a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  uint64_t h0 = PrefixCache::chain(PrefixCache::kNoPrefix, std::span(a).subspan(0, 4));
  uint64_t h1 = PrefixCache::chain(h0, std::span(a).subspan(4, 4));
  cache.insert(h0, 7, std::span(a).subspan(0, 4));
  cache.insert(h1, 3, std::span(a).subspan(4, 4));

  CHECK(cache.lookup(a, 10).blocks == std::vector<int>{7, 3});
  CHECK(cache.lookup(a, 7).blocks == std::vector<int>{7});  // at most 7 positions: one full block
  // Same second block after a different first block: a different chain, no hit past block 0.
  const std::vector<int32_t> b{1, 2, 3, 99, 5, 6, 7, 8};
  CHECK(cache.lookup(b, 8).blocks.empty());
  const std::vector<int32_t> c{1, 2, 3, 4, 5, 6, 7, 99};
  CHECK(cache.lookup(c, 8).blocks == std::vector<int>{7});

  cache.forget(7);  // block 7 handed out again: the prefix through it is gone
  CHECK(cache.lookup(a, 10).blocks.empty());
  CHECK(cache.size() == 1);
}

// ---- the scheduler under memory pressure, with a fake engine over a real pool ----

namespace {

// Each request holds a real BlockTable; a step "writes" its new positions and returns token
// id·1000 + (tokens generated so far): a deterministic model, so a recomputed request must get
// exactly the tokens it would have had without preemption.
class FakePagedEngine : public MemoryBoundEngine {
 public:
  explicit FakePagedEngine(BlockPool& pool) : pool_(pool) {}
  void admit(const Request& r, int) override {
    REQUIRE(seqs_.count(r.id) == 0);
    Seq& s = seqs_[r.id];
    s.table = std::make_unique<BlockTable>(pool_.block_size());
    s.pending = static_cast<int64_t>(r.prompt.size() + r.tokens.size());  // recompute everything
    REQUIRE(s.table->reserve(pool_, s.pending));
    recomputed += std::ssize(r.tokens);
  }
  bool reserve(const Request& r) override {
    Seq& s = seqs_.at(r.id);
    return s.table->reserve(pool_, s.pending);
  }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    std::vector<int32_t> out;
    for (const Request* r : batch) {
      Seq& s = seqs_.at(r->id);
      REQUIRE(s.table->capacity() >= s.table->length() + s.pending);  // reserved before the step
      s.table->advance(s.pending);
      s.pending = 1;
      out.push_back(r->id * 1000 + static_cast<int32_t>(r->tokens.size()));
    }
    check();
    return out;
  }
  void release(const Request& r) override {
    seqs_.at(r.id).table->release(pool_);
    seqs_.erase(r.id);
  }
  bool can_admit(const Request& r) const override {
    int64_t growth = 0;
    for (const auto& [id, s] : seqs_) growth += s.table->blocks_needed(pool_, s.pending);
    return pool_.blocks_for(static_cast<int64_t>(r.prompt.size() + r.tokens.size())) + growth <= pool_.free_blocks();
  }
  bool fits_alone(const Request& r) const override { return fits_in_pool(pool_, r); }
  void check() const {
    std::vector<const BlockTable*> tables;
    for (const auto& [id, s] : seqs_) tables.push_back(s.table.get());
    check_tables(pool_, tables);
  }
  std::size_t held() const { return seqs_.size(); }
  int64_t recomputed = 0;

 private:
  struct Seq {
    std::unique_ptr<BlockTable> table;
    int64_t pending = 0;  // positions the next step writes
  };
  BlockPool& pool_;
  std::map<int, Seq> seqs_;
};

}  // namespace

TEST_CASE("PagedScheduler: under memory pressure it preempts, recomputes and loses nothing", "[unit][paged][scheduler]") {
  std::mt19937_64 rng(5);
  for (int blocks : {6, 12, 40}) {
    INFO(blocks << " blocks of 4 positions");
    BlockPool pool(tiny_config(), 4, budget_for(blocks, 4));
    FakePagedEngine engine(pool);
    VirtualClock clock;
    PagedScheduler scheduler(16, engine, clock);  // slots are not the limit: blocks are
    std::vector<Request> requests;
    for (int i = 0; i < 60; ++i) {
      Request r;
      r.id = i;
      r.prompt.assign(1 + rng() % 9, 7);
      r.max_new_tokens = 1 + static_cast<int>(rng() % 14);  // at most 9 + 14 − 1 = 22 positions: 6 blocks
      r.arrival = static_cast<double>(i / 4);
      requests.push_back(r);
    }
    for (Request& r : requests) scheduler.submit(r);
    int steps = 0;
    while (!scheduler.idle()) {
      scheduler.step();
      clock.advance(1.0);
      REQUIRE(++steps < 100000);  // never stuck
    }
    for (const Request& r : requests) {
      INFO("request " << r.id);
      REQUIRE(std::ssize(r.tokens) == r.max_new_tokens);
      for (std::size_t k = 0; k < r.tokens.size(); ++k) REQUIRE(r.tokens[k] == r.id * 1000 + static_cast<int32_t>(k));
    }
    CHECK(scheduler.retired().size() == requests.size());
    CHECK(engine.held() == 0);
    CHECK(pool.free_blocks() == pool.num_blocks());  // every block back
    if (blocks == 6) {
      CHECK(scheduler.preemptions() > 0);  // the small pool did force preemption
      CHECK(engine.recomputed > 0);
    }
    if (blocks == 40) CHECK(scheduler.max_running() > 8);
  }

  // A request that cannot fit even alone is refused at submission, not left to stall the queue.
  BlockPool pool(tiny_config(), 4, budget_for(2, 4));
  FakePagedEngine engine(pool);
  VirtualClock clock;
  PagedScheduler scheduler(4, engine, clock);
  Request big;
  big.prompt.assign(6, 1);
  big.max_new_tokens = 4;  // 9 positions: 3 blocks of 4 > 2
  CHECK_THROWS_AS(scheduler.submit(big), std::invalid_argument);
}
