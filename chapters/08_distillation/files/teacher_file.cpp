// Chapter 08, part 4 (the files), file 1: the teacher's labels on disk.
//
// The teacher runs once and every student trains from its labels (teacher_labels.hpp says what they
// hold), so the labels are kept in a file, and a file can be cut short, padded, damaged or left over
// from an older build. This file writes them and reads them back, trusting nothing it reads.
//
// File layout (version 2), little-endian:
//   magic "CH08TOPK" | version u32 = 2 | k u32 | vocab u32 | window u32 | n_temperatures u32 |
//   n u64                                                                            (36 bytes)
//   temperatures f32[n_t] | tokens i32[n] | lse f32[n] | tail_lse f32[n, n_t] |
//   ids i32[n, k] | logits f32[n, k]                                   (ids by falling logit)
//   checksum u64: 64-bit FNV-1a of every byte before it
// load() refuses, with one line naming the file and the fault: a file of another version (version 1
// had no tail), one shorter or longer than its header says (truncated or padded), one whose checksum
// differs (altered or damaged), and one whose numbers break the layout's promises (a token or id
// outside the vocabulary, repeated ids in a row, logits not falling, a non-finite value).
#include "teacher_labels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace infer::train {
namespace {

constexpr char kMagic[8] = {'C', 'H', '0', '8', 'T', 'O', 'P', 'K'};
constexpr uint32_t kVersion = 2;  // 1: no tail
constexpr std::size_t kHeaderBytes = 36, kChecksumBytes = 8;

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

// the-change: begin TeacherLabels::save
void TeacherLabels::save(const std::string& path) const {
  std::vector<uint8_t> bytes;
  bytes.insert(bytes.end(), kMagic, kMagic + 8);
  put(bytes, kVersion);
  put(bytes, static_cast<uint32_t>(k));
  put(bytes, static_cast<uint32_t>(vocab_size));
  put(bytes, static_cast<uint32_t>(window));
  put(bytes, static_cast<uint32_t>(temperatures.size()));
  put(bytes, static_cast<uint64_t>(tokens.size()));
  put_all(bytes, temperatures);
  put_all(bytes, tokens);
  put_all(bytes, lse);
  put_all(bytes, tail_lse);
  put_all(bytes, ids);
  put_all(bytes, logits);
  put(bytes, fnv1a64(bytes));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw TeacherFileError(path + ": cannot write the teacher file");
}
// the-change: end TeacherLabels::save

TeacherLabels TeacherLabels::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TeacherFileError(path + ": cannot open the teacher file (make it with the teacher pass)");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what) { return TeacherFileError(path + ": " + what); };
  if (bytes.size() < 12)
    throw fail(fmt::format("truncated: {} bytes, shorter than the magic and version", bytes.size()));
  if (std::memcmp(bytes.data(), kMagic, 8) != 0) throw fail("not a chapter 08 teacher file (bad magic)");
  const uint8_t* p = bytes.data() + 8;
  const uint32_t version = get<uint32_t>(p);
  if (version != kVersion)
    throw fail(fmt::format("teacher file version {}, this build reads version {} (version 2 added the tail mass); "
                           "make it again with the teacher pass", version, kVersion));
  if (bytes.size() < kHeaderBytes + kChecksumBytes)
    throw fail(fmt::format("truncated: {} bytes, shorter than the {}-byte header and checksum", bytes.size(),
                           kHeaderBytes + kChecksumBytes));
  const uint32_t k = get<uint32_t>(p), vocab = get<uint32_t>(p), window = get<uint32_t>(p), n_t = get<uint32_t>(p);
  const uint64_t n = get<uint64_t>(p);
  if (k < 1 || k > vocab || window < 2 || vocab > (1u << 24) || n_t > kMaxTemperatures)
    throw fail(fmt::format("corrupt header: k = {}, vocabulary {}, window {}, {} temperatures", k, vocab, window, n_t));
  // Each position takes 8 + 4·n_t + 8k bytes after the temperatures; compare counts before
  // multiplying so nothing overflows.
  const uint64_t fixed = kHeaderBytes + 4 * uint64_t{n_t} + kChecksumBytes;
  const uint64_t per_position = 8 + 4 * uint64_t{n_t} + 8 * uint64_t{k};
  if (bytes.size() < fixed || n > (bytes.size() - fixed) / per_position || n * per_position != bytes.size() - fixed)
    throw fail(fmt::format("truncated or padded: the header promises {} positions ({} bytes), the file holds {} bytes",
                           n, fixed + n * per_position, bytes.size()));
  // the-change: begin checksum
  const uint64_t stored = [&] { const uint8_t* q = bytes.data() + bytes.size() - kChecksumBytes; return get<uint64_t>(q); }();
  const uint64_t computed = fnv1a64(std::span<const uint8_t>(bytes.data(), bytes.size() - kChecksumBytes));
  if (stored != computed)
    throw fail(fmt::format("checksum mismatch (stored {:016x}, computed {:016x}): the file was altered or damaged; "
                           "rerun the teacher pass", stored, computed));
  // the-change: end checksum
  TeacherLabels t;
  t.k = static_cast<int>(k), t.vocab_size = static_cast<int>(vocab), t.window = static_cast<int>(window);
  t.temperatures = get_all<float>(p, n_t);
  t.tokens = get_all<int32_t>(p, n);
  t.lse = get_all<float>(p, n);
  t.tail_lse = get_all<float>(p, n * n_t);
  t.ids = get_all<int32_t>(p, n * k);
  t.logits = get_all<float>(p, n * k);

  // The checksum says the bytes are the ones written; these say the writer kept its promises.
  for (std::size_t i = 0; i < t.temperatures.size(); ++i)
    if (!(std::isfinite(t.temperatures[i]) && t.temperatures[i] > 0) ||
        std::count(t.temperatures.begin(), t.temperatures.end(), t.temperatures[i]) > 1)
      throw fail(fmt::format("corrupt temperatures: {}", fmt::join(t.temperatures, ", ")));
  auto in_vocab = [&](int32_t id) { return id >= 0 && static_cast<uint32_t>(id) < vocab; };
  std::vector<int32_t> row(k);
  for (uint64_t i = 0; i < n; ++i) {
    if (!in_vocab(t.tokens[i])) throw fail(fmt::format("position {}: token {} outside the vocabulary of {}", i, t.tokens[i], vocab));
    if (!std::isfinite(t.lse[i])) throw fail(fmt::format("position {}: log-sum-exp {} is not finite", i, t.lse[i]));
    for (uint32_t j = 0; j < n_t; ++j) {  // −∞ exactly when there is no tail (k = V)
      const float tail = t.tail_lse[i * n_t + j];
      if (k < vocab ? !std::isfinite(tail) : tail != -INFINITY)
        throw fail(fmt::format("position {}: tail log-sum-exp {} at T = {} (k = {} of {})", i, tail, t.temperatures[j], k, vocab));
    }
    for (uint32_t j = 0; j < k; ++j) {
      const int32_t id = t.ids[i * k + j];
      const float z = t.logits[i * k + j];
      if (!in_vocab(id)) throw fail(fmt::format("position {}: id {} outside the vocabulary of {}", i, id, vocab));
      if (!std::isfinite(z) || (j > 0 && z > t.logits[i * k + j - 1]))
        throw fail(fmt::format("position {}: logit {} of the top {} is not finite or not in falling order", i, z, k));
    }
    row.assign(t.ids.begin() + static_cast<int64_t>(i * k), t.ids.begin() + static_cast<int64_t>((i + 1) * k));
    std::sort(row.begin(), row.end());
    if (std::adjacent_find(row.begin(), row.end()) != row.end())
      throw fail(fmt::format("position {}: id {} kept twice", i, *std::adjacent_find(row.begin(), row.end())));
  }
  return t;
}

}  // namespace infer::train
