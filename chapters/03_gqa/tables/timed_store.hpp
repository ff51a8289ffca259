// A KvStore that passes every call to another and adds up the seconds spent in them: the time
// attention takes inside a real forward pass (writing the step's k, v into the cache, then
// ops::attention over it), measured where it runs — not estimated from a separate call on
// made-up shapes. The stopwatch's own cost (a clock read before and after each of the 30 layers'
// calls) is well under a microsecond per call. Table 10 and bench_decode split a step with it.
#pragma once

#include <utility>

#include "measure/timing.hpp"
#include "model/kv_store.hpp"

namespace infer {

class TimedStore : public KvStore {
 public:
  explicit TimedStore(KvStore& inner) : inner_(inner) {}
  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    Stopwatch clock;
    inner_.attend(layer, pos0, q, k, v, out);
    seconds_ += clock.seconds();
  }
  double take_seconds() { return std::exchange(seconds_, 0.0); }  // since the last call

 private:
  KvStore& inner_;
  double seconds_ = 0.0;
};

}  // namespace infer
