#!/usr/bin/env python3
"""The pictures of the mechanisms (docs/course/mechanisms.py) are checked against their records:
on small hand-written records of each kind, the drawing passes its check; a drawing changed after
the fact (a bar gone, a guess drawn as rejected, a block given to another request) and a record
that contradicts itself (a request with fewer slot-steps than tokens, counters that do not add up,
an event the snapshots do not show) each fail it with a line saying what is wrong; a record without
the figures stops the drawing (PictureError). No model, no browser: runs in a second.
"""
import copy
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "course"))
import mechanisms  # noqa: E402

failures = []


def expect(what, problems, words):
    """`problems` must be empty (words None) or contain a line with `words`."""
    if words is None:
        if problems:
            failures.append(f"{what}: expected no problem, got {problems}")
    elif not any(words in p for p in problems):
        failures.append(f"{what}: expected a problem with '{words}', got {problems}")


def drawn(kind, figures):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.svg"
        mechanisms.draw(kind, figures, path)
        return path.read_text()


def segment(slot, request, kind, first, steps, dt=0.1):
    return {"slot": slot, "request": request, "kind": kind, "first_step": first, "steps": steps,
            "start": first * dt, "end": (first + steps) * dt}


# Two slots, three requests asking for 3, 1 and 2 tokens. Static: requests 0 and 1 together (3
# steps, request 1 padding for 2), then request 2 alone. Continuous: request 2 takes slot 1 as
# soon as request 1 leaves.
TIMELINE = {
    "workload": {"lengths": [3, 1, 2]},
    "workload_runs": [{"policy": "static", "run": "real", "summary": {"padding_rows": 2}}],
    "timeline": {
        "source": "real",
        "static": {"slots": 2, "steps": 5, "requests": [], "segments": [
            segment(0, 0, "prefill", 0, 1), segment(0, 0, "decode", 1, 2), segment(1, 1, "prefill", 0, 1),
            segment(1, 1, "padding", 1, 2), segment(0, 2, "prefill", 3, 1), segment(0, 2, "decode", 4, 1)]},
        "continuous": {"slots": 2, "steps": 3, "requests": [], "segments": [
            segment(0, 0, "prefill", 0, 1), segment(0, 0, "decode", 1, 2), segment(1, 1, "prefill", 0, 1),
            segment(1, 2, "prefill", 1, 1), segment(1, 2, "decode", 2, 1)]}}}

ROUNDS = {"demo": {"draft": "Q4_1", "gamma": 3, "tokens": 8, "rounds": 3, "drafted": 8, "accepted": 4, "alpha": 0.5,
                   "round_log": [
                       {"guesses": [" a", " b", " c"], "accepted": 3, "next": " d", "bonus": True, "emitted": 4},
                       {"guesses": [" e", " f", " g"], "accepted": 1, "next": " x", "bonus": False, "emitted": 2},
                       {"guesses": [" h", "\n"], "accepted": 0, "next": " y", "bonus": False, "emitted": 1}]}}

# Four blocks of 2 positions: request 0 allocates two; request 1 adopts its first (a shared
# prefix) and allocates one; request 0 finishes; request 1 copies ... and is preempted.
BLOCKS = {"block_trace": {"block_size": 2, "blocks": 4,
                          "requests": [{"id": 0, "label": "first"}, {"id": 1, "label": "same prefix"}],
                          "steps": [
                              {"holders": [[0], [0], [], []], "cached": [], "events": [
                                  {"kind": "allocate", "block": 0, "request": 0}, {"kind": "allocate", "block": 1, "request": 0}]},
                              {"holders": [[0, 1], [0], [1], []], "cached": [], "events": [
                                  {"kind": "adopt", "block": 0, "request": 1}, {"kind": "allocate", "block": 2, "request": 1}]},
                              {"holders": [[1], [], [1], []], "cached": [1], "events": [
                                  {"kind": "free", "block": 0, "request": 0}, {"kind": "free", "block": 1, "request": 0}]},
                              {"holders": [[], [], [], []], "cached": [0, 2], "events": [
                                  {"kind": "preempt", "request": 1, "blocks": [0, 2]}]}]}}


def check_kind(kind, figures, break_svg, break_record):
    svg = drawn(kind, figures)
    expect(f"{kind}: as drawn", mechanisms.check(kind, figures, svg), None)
    for what, (pattern, replacement, words) in break_svg.items():
        changed = re.sub(pattern, replacement, svg, count=1)
        if changed == svg:
            failures.append(f"{kind}: {what}: the tampering found nothing to change")
        expect(f"{kind}: {what}", mechanisms.check(kind, figures, changed), words)
    for what, (change, words) in break_record.items():
        broken = copy.deepcopy(figures)
        change(broken)
        expect(f"{kind}: {what}", mechanisms.check(kind, broken, drawn(kind, broken)), words)
    try:
        mechanisms.draw(kind, {}, Path(tempfile.gettempdir()) / "never.svg")
        failures.append(f"{kind}: drawn from a record without its figures")
    except mechanisms.PictureError:
        pass


def set_in(path, value):
    def change(f):
        *keys, last = path
        for k in keys:
            f = f[k]
        f[last] = value
    return change


check_kind("timeline", TIMELINE,
           {"a bar gone": (r'<rect[^>]*data-policy="continuous"[^>]*/>', "", "bars drawn"),
            "a bar given to another request": (r'data-request="2"', 'data-request="1"', "bars drawn")},
           {"a request short of its tokens": (set_in(["workload", "lengths", 2], 5), "asked for 5 tokens"),
            "two requests in one slot": (lambda f: f["timeline"]["continuous"]["segments"].append(
                segment(1, 0, "decode", 2, 1)), "holds two requests"),
            "padding unlike table 3's": (set_in(["workload_runs", 0, "summary", "padding_rows"], 3), "padding")})
check_kind("rounds", ROUNDS,
           {"a kept guess drawn as rejected": (r'data-state="accepted"', 'data-state="rejected"', "is drawn"),
            "a correction drawn as a bonus": (r'data-target="correction"', 'data-target="bonus"', "target token")},
           {"counters that do not add up": (set_in(["demo", "accepted"], 5), "do not add up"),
            "a round too many": (set_in(["demo", "rounds"], 4), "rounds recorded"),
            "a bonus after a rejection": (set_in(["demo", "round_log", 1, "bonus"], True), "bonus")})
check_kind("blocks", BLOCKS,
           {"a block given to another request": (r'data-holders="0 1"', 'data-holders="0"', "cells drawn unlike")},
           {"an event the snapshot does not show": (lambda f: f["block_trace"]["steps"][2]["events"].pop(),
                                                    "does not give its snapshot"),
            "a held block listed as cached": (set_in(["block_trace", "steps", 1, "cached"], [2]), "both held and")})

for f in failures:
    print(f"test_pictures: {f}")
print(f"test_pictures: {'FAILED' if failures else 'passed'}")
sys.exit(1 if failures else 0)
