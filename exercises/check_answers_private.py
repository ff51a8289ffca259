#!/usr/bin/env python3
"""No exercise's answer appears anywhere else in the repository.

An exercise is worth grading only if its answer cannot be copied from the chapter it belongs to.
This check takes each exercise's solution.cpp, drops what carries no answer (comments, blank
lines, includes, braces, lines shorter than MIN_CHARS after whitespace is collapsed), and looks for
any run of WINDOW consecutive remaining lines in the C++ and CUDA sources outside exercises/
(chapters/, lib/, tools/, tests/). Three lines in a row are the smallest piece that is a piece of
an algorithm rather than a common idiom (two flag `const std::size_t n = logits.size();` followed
by a vector of n zeros, in lib's sampler and in a solution alike).

It catches a copy, not an idea: that the chapters do not compute any exercise's answer at all is
kept by the exercises' design (each asks for a variant the chapters do not implement; see
exercises/README.md), and this check keeps a later change from pasting one in.

    exercises/check_answers_private.py            exit 0 when no solution is found elsewhere
    exercises/check_answers_private.py -v         also print how many windows each solution has

Exit status 1 names each solution, the lines found and the file that holds them.
"""
import pathlib
import re
import sys

WINDOW = 3      # consecutive answer lines that count as a copy
MIN_CHARS = 16  # shorter lines (`return out;`, `}`) are idioms, not answers

repo = pathlib.Path(__file__).resolve().parent.parent
searched_dirs = ["chapters", "lib", "tools", "tests"]
source_suffixes = {".cpp", ".hpp", ".cu", ".cuh", ".h"}


def answer_lines(text):
    """The lines of a C++ file that carry code, whitespace collapsed, comments removed."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = []
    for raw in text.splitlines():
        line = re.sub(r"//.*", "", raw)
        line = " ".join(line.split())
        if len(line) < MIN_CHARS or line.startswith("#"):
            continue
        lines.append(line)
    return lines


def windows(lines):
    return {tuple(lines[i:i + WINDOW]) for i in range(len(lines) - WINDOW + 1)}


def main():
    verbose = "-v" in sys.argv[1:]
    # Every window of every source file outside exercises/, with one file that holds it.
    elsewhere = {}
    for top in searched_dirs:
        for path in sorted((repo / top).rglob("*")):
            if path.suffix not in source_suffixes or not path.is_file():
                continue
            for w in windows(answer_lines(path.read_text(errors="replace"))):
                elsewhere.setdefault(w, path.relative_to(repo))

    solutions = sorted((repo / "exercises").glob("[0-9][0-9]_*/solution.cpp"))
    if not solutions:
        print("check_answers_private: no exercises/NN_name/solution.cpp found", file=sys.stderr)
        return 1
    copies = 0
    for solution in solutions:
        own = windows(answer_lines(solution.read_text()))
        found = sorted((w for w in own if w in elsewhere), key=lambda w: str(elsewhere[w]))
        name = solution.parent.name
        if verbose:
            print(f"{name}: {len(own)} windows of {WINDOW} lines, {len(found)} found elsewhere")
        for w in found:
            copies += 1
            print(f"check_answers_private: {name}'s answer appears in {elsewhere[w]}:")
            for line in w:
                print(f"    {line}")
    if copies:
        print(f"check_answers_private: {copies} piece(s) of answers found outside exercises/ "
              f"(move the chapter's code or change the exercise)", file=sys.stderr)
        return 1
    print(f"check_answers_private: {len(solutions)} solutions, none found outside exercises/ "
          f"(runs of {WINDOW} code lines of {MIN_CHARS}+ characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
