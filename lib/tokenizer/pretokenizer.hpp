// The pre-tokenizer: before BPE runs, text is cut into "words" by regular expressions, and no
// merge ever crosses a word boundary. This keeps, for example, "dog." from becoming one token
// and makes " dog" (with its leading space) a token of its own.
//
// Like llama.cpp, a pre-tokenizer is a list of regular expressions applied in sequence. Each
// expression is applied inside each piece left by the previous one (it never sees across a piece
// boundary, so a look-ahead stops at the piece's end), and it splits the piece into its matches
// and the unmatched stretches between them, all of which are kept as pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace infer {

class PreTokenizer {
 public:
  // The pre-tokenizer llama.cpp uses for `tokenizer.ggml.pre == name`. Throws std::runtime_error
  // for a name this library does not implement.
  static PreTokenizer for_name(const std::string& name);

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Splits valid UTF-8 text into consecutive pieces that together are the whole text.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Regex;  // one compiled PCRE2 pattern
  explicit PreTokenizer(std::vector<std::unique_ptr<Regex>> regexes);
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace infer
