// Width pruning (chapter 08's width_importance.hpp) on tiny random students: keeping every group
// and neuron changes nothing, bit for bit; a student cut to fewer key/value groups and neurons
// computes what the full student computes with the removed parts masked out (their W_o and W_down
// columns zeroed: an independent computation, in double precision); a dead neuron and a dead group
// score 0 and go first; the cut student saves as a GGUF that lib reads although its heads are no
// longer d / H wide; and the parameter match of the chapter's table on the course model's shape.
// With the real model: three of its layers at full width are themselves, bit for bit, and cut to
// 2 of 3 groups and 1,024 neurons they save as a file that load_model reads back.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "app/cli.hpp"
#include "gguf/gguf_file.hpp"
#include "grouped_kv_cache.hpp"
#include "student.hpp"
#include "student_gguf.hpp"
#include "test_support.hpp"
#include "tiny_model.hpp"
#include "width_importance.hpp"

using namespace infer;
using namespace infer::train;
using infer::test::TestRng;

namespace {

template <class T>
std::vector<T> logits_of(Student<T>& s, const std::vector<int32_t>& tokens) {
  const T* p = s.forward(tokens, 1, static_cast<int>(tokens.size()));
  return {p, p + tokens.size() * static_cast<std::size_t>(s.config().vocab_size)};
}

std::vector<float> lib_logits(Llama& model, const std::vector<int32_t>& tokens) {
  GroupedKvCache cache(model.config(), std::ssize(tokens));
  return model.forward(tokens, 0, cache, /*all_logits=*/true).to_vector();
}

// A cut of the tiny model (2 of 4 query heads in 1 of 2 groups, 10 of 24 neurons), other parts per layer.
WidthCut tiny_cut(const LlamaConfig& c) {
  WidthCut cut;
  TestRng rng(21);
  for (int l = 0; l < c.n_layers; ++l) {
    cut.groups.push_back({l % 2 == 0 ? 1 : 0});
    std::vector<int> all(c.d_ff);
    for (int j = 0; j < c.d_ff; ++j) all[j] = j;
    std::shuffle(all.begin(), all.end(), rng.engine);
    all.resize(10);
    std::sort(all.begin(), all.end());
    cut.neurons.push_back(all);
  }
  return cut;
}

}  // namespace

TEST_CASE("a width-pruned student that keeps every group and neuron is the student, bit for bit", "[training][width]") {
  const LlamaConfig c = infer::test::tiny_llama(3);
  Student<float> s = Student<float>::random(c, 11, 0.5);
  Student<float> same = width_pruned(s, full_width(c));
  CHECK(same.config().n_heads == c.n_heads);
  CHECK(same.config().d_ff == c.d_ff);
  CHECK(same.params == s.params);
  const std::vector<int32_t> tokens = TestRng(3).tokens(12, c.vocab_size);
  CHECK(logits_of(same, tokens) == logits_of(s, tokens));
  Llama a = to_llama(same), b = to_llama(s);
  CHECK(lib_logits(a, tokens) == lib_logits(b, tokens));
}

TEST_CASE("a student cut to fewer groups and neurons computes the full one with those parts masked", "[training][width]") {
  const LlamaConfig c = infer::test::tiny_llama(3);  // d 16, 4 query heads in 2 groups of 2, head size 4, MLP 24
  Student<double> full = Student<double>::random(c, 12, 0.5);
  const WidthCut cut = tiny_cut(c);
  Student<double> cut_student = width_pruned(full, cut);
  const LlamaConfig& w = cut_student.config();
  CHECK(w.n_heads == 2);
  CHECK(w.n_kv_heads == 1);
  CHECK(w.head_dim == c.head_dim);
  CHECK(w.d_ff == 10);
  CHECK(w.d_model == c.d_model);
  CHECK(static_cast<int64_t>(cut_student.params.size()) == w.parameter_count() - int64_t{c.vocab_size} * c.d_model);

  // The same function by hand: the full student with the removed heads' W_o columns and the removed
  // neurons' W_down columns set to zero, so that they add nothing to the stream.
  Student<double> masked = full;
  const int r = c.n_heads / c.n_kv_heads, D = c.head_dim, d = c.d_model;
  for (int l = 0; l < c.n_layers; ++l) {
    const BlockTensors<double> b = masked.block(l, masked.params.data());
    for (int h = 0; h < c.n_heads; ++h)
      if (std::find(cut.groups[l].begin(), cut.groups[l].end(), h / r) == cut.groups[l].end())
        for (int row = 0; row < d; ++row)
          for (int i = 0; i < D; ++i) b.wo[int64_t{row} * c.q_width() + h * D + i] = 0.0;
    for (int j = 0; j < c.d_ff; ++j)
      if (std::find(cut.neurons[l].begin(), cut.neurons[l].end(), j) == cut.neurons[l].end())
        for (int row = 0; row < d; ++row) b.w_down[int64_t{row} * c.d_ff + j] = 0.0;
  }
  const std::vector<int32_t> tokens = TestRng(4).tokens(14, c.vocab_size);
  const std::vector<double> got = logits_of(cut_student, tokens), want = logits_of(masked, tokens);
  const std::vector<double> unmasked = logits_of(full, tokens);
  double diff = 0, scale = 0, changed = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
    changed = std::max(changed, std::abs(unmasked[i] - want[i]));
  }
  std::printf("width cut vs masked full student: max |difference| %.2e of logits up to %.2f (the cut itself moves them by %.2f)\n",
              diff, scale, changed);
  CHECK(diff <= 1e-12 * scale);
  CHECK(changed > 1e-3);  // the cut is not the identity
}

