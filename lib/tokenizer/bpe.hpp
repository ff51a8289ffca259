// Byte-pair encoding: the merge step of the tokenizer.
//
// Training a BPE tokenizer produced an ordered list of merges, "a b" meaning "the adjacent
// symbols a and b may become the one symbol ab"; earlier merges were more frequent in the
// training text and have the lower rank. To encode one pre-tokenized word we start from its
// characters and repeatedly apply the lowest-ranked merge that occurs anywhere in the word
// (the leftmost occurrence when it occurs twice), until no adjacent pair has a merge.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace infer {

class BpeMerges {
 public:
  // merges[r] is "left right", the merge of rank r (the GGUF key tokenizer.ggml.merges).
  // Throws std::runtime_error for an entry without a separating space.
  explicit BpeMerges(const std::vector<std::string>& merges);

  // The symbols a word ends up as, in order; they are views into `word` and together spell it.
  // `word` must be valid UTF-8: it is first split into its characters.
  std::vector<std::string_view> apply(std::string_view word) const;

  std::size_t size() const { return rank_of_.size(); }

 private:
  // -1 when the pair has no merge.
  int32_t rank(std::string_view left, std::string_view right, std::string& scratch) const;

  // Keyed by the merge as written in the file, "left right". Symbols of a byte-level vocabulary
  // never contain a space (a space byte is written 'Ġ'), so the key is unambiguous.
  std::unordered_map<std::string, int32_t> rank_of_;
};

}  // namespace infer
