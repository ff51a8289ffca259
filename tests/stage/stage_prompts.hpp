// The five prompts the single-sequence stage tests (chapters 03 and 07) generate from: prose,
// a story, arithmetic, a fact to continue, and code.
#pragma once

#include <string>
#include <vector>

namespace infer::stage {

inline const std::vector<std::string> kPrompts = {
    "The three most important ideas in computer science are",
    "Once upon a time, in a small village by the sea,",
    "To compute the derivative of x squared, we",
    "The capital of France is Paris. The capital of Germany is",
    "def fibonacci(n):\n    ",
};

}  // namespace infer::stage
