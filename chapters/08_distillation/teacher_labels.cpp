#include "teacher_labels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"

namespace infer::train {
namespace {

constexpr char kMagic[8] = {'C', 'H', '0', '8', 'T', 'O', 'P', 'K'};
constexpr uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 32, kChecksumBytes = 8;

template <class V>
void put(std::vector<uint8_t>& out, const V& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(V));
}
template <class V>
void put_all(std::vector<uint8_t>& out, const std::vector<V>& values) {
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  out.insert(out.end(), p, p + values.size() * sizeof(V));
}
template <class V>
V get(const uint8_t*& p) {
  V value;
  std::memcpy(&value, p, sizeof(V));
  p += sizeof(V);
  return value;
}
template <class V>
std::vector<V> get_all(const uint8_t*& p, std::size_t n) {
  std::vector<V> values(n);
  std::memcpy(values.data(), p, n * sizeof(V));
  p += n * sizeof(V);
  return values;
}

}  // namespace

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;  // offset basis
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;  // FNV prime
  return h;
}

double TeacherLabels::kept_mass(int64_t i) const {
  double sum = 0.0;
  for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(logits[i * k + j]) - lse[i]);
  return sum;
}

void TeacherLabels::append(int32_t token, const float* z) {
  double m = -INFINITY, sum = 0.0;
  for (int v = 0; v < vocab_size; ++v) m = std::max(m, static_cast<double>(z[v]));
  for (int v = 0; v < vocab_size; ++v) sum += std::exp(z[v] - m);
  std::vector<int32_t> order(vocab_size);
  std::iota(order.begin(), order.end(), 0);
  // the k largest, largest first (ties: the lower id), without sorting all V
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  tokens.push_back(token);
  lse.push_back(static_cast<float>(m + std::log(sum)));
  for (int j = 0; j < k; ++j) {
    ids.push_back(order[j]);
    logits.push_back(z[order[j]]);
  }
}

void TeacherLabels::save(const std::string& path) const {
  std::vector<uint8_t> bytes;
  bytes.insert(bytes.end(), kMagic, kMagic + 8);
  put(bytes, kVersion);
  put(bytes, static_cast<uint32_t>(k));
  put(bytes, static_cast<uint32_t>(vocab_size));
  put(bytes, static_cast<uint32_t>(window));
  put(bytes, static_cast<uint64_t>(tokens.size()));
  put_all(bytes, tokens);
  put_all(bytes, lse);
  put_all(bytes, ids);
  put_all(bytes, logits);
  put(bytes, fnv1a64(bytes));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw TeacherFileError(path + ": cannot write the teacher file");
}

TeacherLabels TeacherLabels::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TeacherFileError(path + ": cannot open the teacher file (make it with the teacher pass)");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what) { return TeacherFileError(path + ": " + what); };
  if (bytes.size() < kHeaderBytes + kChecksumBytes)
    throw fail(fmt::format("truncated: {} bytes, shorter than the {}-byte header and checksum", bytes.size(),
                           kHeaderBytes + kChecksumBytes));
  if (std::memcmp(bytes.data(), kMagic, 8) != 0) throw fail("not a chapter 08 teacher file (bad magic)");
  const uint8_t* p = bytes.data() + 8;
  const uint32_t version = get<uint32_t>(p), k = get<uint32_t>(p), vocab = get<uint32_t>(p), window = get<uint32_t>(p);
  const uint64_t n = get<uint64_t>(p);
  if (version != kVersion) throw fail(fmt::format("teacher file version {}, this build reads version {}", version, kVersion));
  if (k < 1 || k > vocab || window < 2 || vocab > (1u << 24))
    throw fail(fmt::format("corrupt header: k = {}, vocabulary {}, window {}", k, vocab, window));
  // Each position takes 8 + 8k bytes; compare counts before multiplying so nothing overflows.
  const uint64_t per_position = 8 + 8 * uint64_t{k}, body = bytes.size() - kHeaderBytes - kChecksumBytes;
  if (n > body / per_position || n * per_position != body)
    throw fail(fmt::format("truncated or padded: the header promises {} positions ({} bytes), the file holds {} bytes",
                           n, kHeaderBytes + n * per_position + kChecksumBytes, bytes.size()));
  const uint64_t stored = [&] { const uint8_t* q = bytes.data() + bytes.size() - kChecksumBytes; return get<uint64_t>(q); }();
  const uint64_t computed = fnv1a64(std::span<const uint8_t>(bytes.data(), bytes.size() - kChecksumBytes));
  if (stored != computed)
    throw fail(fmt::format("checksum mismatch (stored {:016x}, computed {:016x}): the file was altered or damaged; "
                           "rerun the teacher pass", stored, computed));
  TeacherLabels t;
  t.k = static_cast<int>(k), t.vocab_size = static_cast<int>(vocab), t.window = static_cast<int>(window);
  t.tokens = get_all<int32_t>(p, n);
  t.lse = get_all<float>(p, n);
  t.ids = get_all<int32_t>(p, n * k);
  t.logits = get_all<float>(p, n * k);
  return t;
}

TeacherLabels teacher_pass(Llama& teacher, std::span<const int32_t> tokens, int window, int k,
                           const std::string& progress_label) {
  const LlamaConfig& c = teacher.config();
  if (window < 2 || window > c.context_length || k < 1 || k > c.vocab_size)
    throw std::invalid_argument(fmt::format("teacher pass: window {} outside 2…{} or k {} outside 1…{}", window,
                                            c.context_length, k, c.vocab_size));
  TeacherLabels t;
  t.k = k, t.vocab_size = c.vocab_size, t.window = window;
  const int64_t n_windows = std::ssize(tokens) / window;
  std::unique_ptr<ProgressBar> bar;
  if (!progress_label.empty()) bar = std::make_unique<ProgressBar>(progress_label, n_windows * window);
  GroupedKvCache cache(c, window, teacher.device());
  constexpr int kChunk = 128;  // rows of logits per forward call: 128 × V floats = 25 MB
  for (int64_t w = 0; w < n_windows; ++w) {
    cache.clear();
    for (int c0 = 0; c0 < window; c0 += kChunk) {
      const int m = std::min(kChunk, window - c0);
      const auto chunk = tokens.subspan(w * window + c0, m);
      const Tensor logits = teacher.forward(chunk, c0, cache, /*all_logits=*/true).to(Device::cpu());
      for (int64_t i = 0; i < m; ++i) t.append(chunk[i], logits.host<float>() + i * c.vocab_size);
      if (bar) bar->advance(m);
    }
  }
  return t;
}

}  // namespace infer::train
