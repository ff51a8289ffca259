// Chapter 05's table 7 without a model: the recorder's event derivation. A hand-made sequence of
// snapshots — the pool after each step, with the admissions, releases and preemptions the recorder
// saw — must yield exactly the expected allocate / adopt / share / copy / free / preempt events,
// and a snapshot whose holders disagree with the pool's refcounts must be refused.
#include "catch_compat.hpp"

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "block_trace.hpp"

using namespace infer::paging;
using nlohmann::json;

namespace {

json events_json(const BlockSnapshot& before, const BlockSnapshot& after) {
  json out = json::array();
  for (const BlockEvent& e : block_events(before, after)) out.push_back(to_json(e));
  return out;
}

}  // namespace

TEST_CASE("BlockTrace: diffing block tables yields exactly the allocate, adopt, share, copy, free and preempt events", "[unit][paged]") {
  // A pool of 8 blocks of B positions; requests 0 … 3.
  BlockSnapshot s0;  // before the first step: nothing held
  s0.refcounts.assign(8, 0);

  // Step 0: request 0 admitted, prefilled into three free blocks.
  BlockSnapshot s1;
  s1.admitted[0] = {{0, 1, 2}, 0, false};
  s1.tables[0] = {0, 1, 2};
  s1.refcounts = {1, 1, 1, 0, 0, 0, 0, 0};
  CHECK(events_json(s0, s1) == json::parse(R"([
    {"kind": "allocate", "block": 0, "request": 0},
    {"kind": "allocate", "block": 1, "request": 0},
    {"kind": "allocate", "block": 2, "request": 0}])"));

  // Step 1: request 1 finds request 0's first two blocks in the prefix cache (held: retained) and
  // prefills the rest into block 3; request 0 grows into block 4.
  BlockSnapshot s2;
  s2.admitted[1] = {{0, 1, 3}, 2, false};
  s2.tables = {{0, {0, 1, 2, 4}}, {1, {0, 1, 3}}};
  s2.refcounts = {2, 2, 1, 1, 1, 0, 0, 0};
  CHECK(events_json(s1, s2) == json::parse(R"([
    {"kind": "adopt", "block": 0, "request": 1},
    {"kind": "adopt", "block": 1, "request": 1},
    {"kind": "allocate", "block": 3, "request": 1},
    {"kind": "allocate", "block": 4, "request": 0}])"));

  // Step 2: request 2 is forked from request 1 (it shares all three blocks) and its first write
  // copies the shared, partly filled block 3 into 5; request 1 grows into 6; request 0 takes block
  // 7 in its last step and finishes: the table it released is in no snapshot's tables. Its full
  // blocks 2 and 4 stay in the prefix cache, free.
  BlockSnapshot s3;
  s3.admitted[2] = {{0, 1, 3}, 3, true};
  s3.released[0] = {0, 1, 2, 4, 7};
  s3.tables = {{1, {0, 1, 3, 6}}, {2, {0, 1, 5}}};
  s3.refcounts = {2, 2, 0, 1, 0, 1, 1, 0};
  s3.cached = {2, 4};
  CHECK(events_json(s2, s3) == json::parse(R"([
    {"kind": "share", "block": 0, "request": 2},
    {"kind": "share", "block": 1, "request": 2},
    {"kind": "share", "block": 3, "request": 2},
    {"kind": "allocate", "block": 7, "request": 0},
    {"kind": "allocate", "block": 6, "request": 1},
    {"kind": "copy", "block": 5, "from": 3, "request": 2},
    {"kind": "free", "block": 0, "request": 0},
    {"kind": "free", "block": 1, "request": 0},
    {"kind": "free", "block": 2, "request": 0},
    {"kind": "free", "block": 4, "request": 0},
    {"kind": "free", "block": 7, "request": 0}])"));
  CHECK(block_holders(s3) == std::vector<std::vector<int>>{{1, 2}, {1, 2}, {}, {1}, {}, {2}, {1}, {}});

  // Step 3: request 3 adopts blocks 0 and 1 (held: retained) and 2 (free, cached: reclaimed), and
  // takes free block 7; the pool runs out and request 2, the newest running, is preempted.
  BlockSnapshot s4;
  s4.admitted[3] = {{0, 1, 2, 7}, 3, false};
  s4.released[2] = {0, 1, 5};
  s4.preempted = {2};
  s4.tables = {{1, {0, 1, 3, 6}}, {3, {0, 1, 2, 7}}};
  s4.refcounts = {2, 2, 1, 1, 0, 0, 1, 1};
  s4.cached = {4};
  CHECK(events_json(s3, s4) == json::parse(R"([
    {"kind": "adopt", "block": 0, "request": 3},
    {"kind": "adopt", "block": 1, "request": 3},
    {"kind": "adopt", "block": 2, "request": 3},
    {"kind": "allocate", "block": 7, "request": 3},
    {"kind": "preempt", "request": 2, "blocks": [0, 1, 5]}])"));

  // Step 4: nothing changes in the tables: no event.
  BlockSnapshot s5 = s4;
  s5.admitted.clear();
  s5.released.clear();
  s5.preempted.clear();
  CHECK(events_json(s4, s5) == json::array());

  // Step 5: request 2 is readmitted and recomputes everything into free blocks 4 and 5 (4 was
  // cached: taking it through allocate is not an adoption); request 1 finishes: it lets go of
  // blocks 0 and 1, which request 3 still holds.
  BlockSnapshot s6;
  s6.admitted[2] = {{4, 5}, 0, false};
  s6.released[1] = {0, 1, 3, 6};
  s6.tables = {{2, {4, 5}}, {3, {0, 1, 2, 7}}};
  s6.refcounts = {1, 1, 1, 0, 1, 1, 0, 1};
  s6.cached = {3, 6};
  CHECK(events_json(s5, s6) == json::parse(R"([
    {"kind": "allocate", "block": 4, "request": 2},
    {"kind": "allocate", "block": 5, "request": 2},
    {"kind": "free", "block": 0, "request": 1},
    {"kind": "free", "block": 1, "request": 1},
    {"kind": "free", "block": 3, "request": 1},
    {"kind": "free", "block": 6, "request": 1}])"));
  CHECK(block_holders(s6) == std::vector<std::vector<int>>{{3}, {3}, {3}, {}, {2}, {2}, {}, {3}});
}

