// Streams speculative decoding's text as it is accepted: the draft's guesses the target kept in
// green, the target's own tokens plain (colour only on a terminal), and keeps a copy for the run
// record. lib's TextStreamer, plus the one thing this chapter shows: where each token came from.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "app/run_record.hpp"
#include "speculative_decode.hpp"  // TokenSource
#include "tokenizer/tokenizer.hpp"

namespace infer {

class MarkedStreamer {
 public:
  MarkedStreamer(const Tokenizer& tokenizer, std::string& text)
      : tokenizer_(tokenizer), decoder_(tokenizer), text_(text), colour_(isatty(fileno(stdout)) != 0) {}

  // Pass as generate_speculative's on_token callback.
  void operator()(const StepRecord& step, TokenSource source) {
    if (tokenizer_.ends_generation(step.token)) return;
    const std::string piece = decoder_.push(step.token);
    text_ += piece;
    const bool green = colour_ && source == TokenSource::drafted;
    std::fputs(green ? fmt::format("\033[32m{}\033[0m", piece).c_str() : piece.c_str(), stdout);
    std::fflush(stdout);
  }

  // Prints what is held back (an unfinished UTF-8 character) and, on a terminal, the legend.
  void finish() {
    const std::string rest = decoder_.flush();
    text_ += rest;
    std::fputs((rest + "\n").c_str(), stdout);
    if (colour_) std::fputs("(\033[32mgreen\033[0m: the draft's guesses the target accepted; plain: the target's own tokens)\n", stdout);
  }

 private:
  const Tokenizer& tokenizer_;
  StreamDecoder decoder_;
  std::string& text_;
  bool colour_;
};

}  // namespace infer
