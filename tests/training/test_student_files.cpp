// What chapter 08 writes and reads: the student as a GGUF file that lib's loader reads back
// with identical weights and logits, the training forward agreeing with lib's forward, and the
// offline teacher file with its checksum.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

#include "grouped_kv_cache.hpp"
#include "gguf/gguf_file.hpp"
#include "student.hpp"
#include "student_gguf.hpp"
#include "teacher_labels.hpp"
#include "test_support.hpp"
#include "tiny_model.hpp"
#include "tensor/memory.hpp"

using namespace infer;
using namespace infer::train;
using infer::test::TestRng;
namespace fs = std::filesystem;

namespace {

// A file in the temporary directory (stem_PID.ext), removed when the test ends.
struct TempFile {
  std::string path;
  TempFile(const std::string& stem, const std::string& ext)
      : path((fs::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ext)).string()) {}
  ~TempFile() { std::error_code ec; fs::remove(path, ec); }
};

// lib's forward: logits of every token of one sequence from position 0.
std::vector<float> lib_logits(Llama& model, const std::vector<int32_t>& tokens) {
  GroupedKvCache cache(model.config(), std::ssize(tokens));
  return model.forward(tokens, 0, cache, /*all_logits=*/true).to_vector();
}

std::vector<float> student_logits(Student<float>& s, const std::vector<int32_t>& tokens) {
  const float* p = s.forward(tokens, 1, static_cast<int>(tokens.size()));
  return {p, p + tokens.size() * static_cast<std::size_t>(s.config().vocab_size)};
}

// max |a − b| / max |b|
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

