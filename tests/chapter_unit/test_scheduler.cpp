// Chapter 04's batching policies without a model: a fake StepEngine on a VirtualClock.
//
// The fake charges one second per step and "generates" token id·1000 + k for the k-th step a
// request takes part in, so a test can see that every request got its own rows and nobody
// else's. It also records what a real engine would care about: which requests hold a slot, and
// how many at most.
#include "catch_compat.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "scheduler.hpp"
#include "simulate.hpp"
#include "static_batcher.hpp"
#include "workload.hpp"

using namespace infer;

namespace {

class FakeEngine : public StepEngine {
 public:
  explicit FakeEngine(VirtualClock& clock) : clock_(clock) {}
  void admit(const Request& r, int new_tokens) override {
    REQUIRE(held_.count(r.id) == 0);
    held_[r.id] = 0;
    admit_order.push_back(r.id);
    max_held = std::max(max_held, held_.size());
  }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    std::vector<int32_t> out;
    for (const Request* r : batch) {
      REQUIRE(held_.count(r->id) == 1);  // only admitted requests are stepped
      out.push_back(r->id * 1000 + held_[r->id]++);
    }
    batches.emplace_back();
    for (const Request* r : batch) batches.back().push_back(r->id);
    clock_.advance(1.0);
    return out;
  }
  void release(const Request& r) override {
    REQUIRE(held_.erase(r.id) == 1);
    release_order.push_back(r.id);
  }
  std::size_t held() const { return held_.size(); }

  std::vector<int> admit_order, release_order;
  std::vector<std::vector<int>> batches;  // request ids of every step
  std::size_t max_held = 0;

 private:
  VirtualClock& clock_;
  std::map<int, int32_t> held_;  // id → steps taken
};

std::vector<Request> make_requests(const std::vector<int>& lengths, const std::vector<double>& arrivals = {}) {
  std::vector<Request> out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    Request r;
    r.id = static_cast<int>(i);
    r.prompt = {1, 2, 3};
    r.max_new_tokens = lengths[i];
    r.arrival = arrivals.empty() ? 0.0 : arrivals[i];
    out.push_back(r);
  }
  return out;
}

// Every request has exactly its tokens, and they are its own rows: id·1000 + 0, 1, 2, …
void require_own_tokens(const std::vector<Request>& requests) {
  for (const Request& r : requests) {
    INFO("request " << r.id);
    REQUIRE(std::ssize(r.tokens) == r.max_new_tokens);
    for (std::size_t k = 0; k < r.tokens.size(); ++k) REQUIRE(r.tokens[k] == r.id * 1000 + static_cast<int32_t>(k));
    REQUIRE(r.completed >= r.finished);
    REQUIRE(r.finished >= r.first_token);
    REQUIRE(r.first_token > r.admitted);
    REQUIRE(r.admitted >= r.arrival);
  }
}

}  // namespace

TEST_CASE("Scheduler admits in arrival order into free slots", "[unit][scheduler]") {
  VirtualClock clock;
  FakeEngine engine(clock);
  Scheduler scheduler(2, engine, clock);
  // Submitted out of order: the queue is by arrival time, ties in submission order.
  std::vector<Request> requests = make_requests({3, 1, 2, 2}, {0.0, 0.0, 0.5, 0.5});
  for (int i : {2, 0, 3, 1}) scheduler.submit(requests[i]);

  const StepLog first = scheduler.step();
  CHECK(first.admitted == 2);
  CHECK(first.batch == 2);
  CHECK(first.tokens_fed == 6);  // two prompts of 3 tokens
  CHECK(engine.admit_order == std::vector<int>{0, 1});
  CHECK(scheduler.waiting() == 2);
  scheduler.run();
  CHECK(engine.admit_order == std::vector<int>{0, 1, 2, 3});
  require_own_tokens(requests);
}

