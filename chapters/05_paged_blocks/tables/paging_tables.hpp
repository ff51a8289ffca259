// What chapter 05's tables share: the flags that shape the studies, the loaded model, the machine
// line, the bytes of K and V per position; and three small helpers the tables print with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "04_batching/request.hpp"
#include "app/table_context.hpp"
#include "block_pool.hpp"

namespace infer::paging {

struct Settings {
  int requests = 32;
  int slots = 8;
  int block_size = kDefaultBlockSize;
  int max_len = 256;         // the server's cap on new tokens: what a contiguous cache must reserve
  double budget_mib = 0;     // table 2's budget; 0: the contiguous reservation of `slots` sequences
  int system_tokens = 200;
  int prefix_requests = 32;
  int prefix_new = 8;
  int samples = 4;
  int sample_tokens = 24;
  float sample_temp = 0.8f;
  int64_t cached = 128;      // table 5: cache length of each sequence in the timed step
  int repeats = 9;
  int budget_runs = 3;       // table 2: runs of each layout, in turn (the median time is reported)
};

struct Context : TableContext {
  const Settings& s;
  std::size_t bytes_per_token;  // K and V of one position, all layers
};

// The block sizes tables 1 and 5 compare, whatever --block-size says.
inline const std::vector<int> kBlockSizes = {8, 16, 32};

// Bytes as megabytes with one decimal, "9.8".
std::string mb(double bytes);
// New tokens the requests will generate, all together.
int64_t total_new_tokens(const std::vector<Request>& requests);
// How many requests, position by position, generated the same tokens in two runs.
int same_tokens(const std::vector<Request>& a, const std::vector<Request>& b);

}  // namespace infer::paging
