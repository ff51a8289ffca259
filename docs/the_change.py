#!/usr/bin/env python3
"""Keeps the "The change" excerpts of the chapter READMEs equal to the code they quote.

A README quotes a region of a source file between the lines
    // BEGIN the change: <title>
    // END the change
by a block of the form
    <!-- the-change: chapters/NN_x/file.cpp -->
    ```cpp
    ...the region...
    ```
    <!-- /the-change -->

    docs/the_change.py --check   exit 1, naming the README, when an excerpt differs from its source
    docs/the_change.py --write   rewrite every excerpt from its source
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"<!-- the-change: (?P<path>\S+) -->\n```cpp\n(?P<body>.*?)```\n<!-- /the-change -->", re.S)


def region(path: str) -> str:
    lines = (ROOT / path).read_text().splitlines(keepends=True)
    begin = [i for i, l in enumerate(lines) if l.strip().startswith("// BEGIN the change")]
    end = [i for i, l in enumerate(lines) if l.strip().startswith("// END the change")]
    if len(begin) != 1 or len(end) != 1 or end[0] <= begin[0]:
        sys.exit(f"{path}: needs exactly one '// BEGIN the change' line before one '// END the change' line")
    return "".join(lines[begin[0] + 1:end[0]])


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in ("--check", "--write"):
        print(__doc__)
        return 2
    stale = []
    for readme in sorted(ROOT.glob("chapters/*/README.md")):
        text = readme.read_text()
        fresh = BLOCK.sub(lambda m: f"<!-- the-change: {m.group('path')} -->\n```cpp\n{region(m.group('path'))}```\n"
                                    "<!-- /the-change -->", text)
        if fresh != text:
            stale.append(readme.relative_to(ROOT))
            if sys.argv[1] == "--write":
                readme.write_text(fresh)
    if sys.argv[1] == "--check" and stale:
        for r in stale:
            print(f"{r}: a 'The change' excerpt differs from its source (run docs/the_change.py --write)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