TEST_CASE("Scheduler: a finished request leaves at once and its slot is refilled at the next step", "[unit][scheduler]") {
  VirtualClock clock;
  FakeEngine engine(clock);
  Scheduler scheduler(2, engine, clock);
  std::vector<Request> requests = make_requests({10, 2, 5});
  for (Request& r : requests) scheduler.submit(r);

  scheduler.step();  // t 0 → 1: requests 0 and 1 prefill, first tokens
  const StepLog second = scheduler.step();  // t 1 → 2: request 1 has its 2 tokens
  CHECK(second.retired == 1);
  CHECK(requests[1].finished == 2.0);
  CHECK(requests[1].completed == 2.0);  // handed back now, not when request 0 ends
  CHECK(engine.release_order == std::vector<int>{1});
  CHECK(scheduler.occupied() == 1);
  const StepLog third = scheduler.step();  // request 2 takes the free slot, prefill beside 0's decode
  CHECK(third.admitted == 1);
  CHECK(third.batch == 2);
  CHECK(third.tokens_fed == 3 + 1);
  CHECK(requests[2].admitted == 2.0);
  CHECK(requests[2].first_token == 3.0);
  // The slot log (the report's timeline): request 2 in request 1's slot, prefilling beside 0's decode.
  REQUIRE(second.slots.size() == 2);
  CHECK(second.slots[1].request == 1);
  CHECK(second.slots[1].kind == SlotUse::decode);
  REQUIRE(third.slots.size() == 2);
  CHECK(third.slots[0].request == 0);
  CHECK(third.slots[0].kind == SlotUse::decode);
  CHECK(third.slots[1].request == 2);
  CHECK(third.slots[1].kind == SlotUse::prefill);
  scheduler.run();
  // Request 2 is done at t = 7: slot 1 stands idle while request 0 finishes (nothing waits).
  const StepLog& last = scheduler.log().back();
  CHECK(last.slots[0].request == 0);
  CHECK(last.slots[1].kind == SlotUse::idle);
  CHECK(requests[2].completed == 2.0 + 5);
  CHECK(requests[0].completed == 10.0);
  require_own_tokens(requests);
}

TEST_CASE("Scheduler loses no request and never exceeds its slots", "[unit][scheduler]") {
  std::mt19937_64 rng(7);
  std::vector<int> lengths;
  std::vector<double> arrivals;
  double t = 0;
  for (int i = 0; i < 200; ++i) {
    lengths.push_back(1 + static_cast<int>(rng() % 40));
    t += static_cast<double>(rng() % 4);  // bursts and gaps, several arrivals per step
    arrivals.push_back(t);
  }
  for (int slots : {1, 3, 8}) {
    INFO(slots << " slots");
    VirtualClock clock;
    FakeEngine engine(clock);
    Scheduler scheduler(slots, engine, clock);
    std::vector<Request> requests = make_requests(lengths, arrivals);
    for (Request& r : requests) scheduler.submit(r);
    scheduler.run();
    CHECK(scheduler.idle());
    CHECK(scheduler.retired().size() == requests.size());
    CHECK(engine.held() == 0);
    CHECK(engine.max_held <= static_cast<std::size_t>(slots));
    for (const StepLog& s : scheduler.log()) {
      REQUIRE(s.batch >= 1);
      REQUIRE(s.batch <= slots);
      REQUIRE(s.useful == s.batch);  // no padding under continuous batching
    }
    // Admission is first come, first served.
    std::vector<int> ids(requests.size());
    std::iota(ids.begin(), ids.end(), 0);
    CHECK(engine.admit_order == ids);
    // No request appears twice in a step (arrival before admission: require_own_tokens).
    for (const auto& batch : engine.batches) REQUIRE(std::set<int>(batch.begin(), batch.end()).size() == batch.size());
    require_own_tokens(requests);
    const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
    CHECK(summarize(requests, scheduler.log()).tokens == total);
  }
}

TEST_CASE("Scheduler waits for the next arrival when idle", "[unit][scheduler]") {
  VirtualClock clock;
  FakeEngine engine(clock);
  Scheduler scheduler(4, engine, clock);
  std::vector<Request> requests = make_requests({2, 1}, {5.0, 20.0});
  for (Request& r : requests) scheduler.submit(r);
  scheduler.step();
  CHECK(requests[0].admitted == 5.0);  // the clock jumped to its arrival
  CHECK(requests[1].admitted < 0);     // not arrived yet: not admitted
  scheduler.run();
  CHECK(requests[0].completed == 7.0);
  CHECK(requests[1].admitted == 20.0);
  CHECK(requests[1].latency() == 1.0);
  CHECK(requests[1].ttft() == 1.0);
}

TEST_CASE("Scheduler refuses bad input", "[unit][scheduler]") {
  VirtualClock clock;
  FakeEngine engine(clock);
  CHECK_THROWS_AS(Scheduler(0, engine, clock), std::invalid_argument);
  Scheduler scheduler(1, engine, clock);
  Request r;
  r.max_new_tokens = 0;
  CHECK_THROWS_AS(scheduler.submit(r), std::invalid_argument);
  CHECK(scheduler.step().batch == 0);  // idle: nothing to do
}

