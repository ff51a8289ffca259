"""README output blocks that cannot drift (the chapters' and the top-level one): written from the course's run records, never by hand.

A README marks a block with two HTML comments (invisible on GitHub):

    <!-- output: 01-sweep -->
    ```
    $ ./build/chapters/01_naive_loop/ch01_naive_loop --sweep --repeats 3 -t 2
    ...what that run printed...
    ```
    <!-- /output 01-sweep · AMD EPYC, 2 threads, 2026-12-01 · 3f9a0c12d4e5 -->

`01-sweep` names a run of docs/course/chapters.py (chapter 01, run "sweep"). Options after the
name: `head=N` keeps the first N lines of the output, `tail=M` the last M (with "..." between);
`command` shows only the command; `table="Layer importance"` keeps only the printed table whose title starts so (its title line to
the blank line after it), without the command line — for a README that shows a run's tables one
at a time under its own headings, with the command once above them.
`course.py --update-readmes` rewrites every block from build/course/records/<name>.log, naming the
machine and date in the closing marker, with a checksum of the block. `--check-readmes` (a CTest
test) recomputes each checksum: a block edited by hand no longer matches and the test fails.
"""
import hashlib
import re
from pathlib import Path

TABLE_OPTION = re.compile(r'table="([^"]+)"')
BLOCK = re.compile(r"<!-- output: (?P<name>[\w-]+)(?P<options>[^>]*?) -->\n(?P<body>.*?)"
                   r"<!-- /output (?P<end>[^>]*?) · (?P<sum>[0-9a-f]{12}) -->", re.S)


def checksum(body):
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def shown_output(log_text, options):
    """The block's text from a run's log: the command as a reader would type it, then the output."""
    lines = log_text.rstrip("\n").split("\n")
    if m := TABLE_OPTION.search(options):
        start = next((i for i, line in enumerate(lines) if line.startswith(m.group(1))), None)
        if start is None:
            raise KeyError(f'no table "{m.group(1)}" in the run\'s output')
        end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
        return "```\n" + "\n".join(lines[start:end]) + "\n```\n"
    command = lines[0].removeprefix("$ ")
    # The course's bookkeeping flags are not part of the lesson's command.
    command = re.sub(r" --(csv|json) \S+", "", command)
    if re.search(r"(^|\s)command(\s|$)", options):  # the command alone, above a run's tables
        return "```\n$ ./" + command + "\n```\n"
    output = lines[1:]
    head = int(m.group(1)) if (m := re.search(r"head=(\d+)", options)) else None
    tail = int(m.group(1)) if (m := re.search(r"tail=(\d+)", options)) else 0
    if head is not None and len(output) > head + tail:
        output = output[:head] + ["..."] + (output[-tail:] if tail else [])
    return "```\n$ ./" + command + "\n" + "\n".join(output) + "\n```\n"


def readmes(root):
    """The chapter READMEs (a part with its own, as chapter 06's packed/, too), and the top-level one
    (its performance section quotes a benchmark)."""
    top = [root / "README.md"] if (root / "README.md").exists() else []
    return top + sorted([*(root / "chapters").glob("*/README.md"), *(root / "chapters").glob("*/*/README.md")])


def update(root, records, origin, full_runs, only=None):
    """Rewrites every block from the records of the README runs (`full_runs`: names such as
    "01-sweep" whose last run was --full, the runs the READMEs' prose describes); returns the
    blocks left as they were, with the reason. With `only` (a set of run names), the blocks of
    other runs are left as they are without a word: their records may be older than `origin`."""
    missing = []
    for readme in readmes(root):
        text = readme.read_text()

        def rewrite(m):
            if only is not None and m.group("name") not in only:
                return m.group(0)
            log = records / f"{m.group('name')}.log"
            if m.group("name") not in full_runs:
                missing.append(f"{readme.relative_to(root)}: {m.group('name')}: its last run was not --full")
                return m.group(0)
            if not log.exists():
                missing.append(f"{readme.relative_to(root)}: {m.group('name')}")
                return m.group(0)
            try:
                body = shown_output(log.read_text(), m.group("options"))
            except KeyError as e:
                missing.append(f"{readme.relative_to(root)}: {m.group('name')}: {e.args[0]}")
                return m.group(0)
            return (f"<!-- output: {m.group('name')}{m.group('options')} -->\n{body}"
                    f"<!-- /output {m.group('name')} · {origin} · {checksum(body)} -->")

        new = BLOCK.sub(rewrite, text)
        if new != text:
            readme.write_text(new)
    return missing


def check(root):
    """Every block's checksum against its body; returns the problems."""
    problems, blocks = [], 0
    for readme in readmes(root):
        for m in BLOCK.finditer(readme.read_text()):
            blocks += 1
            if checksum(m.group("body")) != m.group("sum"):
                problems.append(f"{readme.relative_to(root)}: block {m.group('name')} was edited by hand "
                                f"(regenerate it: docs/course/course.py --update-readmes)")
    return blocks, problems
