#include "tokenizer/utf8.hpp"

#include <cstdint>

namespace infer::utf8 {

namespace {

// The byte range allowed in each position of a sequence, given its first byte (Table 3-7).
struct Pattern {
  std::size_t length;     // 0: this byte never starts a character
  uint8_t second_lo;      // the second byte is the only one with a narrowed range
  uint8_t second_hi;
};

Pattern pattern_for(uint8_t lead) {
  if (lead <= 0x7F) return {1, 0, 0};
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};  // 80..C1 (continuation bytes, overlong leads) and F5..FF
}

}  // namespace

Step next(std::string_view text, std::size_t pos) {
  const auto byte = [&](std::size_t i) { return static_cast<uint8_t>(text[i]); };
  const Pattern p = pattern_for(byte(pos));
  if (p.length == 0) return {Status::invalid, 1};

  for (std::size_t i = 1; i < p.length; ++i) {
    if (pos + i >= text.size()) return {Status::incomplete, i};
    const uint8_t lo = (i == 1) ? p.second_lo : 0x80;
    const uint8_t hi = (i == 1) ? p.second_hi : 0xBF;
    if (byte(pos + i) < lo || byte(pos + i) > hi) return {Status::invalid, i};
  }
  return {Status::valid, p.length};
}

std::string encode(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string replace_invalid(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const Step step = next(text, pos);
    if (step.status == Status::valid)
      out.append(text.substr(pos, step.length));
    else
      out.append(kReplacement);
    pos += step.length;
  }
  return out;
}

std::string make_valid_as_llama_cpp(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<uint8_t>(text[i]); };
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    // The sequence length and the payload bits of the first byte, from its high bits alone.
    const uint8_t lead = byte(pos);
    std::size_t length = 0;
    char32_t cp = 0;
    if (lead < 0x80) {
      length = 1, cp = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, cp = lead & 0x07;
    }
    bool ok = length > 0 && pos + length <= text.size();
    for (std::size_t i = 1; ok && i < length; ++i) {
      ok = (byte(pos + i) & 0xC0) == 0x80;
      cp = (cp << 6) | (byte(pos + i) & 0x3F);
    }
    if (ok && ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)) ok = false;

    if (ok) {
      out += encode(cp);
      pos += length;
    } else {
      out.append(kReplacement);
      pos += 1;
    }
  }
  return out;
}

}  // namespace infer::utf8