TEST_CASE("StaticBatcher runs each batch until its longest member, padding the finished", "[unit][scheduler]") {
  VirtualClock clock;
  FakeEngine engine(clock);
  StaticBatcher batcher(3, engine, clock);
  std::vector<Request> requests = make_requests({2, 7, 1, 4, 4});
  for (Request& r : requests) batcher.submit(r);
  batcher.run();

  REQUIRE(batcher.batches().size() == 2);
  CHECK(batcher.batches()[0] == std::vector<int>{0, 1, 2});
  CHECK(batcher.batches()[1] == std::vector<int>{3, 4});
  CHECK(batcher.log().size() == 7 + 4);
  for (std::size_t s = 0; s < 7; ++s) CHECK(batcher.log()[s].batch == 3);  // finished members stay
  // Everyone in a batch is handed back when the batch ends; each finished when it finished.
  CHECK(requests[0].finished == 2.0);
  CHECK(requests[2].finished == 1.0);
  for (int i : {0, 1, 2}) CHECK(requests[i].completed == 7.0);
  for (int i : {3, 4}) CHECK(requests[i].completed == 11.0);
  const ServeSummary s = summarize(requests, batcher.log());
  CHECK(s.padding_rows == (7 - 2) + (7 - 1) + 0);
  // The slot log (the report's timeline): rows 0 … 2 of the batch; padding once a member is done;
  // the short second batch leaves its third row idle.
  int padding = 0;
  for (const StepLog& step : batcher.log()) {
    REQUIRE(step.slots.size() == 3);
    for (const SlotUse& u : step.slots) padding += u.kind == SlotUse::padding;
  }
  CHECK(padding == s.padding_rows);
  CHECK(batcher.log()[0].slots[2].kind == SlotUse::prefill);
  CHECK(batcher.log()[1].slots[2].kind == SlotUse::padding);  // request 2 wanted one token
  CHECK(batcher.log()[1].slots[1].kind == SlotUse::decode);
  CHECK(batcher.log()[7].slots[0].request == 3);
  CHECK(batcher.log()[7].slots[2].kind == SlotUse::idle);
  CHECK(s.tokens == 2 + 7 + 1 + 4 + 4);
  CHECK(engine.max_held == 3);
  CHECK(engine.held() == 0);
  // A padding row still steps its sequence (its own rows, its own count), but the token is dropped.
  require_own_tokens(requests);
}

TEST_CASE("StaticBatcher starts a batch only when its last member has arrived", "[unit][scheduler]") {
  VirtualClock clock;
  FakeEngine engine(clock);
  StaticBatcher batcher(2, engine, clock);
  std::vector<Request> requests = make_requests({1, 1}, {0.0, 4.0});
  for (Request& r : requests) batcher.submit(r);
  batcher.run();
  CHECK(requests[0].admitted == 4.0);
  CHECK(requests[0].latency() == 5.0);
  CHECK(requests[1].latency() == 1.0);
}

TEST_CASE("On a skewed workload continuous batching beats static batching in the simulation", "[unit][scheduler]") {
  const std::vector<int> lengths = draw_output_lengths(64, kWorkloadSeed, 18, 1.05, 256);
  std::vector<Request> requests = make_requests(lengths);
  const StepCostModel cost({1, 8}, {1.0, 1.0});  // every step costs the same
  const PolicyRun st = simulate(Policy::static_batches, requests, 8, cost);
  const PolicyRun co = simulate(Policy::continuous, requests, 8, cost);
  CHECK(st.summary.tokens == co.summary.tokens);
  CHECK(co.summary.throughput > st.summary.throughput);
  CHECK(co.summary.mean_latency < st.summary.mean_latency);
  CHECK(co.summary.padding_rows == 0);
  CHECK(st.summary.padding_rows > 0);
  // Static: the steps are the sum over batches of each batch's longest member.
  int64_t expected = 0;
  for (std::size_t b = 0; b < 64; b += 8) expected += *std::max_element(lengths.begin() + static_cast<long>(b), lengths.begin() + static_cast<long>(b) + 8);
  CHECK(st.summary.steps == expected);
}

TEST_CASE("StepCostModel interpolates the sweep and extends its last segment", "[unit][scheduler]") {
  const StepCostModel cost({1, 2, 4}, {0.1, 0.2, 0.6});
  CHECK(cost(1) == Approx(0.1));
  CHECK(cost(0.5) == Approx(0.1));
  CHECK(cost(1.5) == Approx(0.15));
  CHECK(cost(3) == Approx(0.4));
  CHECK(cost(6) == Approx(1.0));
  CHECK_THROWS_AS(StepCostModel({2, 1}, {0.1, 0.2}), std::invalid_argument);
  CHECK_THROWS_AS(StepCostModel({}, {}), std::invalid_argument);
}

TEST_CASE("The default workload has the course's shape", "[unit][scheduler]") {
  const std::vector<int> lengths = draw_output_lengths(64, kWorkloadSeed, 18, 1.05, 256);
  std::vector<int> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  CHECK((sorted[31] + sorted[32]) / 2.0 == 18.0);
  CHECK(sorted.back() == 231);
  CHECK(std::accumulate(lengths.begin(), lengths.end(), 0) == 1873);
  CHECK(draw_output_lengths(64, kWorkloadSeed, 18, 1.05, 256) == lengths);  // seeded: the same every time
}