TEST_CASE("width importance: a dead neuron and a dead group score 0 and go first", "[training][width]") {
  const LlamaConfig c = infer::test::tiny_llama(2);
  Student<float> s = Student<float>::random(c, 13, 0.5);
  const int d = c.d_model, D = c.head_dim;
  {
    const BlockTensors<float> b1 = s.block(1, s.params.data());
    std::fill_n(b1.w_up + 7 * d, d, 0.0f);  // neuron 7 of layer 1: silu(g)·0 = 0 on every token
    const BlockTensors<float> b0 = s.block(0, s.params.data());
    std::fill_n(b0.wv + 1 * D * d, D * d, 0.0f);  // value head 1 of layer 0: its two query heads output 0
  }
  const std::vector<int32_t> tokens = TestRng(5).tokens(2 * 8, c.vocab_size);
  const WidthImportance imp = width_importance(s, tokens, 8);
  REQUIRE(imp.neuron.size() == 2);
  REQUIRE(imp.group.size() == 2);
  CHECK(imp.neuron[1][7] == 0.0);
  for (int j = 0; j < c.d_ff; ++j)
    if (j != 7) CHECK(imp.neuron[1][j] > 0.0);
  CHECK(imp.group[0][1] == 0.0);
  CHECK(imp.group[0][0] > 0.0);
  CHECK(imp.group[1][0] > 0.0);
  CHECK(imp.group[1][1] > 0.0);

  const WidthCut most = width_cut(imp, 1, c.d_ff - 1, WidthChoice::most_important);
  CHECK(most.groups[0] == std::vector<int>{0});
  CHECK(std::find(most.neurons[1].begin(), most.neurons[1].end(), 7) == most.neurons[1].end());
  CHECK(std::is_sorted(most.neurons[0].begin(), most.neurons[0].end()));
  const WidthCut least = width_cut(imp, 1, 1, WidthChoice::least_important);
  CHECK(least.groups[0] == std::vector<int>{1});
  CHECK(least.neurons[1] == std::vector<int>{7});
  const WidthCut random = width_cut(imp, 1, 12, WidthChoice::random, 7);
  CHECK(random.neurons[0].size() == 12);
  CHECK(width_cut(imp, 1, 12, WidthChoice::random, 7).neurons == random.neurons);  // the seed decides
}

TEST_CASE("a width-pruned student is a GGUF that lib reads although its heads are not d / H wide", "[training][width]") {
  const LlamaConfig c = infer::test::tiny_llama(2);
  Student<float> s = width_pruned(Student<float>::random(c, 14, 0.5), tiny_cut(c));  // 2 heads of 4 in d = 16
  REQUIRE(s.config().d_model / s.config().n_heads != s.config().head_dim);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ch08_tiny_width_" + std::to_string(::getpid()) + ".gguf")).string();
  write_student_gguf(path, s);
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const LlamaConfig read = LlamaConfig::from_gguf(file);
  CHECK(read.head_dim == c.head_dim);
  CHECK(read.n_heads == 2);
  CHECK(read.n_kv_heads == 1);
  CHECK(read.d_ff == 10);
  Llama loaded(read, load_weights(file, read, {}), Device::cpu());
  Llama original = to_llama(s);
  const std::vector<int32_t> tokens = TestRng(6).tokens(10, c.vocab_size);
  CHECK(lib_logits(loaded, tokens) == lib_logits(original, tokens));
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

TEST_CASE("the width that matches a depth cut's parameters on the course model's shape", "[training][width]") {
  LlamaConfig teacher = LlamaConfig::from_shape(30, 576, 9, 3, 1536, 49152, 8192);
  teacher.tied_embeddings = true;
  LlamaConfig depth20 = teacher;
  depth20.n_layers = 20;
  // A third of the layers is a third of every block: 2 of 3 groups and 1024 of 1536 neurons. The
  // width student keeps the norms of 10 more layers, 2 × 576 numbers each.
  const WidthShape w = matched_width(teacher, depth20.parameter_count());
  CHECK(w.groups == 2);
  CHECK(w.neurons == 1024);
  CHECK(width_config(teacher, w.groups, w.neurons).parameter_count() - depth20.parameter_count() == 10 * 2 * 576);
  CHECK(matched_width(teacher, depth20.parameter_count(), 3).neurons == 853);  // all heads: the MLP pays alone
  LlamaConfig depth1 = teacher;
  depth1.n_layers = 1;
  CHECK(matched_width(teacher, depth1.parameter_count()).neurons == 0);  // even 1 group and 1 neuron is larger
}

TEST_CASE("width cuts of the real model: at full width the same logits, cut a GGUF that load_model reads", "[training][width][model]") {
  REQUIRE_MODEL(m);
  const std::vector<int> keep = {0, 14, 29};  // three layers keep the test fast
  Student<float> three = Student<float>::from_teacher(m->model, keep);
  const std::vector<int32_t> tokens = m->tokenizer.encode("She poured the milk into the");
  Student<float> same = width_pruned(three, full_width(three.config()));
  CHECK(logits_of(same, tokens) == logits_of(three, tokens));  // bit for bit

  const WidthImportance imp = width_importance(three, tokens, static_cast<int>(tokens.size()));
  Student<float> cut = width_pruned(three, width_cut(imp, 2, 1024, WidthChoice::most_important));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ch08_width_student_" + std::to_string(::getpid()) + ".gguf")).string();
  write_student_gguf(path, cut, m->file.metadata());
  CommonOptions options;
  options.model_path = path;
  options.threads = 2;
  LoadedModel reloaded = load_model(options);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  const LlamaConfig& c = reloaded.model.config();
  CHECK(c.n_layers == 3);
  CHECK(c.n_heads == 6);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim == 64);
  CHECK(c.d_ff == 1024);
  Llama original = to_llama(cut);
  CHECK(lib_logits(reloaded.model, tokens) == lib_logits(original, tokens));
}
