// medians_in_turn: the pieces run in turn, round after round, and each gets its own median.
#include "catch_compat.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "measure/timing.hpp"

using infer::medians_in_turn;

TEST_CASE("medians_in_turn runs one of each piece per round, a warm-up round first", "[timing]") {
  std::string order;
  const std::vector<std::function<void()>> work = {[&] { order += 'a'; }, [&] { order += 'b'; },
                                                   [&] { order += 'c'; }};
  const std::vector<double> medians = medians_in_turn(2, work, [&] { order += '|'; });
  CHECK(order == "abc|abc|abc|");  // warm-up, then 2 kept rounds
  CHECK(medians.size() == 3);
}

TEST_CASE("medians_in_turn gives each piece its own median", "[timing]") {
  using namespace std::chrono_literals;
  int calls = 0;
  const std::vector<std::function<void()>> work = {
      [] {},
      // the warm-up and one kept round are slow, two of three kept rounds fast: the median is fast
      [&] { std::this_thread::sleep_for(++calls <= 2 ? 60ms : 15ms); },
  };
  const std::vector<double> medians = medians_in_turn(3, work);
  CHECK(calls == 4);
  CHECK(medians[0] < 0.010);
  CHECK(medians[1] >= 0.015);
  CHECK(medians[1] < 0.055);
}