Llama load_llama(const gguf::GgufFile& file) {
  const LlamaConfig c = LlamaConfig::from_gguf(file);
  return Llama(c, load_weights(file, c, {}), Device::cpu());
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("the training forward computes lib's forward (tiny model)", "[training]") {
  Student<float> s = Student<float>::random(infer::test::tiny_llama(3), 3, 0.5);
  Llama llama = to_llama(s);
  const std::vector<int32_t> tokens = TestRng(4).tokens(12, s.config().vocab_size);
  const double diff = relative_difference(student_logits(s, tokens), lib_logits(llama, tokens));
  std::printf("tiny model: training forward vs lib forward, relative difference %.2e\n", diff);
  CHECK(diff < 1e-5);
}

TEST_CASE("a student GGUF reloads with identical weights and logits (tiny model)", "[training]") {
  LlamaConfig c = infer::test::tiny_llama(2);
  c.tied_embeddings = GENERATE(true, false);  // untied: output.weight is written and read too
  Student<float> s = Student<float>::random(c, 5, 0.5);
  TempFile file("ch08_tiny_student", ".gguf");
  write_student_gguf(file.path, s);
  const gguf::GgufFile reread = gguf::GgufFile::open(file.path);
  CHECK(reread.get_uint("llama.block_count") == 2);
  CHECK((reread.find_tensor("output.weight") == nullptr) == c.tied_embeddings);
  Llama loaded = load_llama(reread);
  const std::vector<int> all = {0, 1};
  Student<float> back = Student<float>::from_teacher(loaded, all);
  CHECK(back.params == s.params);
  CHECK(back.embedding() == s.embedding());
  CHECK(back.output_weights() == s.output_weights());
  const std::vector<int32_t> tokens = TestRng(6).tokens(10, s.config().vocab_size);
  CHECK(student_logits(back, tokens) == student_logits(s, tokens));  // bit for bit
  Llama original = to_llama(s);
  CHECK(lib_logits(loaded, tokens) == lib_logits(original, tokens));
}

TEST_CASE("lib's loader puts a layer's seven matrices one after another in one buffer (tiny model)", "[training]") {
  // lib/model/weights.cpp: one buffer per layer, so that its huge pages cover most of the layer.
  Student<float> s = Student<float>::random(infer::test::tiny_llama(2), 9, 0.5);
  TempFile file("ch08_tiny_layout", ".gguf");
  write_student_gguf(file.path, s);
  Llama loaded = load_llama(gguf::GgufFile::open(file.path));
  for (const LayerWeights& L : loaded.weights().layers) {
    const char* next = nullptr;
    for (const Linear* l : {L.wq.get(), L.wk.get(), L.wv.get(), L.wo.get(), L.w_gate.get(), L.w_up.get(), L.w_down.get()}) {
      const auto* dense = dynamic_cast<const DenseLinear*>(l);
      REQUIRE(dense != nullptr);
      const char* at = static_cast<const char*>(dense->weight().raw());
      if (next != nullptr) CHECK(at == next);
      next = at + dense->weight().nbytes();
    }
  }
}

TEST_CASE("lib's loader checks a layer's shapes against the file before it allocates the layer (tiny model)", "[training]") {
  // The file says the MLP is 2^24 wide (the largest width config.cpp accepts) while its tensors
  // are 24 wide: the loader must refuse it from the shapes, not first take the 3 GB buffer that
  // such a layer would need.
  Student<float> s = Student<float>::random(infer::test::tiny_llama(2), 9, 0.5);
  TempFile file("ch08_tiny_wide", ".gguf");
  write_student_gguf(file.path, s);
  std::vector<uint8_t> bytes = read_bytes(file.path);
  const std::string key = "llama.feed_forward_length";
  const auto at = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
  REQUIRE(at != bytes.end());
  const auto value = static_cast<std::size_t>(at - bytes.begin()) + key.size() + 4;  // after the u32 type tag
  REQUIRE(value + 4 <= bytes.size());
  const uint32_t wide = 1u << 24;
  std::memcpy(&bytes[value], &wide, 4);
  {
    std::ofstream out(file.path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const gguf::GgufFile f = gguf::GgufFile::open(file.path);
  REQUIRE(f.get_uint(key) == wide);
  reset_peak_memory(Device::cpu());
  const int64_t before = memory_stats(Device::cpu()).current_bytes;
  CHECK_THROWS_WITH(load_llama(f), Catch::Contains("ffn_gate.weight") && Catch::Contains("expected"));
  CHECK(memory_stats(Device::cpu()).peak_bytes - before < (int64_t{64} << 20));
}

TEST_CASE("the full-depth student copied from the teacher gives the teacher's logits", "[training][model]") {
  REQUIRE_MODEL(m);
  std::vector<int> all(static_cast<std::size_t>(m->model.config().n_layers));
  std::iota(all.begin(), all.end(), 0);
  Student<float> s = Student<float>::from_teacher(m->model, all);
  const std::vector<int32_t> tokens = m->tokenizer.encode("She poured the milk into the");
  const double diff = relative_difference(student_logits(s, tokens), lib_logits(m->model, tokens));
  std::printf("SmolLM2 30 layers: training forward vs lib forward, relative difference %.2e\n", diff);
  CHECK(diff < 1e-4);
}

TEST_CASE("a depth-pruned student of the real model is a GGUF file that load_model reads", "[training][model]") {
  REQUIRE_MODEL(m);
  const std::vector<int> keep = {0, 14, 29};
  Student<float> s = Student<float>::from_teacher(m->model, keep);
  TempFile file("ch08_pruned_student", ".gguf");
  write_student_gguf(file.path, s, m->file.metadata());
  CommonOptions options;
  options.model_path = file.path;
  options.threads = 2;
  LoadedModel reloaded = load_model(options);
  CHECK(reloaded.model.config().n_layers == 3);
  CHECK(reloaded.file.get_string("tokenizer.chat_template") == m->file.get_string("tokenizer.chat_template"));
  const std::vector<int32_t> tokens = reloaded.tokenizer.encode("She poured the milk into the");
  CHECK(tokens == m->tokenizer.encode("She poured the milk into the"));
  const std::vector<int> all = {0, 1, 2};
  Student<float> back = Student<float>::from_teacher(reloaded.model, all);
  CHECK(back.params == s.params);
  CHECK(student_logits(back, tokens) == student_logits(s, tokens));  // bit for bit
  CHECK(relative_difference(lib_logits(reloaded.model, tokens), student_logits(s, tokens)) < 1e-5);
}

TEST_CASE("the teacher file keeps the top k, the log-sum-exp and the tail, and reads back exactly", "[training]") {
  const LlamaConfig c = infer::test::tiny_llama(2);
  Llama teacher = to_llama(Student<float>::random(c, 8, 0.5));
  const std::vector<int32_t> tokens = TestRng(9).tokens(20, c.vocab_size);  // 2 windows of 8, 4 dropped
  const std::vector<double> temperatures = {1, 2, 4};
  const TeacherLabels t = teacher_pass(teacher, tokens, 8, 5, temperatures);
  REQUIRE(t.size() == 16);
  CHECK(t.windows() == 2);
  REQUIRE(t.temperatures == std::vector<float>{1, 2, 4});
  REQUIRE(std::ssize(t.tail_lse) == 16 * 3);
  // position 3 of window 1 against the teacher's own logits
  GroupedKvCache cache(c, 8);
  const std::vector<float> z = teacher.forward(std::span(tokens).subspan(8, 8), 0, cache, true).to_vector();
  const float* row = z.data() + 3 * c.vocab_size;
  std::vector<float> sorted(row, row + c.vocab_size);
  std::sort(sorted.rbegin(), sorted.rend());
  double sum = 0;
  for (float x : sorted) sum += std::exp(x);
  CHECK(t.lse[11] == Approx(std::log(sum)).epsilon(1e-6));
  for (int j = 0; j < 5; ++j) {
    CHECK(t.logits[11 * 5 + j] == sorted[j]);
    CHECK(row[t.ids[11 * 5 + j]] == sorted[j]);
  }
  // the tail at each T: log Σ over all but the 5 largest of exp(z / T), and its mass
  for (int col = 0; col < 3; ++col) {
    const double T = temperatures[col];
    double tail = 0;
    for (int v = 5; v < c.vocab_size; ++v) tail += std::exp(sorted[v] / T);
    CHECK(t.tail_lse[11 * 3 + col] == Approx(std::log(tail)).epsilon(1e-6));
    double kept = 0;
    for (int v = 0; v < 5; ++v) kept += std::exp(sorted[v] / T);
    CHECK(t.tail_mass(11, col) == Approx(tail / (kept + tail)).epsilon(1e-6));
  }
  CHECK(t.kept_mass(11) + t.tail_mass(11, 0) == Approx(1.0).epsilon(1e-6));  // at T = 1 the two agree
  CHECK(t.tail_mass(11, 2) > t.tail_mass(11, 0));  // a higher T moves mass into the tail
  CHECK(t.temperature_index(2.0) == 1);
  CHECK(t.temperature_index(3.0) == -1);
  CHECK(t.kept_mass(11) < 1.0);
  const TeacherLabels every = teacher_pass(teacher, tokens, 8, c.vocab_size, temperatures);
  CHECK(every.kept_mass(11) == Approx(1.0).epsilon(1e-6));
  CHECK(every.tail_lse[11 * 3] == -INFINITY);  // k = V: no tail
  CHECK(every.tail_mass(11, 2) == 0.0);

  TempFile file("ch08_teacher", ".bin");
  t.save(file.path);
  const TeacherLabels back = TeacherLabels::load(file.path);
  CHECK(back.k == 5);
  CHECK(back.window == 8);
  CHECK(back.temperatures == t.temperatures);
  CHECK(back.tokens == t.tokens);
  CHECK(back.lse == t.lse);
  CHECK(back.tail_lse == t.tail_lse);
  CHECK(back.ids == t.ids);
  CHECK(back.logits == t.logits);
  TempFile file_every("ch08_teacher_every", ".bin");  // an empty tail (−∞) reads back too
  every.save(file_every.path);
  CHECK(TeacherLabels::load(file_every.path).tail_lse == every.tail_lse);
}

namespace {
// The file's bytes with the checksum made right again: what a faulty writer would produce.
void write_with_checksum(const std::string& path, std::vector<uint8_t> bytes) {
  const uint64_t h = fnv1a64(std::span<const uint8_t>(bytes.data(), bytes.size() - 8));
  std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
  write_bytes(path, bytes);
}
template <class V>
void poke(std::vector<uint8_t>& bytes, std::size_t offset, V value) { std::memcpy(bytes.data() + offset, &value, sizeof(V)); }
}  // namespace

TEST_CASE("the teacher file rejects a truncated, altered, old or inconsistent copy with a clear error", "[training]") {
  const LlamaConfig c = infer::test::tiny_llama(1);
  Llama teacher = to_llama(Student<float>::random(c, 10, 0.5));
  const std::vector<double> temperatures = {1, 4};
  const TeacherLabels t = teacher_pass(teacher, TestRng(11).tokens(16, c.vocab_size), 8, 4, temperatures);
  TempFile good("ch08_teacher_good", ".bin"), bad("ch08_teacher_bad", ".bin");
  t.save(good.path);
  const std::vector<uint8_t> bytes = read_bytes(good.path);
  // The layout (teacher_labels.hpp): 36-byte header, temperatures f32[2], tokens i32[16], lse f32[16],
  // tail_lse f32[16·2], ids i32[16·4], logits f32[16·4], checksum.
  const std::size_t n = 16, header = 36, temps = header, tokens = temps + 2 * 4, lse = tokens + n * 4, tail = lse + n * 4,
                    ids = tail + n * 2 * 4, logits = ids + n * 4 * 4;
  REQUIRE(bytes.size() == logits + n * 4 * 4 + 8);

  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 100);
  write_bytes(bad.path, truncated);
  CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains("truncated") && Catch::Contains(bad.path));

  write_bytes(bad.path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20));
  CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains("truncated"));

  std::vector<uint8_t> padded = bytes;
  padded.insert(padded.end() - 8, 4, 0);
  write_with_checksum(bad.path, padded);
  CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains("truncated or padded"));

  std::vector<uint8_t> altered = bytes;
  altered[bytes.size() / 2] ^= 0x01;  // one bit of one stored number
  write_bytes(bad.path, altered);
  CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains("checksum mismatch"));

  std::vector<uint8_t> not_ours = bytes;
  not_ours[0] = 'X';
  write_bytes(bad.path, not_ours);
  CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains("bad magic"));

  // version 1 (no tail): refused by its version, before its sizes are read as version 2's
  std::vector<uint8_t> old = bytes;
  poke<uint32_t>(old, 8, 1);
  write_with_checksum(bad.path, old);
  CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains("teacher file version 1, this build reads version 2"));

  // A right checksum over wrong numbers: each promise of the layout is checked.
  struct Fault { const char* what; std::size_t offset; uint32_t value; const char* message; };
  const float nan = std::nanf(""), minus_inf = -INFINITY, up = 1e9f;
  auto bits = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; };
  const Fault faults[] = {
      {"too many temperatures", 24, 1000, "corrupt header"},
      {"a negative temperature", temps, bits(-1.0f), "corrupt temperatures"},
      {"a repeated temperature", temps + 4, bits(1.0f), "corrupt temperatures"},
      {"a token outside the vocabulary", tokens + 4 * 3, static_cast<uint32_t>(c.vocab_size), "token"},
      {"a NaN log-sum-exp", lse + 4 * 5, bits(nan), "log-sum-exp"},
      {"an empty tail although k < V", tail + 4 * 7, bits(minus_inf), "tail log-sum-exp"},
      {"an id outside the vocabulary", ids + 4 * 9, static_cast<uint32_t>(-1), "id -1 outside the vocabulary"},
      {"an id kept twice", ids + 4 * 1, static_cast<uint32_t>(t.ids[0]), "kept twice"},  // row 0: its second id := its first
      {"logits not falling", logits + 4 * 2, bits(up), "falling order"},
  };
  for (const Fault& f : faults) {
    std::vector<uint8_t> wrong = bytes;
    poke<uint32_t>(wrong, f.offset, f.value);
    write_with_checksum(bad.path, wrong);
    INFO(f.what);
    CHECK_THROWS_WITH(TeacherLabels::load(bad.path), Catch::Contains(f.message) && Catch::Contains(bad.path));
  }

  CHECK_THROWS_WITH(TeacherLabels::load(good.path + ".missing"), Catch::Contains("cannot open"));
  CHECK_NOTHROW(TeacherLabels::load(good.path));
}