TEST_CASE("BlockTrace: a snapshot that disagrees with the pool, or a change no event explains, is refused", "[unit][paged]") {
  BlockSnapshot s;
  s.tables = {{0, {1}}, {1, {1, 2}}};
  s.refcounts = {0, 2, 1};
  CHECK(block_holders(s) == std::vector<std::vector<int>>{{}, {0, 1}, {1}});

  BlockSnapshot wrong_count = s;
  wrong_count.refcounts = {0, 1, 1};  // block 1 is listed by two tables
  CHECK_THROWS_AS(block_holders(wrong_count), std::logic_error);

  BlockSnapshot cached_and_held = s;
  cached_and_held.cached = {2};  // held by request 1, yet listed as a free cached block
  CHECK_THROWS_AS(block_holders(cached_and_held), std::logic_error);

  BlockSnapshot outside = s;
  outside.tables[2] = {3};  // the pool has blocks 0 … 2
  CHECK_THROWS_AS(block_holders(outside), std::logic_error);

  BlockSnapshot vanished = s;  // request 1's table gone with no release recorded
  vanished.tables.erase(1);
  vanished.refcounts = {0, 1, 0};
  CHECK_THROWS_AS(block_events(s, vanished), std::logic_error);

  BlockSnapshot shrank = s;  // a held table never loses a block
  shrank.tables[1] = {1};
  shrank.refcounts = {0, 2, 0};
  CHECK_THROWS_AS(block_events(s, shrank), std::logic_error);

  BlockSnapshot preempted_but_holding = s;
  preempted_but_holding.released[1] = {1, 2};
  preempted_but_holding.preempted = {1};
  CHECK_THROWS_AS(block_events(s, preempted_but_holding), std::logic_error);
}
