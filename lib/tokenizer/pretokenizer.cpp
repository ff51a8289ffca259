#include "tokenizer/pretokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

namespace infer {

namespace {

// GPT-2's pattern: the common English contractions, then runs of letters, of numbers, or of
// other non-space characters, each with at most one leading space; then whitespace. The
// look-ahead in \s+(?!\S) leaves the last space of a run before a word to that word (so "a  b"
// is "a", " ", " b"). llama.cpp writes the pattern without a final "|\s+" and keeps what no
// alternative matches as a piece of its own; a lone whitespace character before a word is the only
// such stretch, so spelling out "|\s+" gives the same pieces.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Every numeric character on its own, so that numbers are spelled out digit by digit.
constexpr std::string_view kEachDigitPattern = R"(\p{N})";

}  // namespace

// A compiled pattern, freed with the PCRE2 call that matches its allocation.
struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;

  explicit Regex(std::string_view pattern) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // UTF: the subject and the pattern are UTF-8; UCP: \s, \d and friends use Unicode properties.
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                         PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof message);
      throw std::runtime_error("pre-tokenizer: cannot compile regular expression '" +
                               std::string(pattern) + "' at offset " +
                               std::to_string(error_offset) + ": " +
                               reinterpret_cast<const char*>(message));
    }
    // Just-in-time compilation makes matching several times faster. Where it is not available
    // pcre2_match() falls back to the interpreter by itself, so a failure here is harmless.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() { pcre2_code_free(code); }

  // Appends to `out` the pieces of `piece`: every match, and every stretch between matches.
  void split(std::string_view piece, pcre2_match_data* match,
             std::vector<std::string_view>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
    std::size_t done = 0;  // bytes of `piece` already handed out
    std::size_t start = 0;  // where the next search begins
    while (start < piece.size()) {
      // The subject is the piece alone, so the look-ahead (?!\S) sees its end as the text's end.
      // The text was made valid UTF-8 beforehand, so PCRE2 need not check it again.
      const int rc = pcre2_match(code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, match,
                                 nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof message);
        throw std::runtime_error(std::string("pre-tokenizer: regular expression failed: ") +
                                 reinterpret_cast<const char*>(message));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      const std::size_t begin = ovector[0];
      const std::size_t end = ovector[1];
      if (begin > done) out.push_back(piece.substr(done, begin - done));  // unmatched stretch
      if (end > begin) out.push_back(piece.substr(begin, end - begin));
      done = end;
      // Neither pattern can match the empty string; should one ever do so, step over one
      // character (a lead byte and its continuation bytes) rather than loop forever.
      start = end;
      if (end == begin) {
        ++start;
        while (start < piece.size() && (static_cast<unsigned char>(piece[start]) & 0xC0) == 0x80) {
          ++start;
        }
      }
    }
    if (done < piece.size()) out.push_back(piece.substr(done));
  }
};

PreTokenizer::PreTokenizer(std::vector<std::unique_ptr<Regex>> regexes)
    : regexes_(std::move(regexes)) {}
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

PreTokenizer PreTokenizer::for_name(const std::string& name) {
  // llama.cpp (llama-vocab.cpp) gives "smollm" the same two expressions as StarCoder: each digit
  // alone, then GPT-2's pattern. Other pre-tokenizers differ in ways a model notices (how digits
  // group, whether letters take a leading punctuation mark), so they are refused, not guessed.
  if (name == "smollm") {
    std::vector<std::unique_ptr<Regex>> regexes;
    regexes.push_back(std::make_unique<Regex>(kEachDigitPattern));
    regexes.push_back(std::make_unique<Regex>(kGpt2Pattern));
    return PreTokenizer(std::move(regexes));
  }
  throw std::runtime_error("unsupported pre-tokenizer '" + name +
                           "' (tokenizer.ggml.pre); this library implements 'smollm'");
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (!text.empty()) pieces.push_back(text);
  for (const auto& regex : regexes_) {
    // Match data sized for the pattern; one per call keeps split() safe to call from many threads.
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(regex->code, nullptr), &pcre2_match_data_free);
    if (!match) throw std::bad_alloc();
    std::vector<std::string_view> finer;
    finer.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) regex->split(piece, match.get(), finer);
    pieces = std::move(finer);
  }
  return pieces;
}

}  // namespace infer
