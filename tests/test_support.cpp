#include "test_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "catch_compat.hpp"

namespace infer::test {

LoadedModel* default_model() {
  static std::unique_ptr<LoadedModel> model;
  if (model) return model.get();
  CommonOptions options;
  options.threads = 2;
  if (!std::filesystem::exists(options.model_path)) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL("model missing: run data/fetch_model.sh");
    return nullptr;
  }
  model = std::make_unique<LoadedModel>(load_model(options));
  return model.get();
}

}  // namespace infer::test
