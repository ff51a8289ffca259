#include "paging_tables.hpp"

#include <numeric>

#include <fmt/format.h>

namespace infer::paging {

std::string mb(double bytes) { return fmt::format("{:.1f}", bytes / 1e6); }

int64_t total_new_tokens(const std::vector<Request>& requests) {
  return std::accumulate(requests.begin(), requests.end(), int64_t{0}, [](int64_t a, const Request& r) { return a + r.max_new_tokens; });
}

int same_tokens(const std::vector<Request>& a, const std::vector<Request>& b) {
  int same = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) same += a[i].tokens == b[i].tokens;
  return same;
}

}  // namespace infer::paging
