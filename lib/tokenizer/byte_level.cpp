#include "tokenizer/byte_level.hpp"

#include <array>

#include "tokenizer/utf8.hpp"

namespace infer::byte_level {

namespace {

constexpr bool stands_for_itself(int byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

// The largest code point of the alphabet: 0x100 plus the 68 bytes that are remapped, minus one.
constexpr char32_t kLastCodePoint = 0x100 + 68 - 1;

struct Tables {
  std::array<std::string, 256> utf8_of_byte;                  // byte -> UTF-8 of its character
  std::array<int, kLastCodePoint + 1> byte_of_code_point{};   // code point -> byte, or -1
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    t.byte_of_code_point.fill(-1);
    char32_t next_extra = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const char32_t cp = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next_extra++;
      t.utf8_of_byte[byte] = utf8::encode(cp);
      t.byte_of_code_point[cp] = byte;
    }
    return t;
  }();
  return t;
}

}  // namespace

std::string encode(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.utf8_of_byte[static_cast<unsigned char>(c)];
  return out;
}

std::optional<unsigned char> byte_of(char32_t code_point) {
  if (code_point > kLastCodePoint) return std::nullopt;
  const int byte = tables().byte_of_code_point[code_point];
  if (byte < 0) return std::nullopt;
  return static_cast<unsigned char>(byte);
}

std::string decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const utf8::Step step = utf8::next(text, pos);
    const std::string_view ch = text.substr(pos, step.length);
    pos += step.length;
    // The alphabet's characters are one or two bytes long; decode those two forms by hand.
    std::optional<unsigned char> byte;
    if (step.status == utf8::Status::valid && ch.size() == 1) {
      byte = byte_of(static_cast<unsigned char>(ch[0]));
    } else if (step.status == utf8::Status::valid && ch.size() == 2) {
      byte = byte_of((static_cast<char32_t>(ch[0] & 0x1F) << 6) | (ch[1] & 0x3F));
    }
    if (byte) {
      out += static_cast<char>(*byte);
    } else {
      out.append(ch);
    }
  }
  return out;
}

}  // namespace infer::byte_level
