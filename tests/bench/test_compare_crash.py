#!/usr/bin/env python3
"""compare_llama_cpp.py keeps llama.cpp in child processes: a crash inside it (a real SIGSEGV,
from the stand-in module fake_llama_cpp/) is reported with its signal and stage, the file is
tried again with llama.cpp's extra buffer types off, and one that crashes even then is given up
while the other files are still measured. Exits non-zero on the first failed check."""
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_llama_cpp")
os.environ["PYTHONPATH"] = os.pathsep.join([FAKE, os.environ.get("PYTHONPATH", "")])
sys.path.insert(0, HERE)
import compare_llama_cpp as compare  # noqa: E402

failures = []


def check(what, ok):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def side(mode, crash, names=("F32",)):
    os.environ.pop("FAKE_LLAMA_CRASH", None)
    if crash:
        os.environ["FAKE_LLAMA_CRASH"] = crash
    args = types.SimpleNamespace(threads=1, contexts=[4], prefill=4, decode_steps=2, llama_extra_buffers=mode)
    return compare.LlamaSide(args, {n: "/nonexistent/model.gguf" for n in names})


# No crash: the child's timings come back, nothing is reported.
s = side("auto", None)
s.round("F32", 4, 0)
check("no crash: 2 steps and 1 prefill timed", len(s.timings[("F32", 4)]["steps"]) == 2
      and len(s.timings[("F32", 4)]["prefills"]) == 1)
check("no crash: nothing reported", s.crashes["F32"] == [] and s.without_extra == set())
check("no crash: the child's version reaches the table", s.info.get("version") == "0.0-fake")

# A crash in the repacked buffers only: reported, retried without them, measured, marked.
s = side("auto", "decode-extra")
s.round("F32", 4, 0)
check("extra-buffer crash: one crash reported", len(s.crashes["F32"]) == 1)
check("extra-buffer crash: signal and stage named",
      bool(s.crashes["F32"]) and "SIGSEGV" in s.crashes["F32"][0] and "llama_decode" in s.crashes["F32"][0]
      and "extra buffer types on" in s.crashes["F32"][0])
check("extra-buffer crash: measured on the retry", len(s.timings[("F32", 4)]["steps"]) == 2)
check("extra-buffer crash: the rows say so", s.without_extra == {"F32"})
s.round("F32", 4, 1)
check("extra-buffer crash: later rounds go straight to buffers off", len(s.crashes["F32"]) == 1
      and len(s.timings[("F32", 4)]["steps"]) == 4)

# A crash either way: given up after two tries, no timings, the run goes on.
s = side("auto", "decode", names=("F32", "Q8_0"))
s.round("F32", 4, 0)
check("crash either way: two crashes reported", len(s.crashes["F32"]) == 2)
check("crash either way: no timings", s.timings[("F32", 4)]["steps"] == [])
s.round("F32", 4, 1)
check("crash either way: the file is not tried again", len(s.crashes["F32"]) == 2)

# --llama-extra-buffers on: no retry.
s = side("on", "decode-extra")
s.round("F32", 4, 0)
check("mode on: one crash, no retry, no timings", len(s.crashes["F32"]) == 1 and s.timings[("F32", 4)]["steps"] == [])

# --llama-extra-buffers off: the buffers are off from the start, so no crash here.
s = side("off", "decode-extra")
s.round("F32", 4, 0)
check("mode off: measured without a crash", s.crashes["F32"] == [] and len(s.timings[("F32", 4)]["steps"]) == 2)

# A crash while loading names that stage.
s = side("on", "load")
s.round("F32", 4, 0)
check("load crash: the stage says loading", bool(s.crashes["F32"]) and "loading" in s.crashes["F32"][0])

if failures:
    sys.exit(f"test_compare_crash: {len(failures)} check(s) failed")
print("test_compare_crash: all checks passed")
