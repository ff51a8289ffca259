// UTF-8 helpers the tokenizer needs: walking a byte string one character at a time, and
// deciding what is a complete, a broken or a not-yet-finished character.
//
// A well-formed UTF-8 character is 1 to 4 bytes (Unicode, Table 3-7):
//   00..7F                      ASCII
//   C2..DF 80..BF               U+0080..U+07FF
//   E0 A0..BF 80..BF            U+0800..U+0FFF   (E0 80..9F would be an overlong form)
//   E1..EC 80..BF 80..BF
//   ED 80..9F 80..BF            (ED A0..BF would encode a UTF-16 surrogate)
//   EE..EF 80..BF 80..BF
//   F0 90..BF 80..BF 80..BF     (F0 80..8F would be overlong)
//   F1..F3 80..BF 80..BF 80..BF
//   F4 80..8F 80..BF 80..BF     (beyond F4 8F would exceed U+10FFFF)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace infer::utf8 {

// U+FFFD REPLACEMENT CHARACTER, what broken input turns into.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

enum class Status {
  valid,       // a complete, well-formed character of `length` bytes
  invalid,     // `length` bytes that can never become a character (at least 1)
  incomplete,  // the text ends after `length` bytes of a character that is still well-formed
};

struct Step {
  Status status;
  std::size_t length;
};

// Examines the character that starts at text[pos] (pos < text.size()). An invalid step covers the
// "maximal subpart": the longest prefix of a well-formed sequence, or the single offending byte.
Step next(std::string_view text, std::size_t pos);

// The UTF-8 encoding of a code point (at most U+10FFFF).
std::string encode(char32_t code_point);

// `text` with every broken sequence (each "maximal subpart", see next()) replaced by one U+FFFD:
// the W3C/WHATWG way to show bytes that are not UTF-8. Valid text comes back unchanged.
std::string replace_invalid(std::string_view text);

// `text` made valid UTF-8 the way llama.cpp reads text it is asked to tokenize, so that broken
// input gets the same tokens: its decoder checks only the bit patterns of each sequence, so an
// overlong form such as C0 AF is read as the character it spells ('/') and written back in
// canonical form; any byte that does not start such a sequence becomes one U+FFFD, and reading
// resumes at the next byte. (A sequence that spells a UTF-16 surrogate or a code point beyond
// U+10FFFF also becomes U+FFFD here; llama.cpp passes surrogates on, but no valid UTF-8 text, and
// so no PCRE2 subject, can hold them.)
std::string make_valid_as_llama_cpp(std::string_view text);

}  // namespace infer::utf8
