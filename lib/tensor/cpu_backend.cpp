// Which CPU backend the operations run (declared in tensor/ops.hpp). Apart from the dispatch in
// ops.cpp, so that a program that only names a backend (stage_diff reading a run record) links
// none of the operations.
#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer {
namespace {

// The choice, or -1 until the first cpu_backend() or set_cpu_backend(). Atomic: a test's
// threads, or a parallel region's, may ask while the main thread chooses.
std::atomic<int> g_backend{-1};

}  // namespace

std::string_view cpu_backend_name(CpuBackend backend) { return backend == CpuBackend::reference ? "reference" : "fast"; }

std::optional<CpuBackend> parse_cpu_backend(std::string_view name) {
  for (const CpuBackend b : {CpuBackend::fast, CpuBackend::reference})
    if (name == cpu_backend_name(b)) return b;
  return std::nullopt;
}

void set_cpu_backend(CpuBackend backend) { g_backend = static_cast<int>(backend); }

CpuBackend cpu_backend() {
  int chosen = g_backend.load();
  if (chosen < 0) {
    const char* env = std::getenv("INFER_BACKEND");
    CpuBackend from_env = CpuBackend::fast;
    if (env != nullptr && *env != '\0') {
      const std::optional<CpuBackend> parsed = parse_cpu_backend(env);
      if (!parsed) throw std::runtime_error(fmt::format("INFER_BACKEND={}: expected fast or reference", env));
      from_env = *parsed;
    }
    // A set_cpu_backend() in between wins: the environment only fills the empty choice.
    g_backend.compare_exchange_strong(chosen, static_cast<int>(from_env));
    chosen = g_backend.load();
  }
  return static_cast<CpuBackend>(chosen);
}

}  // namespace infer
