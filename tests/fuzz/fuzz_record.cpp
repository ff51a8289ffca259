// Fuzz harness: the run-record reader (what stage_diff reads) on arbitrary bytes.
//
// RunRecord::parse is what RunRecord::read runs on the opened file. Malformed input must be refused
// with std::runtime_error ("NAME: not a run record (...)"); a record it accepts is compared with
// itself and with an empty record the way stage_diff compares two runs, and written out again.
// Besides not crashing, it checks what stage_diff relies on:
//   a record compares as identical with itself;
//   an accepted record survives a round trip: written as JSON and read back, it is the same
//   record (so a record the reader accepts is one the writer could have written).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "app/run_record.hpp"

namespace {

#define FUZZ_CHECK(condition)                                                           \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      std::fprintf(stderr, "fuzz_record: property failed: %s (%s:%d)\n", #condition,    \
                   __FILE__, __LINE__);                                                 \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  infer::RunRecord record;
  try {
    record = infer::RunRecord::parse(in, "fuzz.json");
  } catch (const std::runtime_error&) {
    return 0;  // refused with one line: what a malformed record should get
  }

  const infer::RunComparison self = infer::compare_runs(record, record);
  FUZZ_CHECK(self.same_model && self.same_prompt && self.setting_differences.empty());
  FUZZ_CHECK(self.first_divergence < 0);
  (void)infer::compare_runs(record, infer::RunRecord{});
  (void)infer::compare_runs(infer::RunRecord{}, record);
  (void)record.tokens();

  // The round trip, through the same text write() puts in the file.
  const std::string written = record.to_json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::istringstream again(written);
  infer::RunRecord reread;
  try {
    reread = infer::RunRecord::parse(again, "rewritten.json");
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "fuzz_record: an accepted record, written again, is refused: %s\n", e.what());
    std::abort();
  }
  FUZZ_CHECK(reread.to_json() == record.to_json());
  return 0;
}
