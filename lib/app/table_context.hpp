// What the tables of one run share: the loaded model and its flags, the record's figures, and
// the line naming the machine, printed beside every timing. A binary with more to share (its
// own settings, a measured peak) derives from it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"

namespace infer {

struct TableContext {
  LoadedModel& m;
  const CommonOptions& o;
  nlohmann::json& figures;
  std::string machine_line;  // "2 threads, AVX2 kernels, read bandwidth 9.8 GB/s"

  void emit(const Table& table) const { table.emit(o.csv_path); }  // prints it and appends it to --csv
};

// "2 threads, AVX2 kernels, read bandwidth 9.8 GB/s": the threads and SIMD kernels in use and the
// measured bandwidth; with the reference backend "reference backend, one thread, read bandwidth …".
std::string machine_line(const BandwidthResult& bandwidth);

}  // namespace infer
