// GPT-2's "byte-level" alphabet: a reversible map from the 256 byte values to 256 printable
// Unicode characters, so that a vocabulary of strings can hold any byte sequence.
//
// The bytes that are already printable and unambiguous ('!'..'~', '¡'..'¬', '®'..'ÿ', 188 of them)
// stand for themselves; the other 68 (control bytes, space, DEL, 0x80..0xA0, soft hyphen) are
// given the characters U+0100, U+0101, ... in byte order. So a space (0x20) becomes 'Ġ' (U+0120)
// and a newline (0x0A) becomes 'Ċ' (U+010A), which is why those letters fill BPE vocabularies.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace infer::byte_level {

// The UTF-8 text of the character that stands for each byte of `bytes`, concatenated.
std::string encode(std::string_view bytes);

// The byte a byte-level character (given as a code point) stands for, or nullopt if the code
// point is not one of the 256 characters of the alphabet.
std::optional<unsigned char> byte_of(char32_t code_point);

// Reverses encode(): the bytes that a vocabulary entry stands for. Characters outside the
// alphabet (which a well-formed byte-level vocabulary never contains) are kept as they are.
std::string decode(std::string_view text);

}  // namespace infer::byte_level
