// Chapter 04's layer, file 1: a request, and the clock it is timed by.
//
// A server does not run "a prompt"; it runs requests that arrive at different times, each asking
// for its own number of tokens. What a user feels is measured per request:
//
//   time to first token (TTFT) = first_token − arrival     how long before anything streams back
//   latency                    = completed − arrival       how long until the whole answer is back
//
// Everything is in seconds on one Clock. The real runs use a WallClock; the simulation and the
// unit tests use a VirtualClock that moves only when a step says how long it took, so the same
// scheduling code runs against the model, against a cost model, and against a test's fake.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "measure/timing.hpp"

namespace infer {

struct Request {
  int id = 0;
  std::vector<int32_t> prompt;  // token ids
  int max_new_tokens = 0;       // the request is finished after this many generated tokens
  double arrival = 0;           // seconds after the start of the run

  // Recorded while it is served (−1: not yet).
  std::vector<int32_t> tokens;  // generated so far
  double admitted = -1;         // entered a slot (its prefill is in the next step)
  double first_token = -1;      // end of the step that produced its first token
  double finished = -1;         // end of the step that produced its last token
  double completed = -1;        // handed back to its user: `finished` under continuous batching,
                                // the end of the whole batch under static batching

  bool done() const { return std::ssize(tokens) >= max_new_tokens; }
  double ttft() const { return first_token - arrival; }
  double latency() const { return completed - arrival; }
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;
  // Nothing to do before time t (the next arrival): a real server idles, a simulation jumps.
  virtual void wait_until(double t) = 0;
};

// Seconds since construction; waiting sleeps.
class WallClock : public Clock {
 public:
  double now() const override { return watch_.seconds(); }
  void wait_until(double t) override {
    const double wait = t - now();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }

 private:
  Stopwatch watch_;
};

// Time that moves only when told: advance() by a step's cost, wait_until() jumps.
class VirtualClock : public Clock {
 public:
  double now() const override { return now_; }
  void wait_until(double t) override {
    if (t > now_) now_ = t;
  }
  void advance(double seconds) { now_ += seconds; }

 private:
  double now_ = 0;
};

}  // namespace infer
