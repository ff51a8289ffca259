"""Pictures of the mechanisms, drawn from what a run recorded (its --json record's figures):

  timeline  chapter 04: which request holds which slot at each step, static batching above
            continuous batching on one time axis; prefill, decode, padding rows, idle slots
  blocks    chapter 05: the pool over the steps of a short run; which request holds each
            physical block, blocks shared by a prefix or a fork, copies on write, preemptions
  rounds    chapter 07: the demo's draft-then-verify rounds; each guess accepted or rejected,
            and the target's own token (the correction after a rejection, the bonus after none)

Each picture is plain SVG written here (no plotting program: these are diagrams, not curves),
in the plots' style (docs/course/plots.py: 13 px text, a fixed width, the key below). Every mark
that stands for a recorded fact carries it in data-* attributes, so that
tests/report/check_report.py can compare the drawing with the record, and the record with
itself (a request's slot-steps against its tokens, the rounds against the demo's counters, the
block events replayed against the pool's snapshots): check(kind, figures, svg_text).
"""
import html
import math
import xml.etree.ElementTree as ET

from plots import CHAR, FONT, WIDTH, LABEL_FONT as SMALL  # the plots' canvas width, text sizes and metrics

# One colour per request: more than the plots' 8 series, so that neighbouring requests differ.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94"]
GREEN, RED, GREY, BLUE, PURPLE = "#2ca02c", "#d62728", "#9ca3af", "#1f77b4", "#7b3fa0"


class PictureError(Exception):
    """A record a picture cannot be drawn from truthfully; the message is one line."""


def esc(text):
    return html.escape(str(text), quote=True)


def fits(text, width, size=SMALL):
    return len(text) * size * CHAR + 6 <= width


def colour(request):
    return PALETTE[request % len(PALETTE)]


class Svg:
    """A list of SVG elements and the height they reach."""

    def __init__(self, title):
        self.parts = []
        self.text(WIDTH / 2, 22, title, size=15, anchor="middle", weight="bold")

    def add(self, element):
        self.parts.append(element)

    def text(self, x, y, s, size=FONT, anchor="start", weight="normal", fill="#111"):
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
                 f'fill="{fill}">{esc(s)}</text>')

    def rect(self, x, y, w, h, fill, data=None, stroke="none", extra=""):
        attrs = "".join(f' data-{k}="{esc(v)}"' for k, v in (data or {}).items())
        self.add(f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(w, 0.5):.2f}" height="{h:.2f}" fill="{fill}" '
                 f'stroke="{stroke}"{extra}{attrs}/>')

    def key(self, y, entries):
        """A row (or rows) of swatches with labels, below the drawing; returns the y under it."""
        x = 20
        for swatch, label in entries:
            w = 22 + len(label) * FONT * CHAR + 18
            if x + w > WIDTH - 10:
                x, y = 20, y + 22
            self.add(swatch(x, y - 11))
            self.text(x + 22, y, label)
            x += w
        return y + 14

    def write(self, path, height):
        defs = ('<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
                'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e5e7eb"/>'
                '<line x1="0" y1="0" x2="0" y2="6" stroke="#6b7280" stroke-width="2"/></pattern>'
                '<marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" '
                'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#111"/></marker></defs>')
        body = "\n".join(self.parts)
        path.write_text(f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
                        f'viewBox="0 0 {WIDTH} {height:.0f}" font-family="DejaVu Sans, Arial, sans-serif">\n'
                        f'<rect width="{WIDTH}" height="{height:.0f}" fill="#fff"/>\n{defs}\n{body}\n</svg>\n')


def swatch(fill, stroke="none"):
    return lambda x, y: f'<rect x="{x}" y="{y}" width="16" height="12" fill="{fill}" stroke="{stroke}"/>'


def ticks(lo, hi, n=6):
    """Round tick values covering lo … hi."""
    span = hi - lo if hi > lo else 1.0
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if span / step <= n:
            break
    first = int(lo / step)
    return [round(k * step, 10) for k in range(first, int(hi / step) + 1) if lo - 1e-12 <= k * step <= hi + 1e-12]


# --- chapter 04: the timeline ---------------------------------------------------------------------

def draw_timeline(figures, path):
    t = figures.get("timeline")
    if not t or "static" not in t or "continuous" not in t:
        raise PictureError("the record has no timeline of both policies (figures.timeline.static, .continuous)")
    runs = [("static", "static batching"), ("continuous", "continuous batching")]
    end = max(max((s["end"] for s in t[p]["segments"]), default=0) for p, _ in runs)
    if end <= 0:
        raise PictureError("the timeline's runs have no steps")
    left, right, row = 70, WIDTH - 20, 17
    scale = (right - left) / end
    svg = Svg(f"Who holds each slot, step by step ({t['source']} runs of the workload)")
    y = 44
    for policy, name in runs:
        run = t[policy]
        slots, segs = run["slots"], run["segments"]
        busy = sum(s["steps"] for s in segs if s["kind"] in ("prefill", "decode"))
        wasted = sum(s["steps"] for s in segs if s["kind"] == "padding")
        total = slots * run["steps"]
        svg.text(left, y + 12, f"{name}: {run['steps']} steps, {max(s['end'] for s in segs):.2f} s; slot-steps: "
                               f"{busy / total:.0%} made a token, {wasted / total:.0%} padding, "
                               f"{(total - busy - wasted) / total:.0%} idle", size=FONT)
        y += 20
        for slot in range(slots):
            svg.rect(left, y + slot * row, right - left, row - 3, "#f3f4f6")
            svg.text(left - 8, y + slot * row + row - 6, f"slot {slot}", size=SMALL, anchor="end")
        labelled = set()
        for s in segs:
            x0, x1 = left + s["start"] * scale, left + s["end"] * scale
            ry = y + s["slot"] * row
            fill = {"prefill": colour(s["request"]), "decode": colour(s["request"]), "padding": "url(#hatch)"}[s["kind"]]
            extra = ' fill-opacity="0.55"' if s["kind"] == "decode" else ""
            svg.rect(x0, ry, x1 - x0, row - 3, fill, extra=extra,
                     data={"policy": policy, "slot": s["slot"], "request": s["request"], "kind": s["kind"],
                           "steps": s["steps"], "first-step": s["first_step"]})
            label = str(s["request"])
            if s["kind"] == "decode" and (s["slot"], s["request"]) not in labelled and fits(label, x1 - x0):
                svg.text((x0 + x1) / 2, ry + row - 6.5, label, size=SMALL, anchor="middle")
                labelled.add((s["slot"], s["request"]))
        y += slots * row + 10
    for v in ticks(0, end):
        x = left + v * scale
        svg.add(f'<line x1="{x:.1f}" y1="{y - 6}" x2="{x:.1f}" y2="{y}" stroke="#111"/>')
        svg.text(x, y + 14, f"{v:g}", size=SMALL, anchor="middle")
    svg.text((left + right) / 2, y + 32, "time since the first arrival (s)", anchor="middle")
    y = svg.key(y + 58, [(swatch(PALETTE[0]), "prefill (one colour per request)"),
                         (swatch(PALETTE[0] + "8c"), "decode (its id on the bar)"),
                         (swatch("url(#hatch)"), "padding: computed, thrown away"),
                         (swatch("#f3f4f6"), "idle slot")])
    svg.write(path, y + 10)


def check_timeline(figures, root):
    problems = []
    t = figures["timeline"]
    lengths = figures["workload"]["lengths"]
    drawn = {}
    for r in root.iter():
        if r.get("data-policy"):
            drawn.setdefault(r.get("data-policy"), []).append(
                (int(r.get("data-slot")), int(r.get("data-request")), r.get("data-kind"), int(r.get("data-steps")),
                 int(r.get("data-first-step"))))
    for policy in ("static", "continuous"):
        run = t[policy]
        recorded = sorted((s["slot"], s["request"], s["kind"], s["steps"], s["first_step"]) for s in run["segments"])
        if sorted(drawn.get(policy, [])) != recorded:
            problems.append(f"timeline: the {policy} bars drawn ({len(drawn.get(policy, []))}) are not the record's "
                            f"{len(recorded)} segments")
        # The record with itself: each request made one token per slot-step it prefilled or decoded,
        # as many as the workload asked of it; no slot holds two requests at one step.
        made = {}
        for s in run["segments"]:
            if s["kind"] in ("prefill", "decode"):
                made[s["request"]] = made.get(s["request"], 0) + s["steps"]
        for i, n in enumerate(lengths):
            if made.get(i, 0) != n:
                problems.append(f"timeline: {policy}: request {i} holds a slot for {made.get(i, 0)} token-making steps, "
                                f"but asked for {n} tokens")
        for slot in range(run["slots"]):
            spans = sorted((s["first_step"], s["first_step"] + s["steps"]) for s in run["segments"] if s["slot"] == slot)
            if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
                problems.append(f"timeline: {policy}: slot {slot} holds two requests at one step")
    padding = sum(s["steps"] for s in t["static"]["segments"] if s["kind"] == "padding")
    for w in figures.get("workload_runs", []):
        if w["policy"] == "static" and w["run"] == t["source"] and w["summary"]["padding_rows"] != padding:
            problems.append(f"timeline: {padding} padding slot-steps drawn, table 3 counts {w['summary']['padding_rows']}")
    return problems


# --- chapter 07: the rounds -----------------------------------------------------------------------

MAX_ROUNDS = 14


def shown_token(s, limit=9):
    s = s.replace("\n", "↵").replace(" ", "␣").replace("\t", "⇥")
    return s if len(s) <= limit else s[:limit - 1] + "…"


def draw_rounds(figures, path):
    demo = figures.get("demo")
    if not demo or not demo.get("round_log"):
        raise PictureError("the record has no rounds of the demo (figures.demo.round_log)")
    rounds = demo["round_log"][:MAX_ROUNDS]
    box, gap, row, left = 78, 6, 30, 84
    svg = Svg(f"The demo's first {len(rounds)} rounds: draft “{demo['draft']}”, γ = {demo['gamma']}")
    svg.text(WIDTH / 2, 42, f"{demo['tokens']} tokens in {demo['rounds']} rounds, {demo['accepted']} of "
                            f"{demo['drafted']} guesses accepted (α = {demo['alpha']:.2f})", size=FONT, anchor="middle")
    target_x = left + demo["gamma"] * (box + gap) + 14
    guesses_head = "the draft's guesses, checked left to right"
    svg.text(target_x, 66, "the target's token", size=SMALL)
    if fits(guesses_head, target_x - left - 8):
        svg.text(left, 66, guesses_head, size=SMALL)
        y = 76
    else:  # a small γ: the heading on a line of its own
        svg.text(left, 84, guesses_head, size=SMALL)
        y = 94
    for i, r in enumerate(rounds):
        svg.text(left - 10, y + 19, f"round {i + 1}", size=SMALL, anchor="end")
        facts = {"round": i, "guesses": len(r["guesses"]), "accepted": r["accepted"], "bonus": str(r["bonus"]).lower(),
                 "emitted": r["emitted"]}
        svg.add("<g" + "".join(f' data-{k}="{esc(v)}"' for k, v in facts.items()) + ">")
        for k, guess in enumerate(r["guesses"]):
            x = left + k * (box + gap)
            state = "accepted" if k < r["accepted"] else "rejected" if k == r["accepted"] else "unchecked"
            fill = {"accepted": GREEN, "rejected": RED, "unchecked": "#ffffff"}[state]
            stroke = GREY if state == "unchecked" else "none"
            dash = ' stroke-dasharray="4 3"' if state == "unchecked" else ""
            svg.rect(x, y, box, row - 6, fill, stroke=stroke, extra=dash + ' rx="3"', data={"guess": k, "state": state})
            svg.text(x + box / 2, y + 17, shown_token(guess), size=SMALL, anchor="middle",
                     fill="#fff" if state != "unchecked" else "#6b7280")
            if state == "rejected":
                svg.add(f'<line x1="{x + 6}" y1="{y + 12}" x2="{x + box - 6}" y2="{y + 12}" stroke="#fff" stroke-width="1.5"/>')
        if r["emitted"] > r["accepted"]:
            fill = PURPLE if r["bonus"] else BLUE
            svg.rect(target_x, y, box, row - 6, fill, extra=' rx="3"',
                     data={"target": "bonus" if r["bonus"] else "correction"})
            svg.text(target_x + box / 2, y + 17, shown_token(r["next"]), size=SMALL, anchor="middle", fill="#fff")
        svg.text(target_x + box + 12, y + 17, f"+{r['emitted']}", size=SMALL)
        svg.add("</g>")
        y += row
    if demo["rounds"] > len(rounds):
        svg.text(left, y + 14, f"… {demo['rounds'] - len(rounds)} more rounds in the record", size=SMALL, fill="#6b7280")
        y += 20
    y = svg.key(y + 26, [(swatch(GREEN), "accepted guess"), (swatch(RED), "rejected guess"),
                         (swatch("#fff", GREY), "not checked (after a rejection)"),
                         (swatch(BLUE), "target's correction"), (swatch(PURPLE), "bonus (all accepted)")])
    svg.text(20, y + 14, "+n: tokens the round added for one target pass. ␣ is a space, ↵ a line break.", size=SMALL)
    svg.write(path, y + 28)


def check_rounds(figures, root):
    problems = []
    demo = figures["demo"]
    rounds = demo["round_log"]
    groups = [g for g in root.iter() if g.get("data-round") is not None]
    if len(groups) != min(len(rounds), MAX_ROUNDS):
        problems.append(f"rounds: {len(groups)} rounds drawn, the record has {len(rounds)} (at most {MAX_ROUNDS} shown)")
    for g in groups:
        r = rounds[int(g.get("data-round"))]
        states = [e.get("data-state") for e in g if e.get("data-state")]
        want = ["accepted"] * r["accepted"] + (["rejected"] if r["accepted"] < len(r["guesses"]) else [])
        want += ["unchecked"] * (len(r["guesses"]) - len(want))
        if states != want:
            problems.append(f"rounds: round {int(g.get('data-round')) + 1} is drawn {states}, the record says {want}")
        targets = [e.get("data-target") for e in g if e.get("data-target")]
        if r["emitted"] > r["accepted"] and targets != ["bonus" if r["bonus"] else "correction"]:
            problems.append(f"rounds: round {int(g.get('data-round')) + 1}'s target token is drawn as {targets}")
    # The record with itself: the rounds add up to the demo's counters.
    if len(rounds) != demo["rounds"]:
        problems.append(f"rounds: {len(rounds)} rounds recorded, the demo counted {demo['rounds']}")
    if sum(r["accepted"] for r in rounds) != demo["accepted"] or sum(len(r["guesses"]) for r in rounds) != demo["drafted"]:
        problems.append("rounds: the rounds' accepted and drafted guesses do not add up to the demo's counters")
    if sum(r["emitted"] for r in rounds) + 1 != demo["tokens"]:
        problems.append(f"rounds: the rounds add {sum(r['emitted'] for r in rounds)} tokens to the prefill's one, "
                        f"the demo generated {demo['tokens']}")
    if any(r["bonus"] != (r["accepted"] == len(r["guesses"])) for r in rounds):
        problems.append("rounds: a bonus token recorded after a rejection (or none after full acceptance)")
    return problems


# --- chapter 05: the pool's blocks over time ------------------------------------------------------

def draw_blocks(figures, path):
    trace = figures.get("block_trace")
    if not trace or not trace.get("steps"):
        raise PictureError("the record has no block trace (figures.block_trace.steps)")
    steps, n = trace["steps"], trace["blocks"]
    left, top = 70, 74
    cell_w = min(24, (WIDTH - left - 30) / len(steps))
    cell_h = max(6, min(14, 420 / n))
    svg = Svg(f"The pool's {n} blocks of {trace['block_size']} positions, step by step")
    svg.text(WIDTH / 2, 40, "each cell: who holds that physical block after the step", size=FONT, anchor="middle")
    for b in range(n):
        if b % max(1, round(16 / cell_h)) == 0:
            svg.text(left - 8, top + b * cell_h + cell_h - 1, f"{b}", size=SMALL, anchor="end")
    last_label = -99
    for i, st in enumerate(steps):
        x = left + i * cell_w
        cached = set(st.get("cached", []))
        for b, holders in enumerate(st["holders"]):
            y = top + b * cell_h
            if holders:
                fill = colour(holders[0])
                svg.rect(x, y, cell_w - 1, cell_h - 1, fill, data={"step": i, "block": b, "holders": " ".join(map(str, holders))})
                if len(holders) > 1:
                    svg.rect(x, y, cell_w - 1, cell_h - 1, "url(#hatch)", extra=' fill-opacity="0.6"')
            elif b in cached:
                svg.rect(x, y, cell_w - 1, cell_h - 1, "#d1d5db", data={"step": i, "block": b, "cached": "1"})
            else:
                svg.rect(x, y, cell_w - 1, cell_h - 1, "#f9fafb")
        for e in st["events"]:
            if e["kind"] == "copy":
                y0, y1 = top + e["from"] * cell_h + cell_h / 2, top + e["block"] * cell_h + cell_h / 2
                svg.add(f'<line x1="{x - cell_w / 2:.1f}" y1="{y0:.1f}" x2="{x + cell_w / 2:.1f}" y2="{y1:.1f}" '
                        f'stroke="#111" stroke-width="1.5" marker-end="url(#arrow)" data-copy="{e["from"]}-{e["block"]}" '
                        f'data-step="{i}"/>')
            if e["kind"] == "preempt":
                svg.add(f'<rect x="{x - 1:.1f}" y="{top - 4}" width="{cell_w + 1:.1f}" height="{n * cell_h + 8:.1f}" '
                        f'fill="none" stroke="{RED}" stroke-width="2" data-preempt="{e["request"]}" data-step="{i}"/>')
                if (x - last_label) > 64:  # "request 9 out" over the column, unless a label is close by
                    svg.text(x + cell_w / 2, top - 8, f"request {e['request']} out", size=SMALL, anchor="middle", fill=RED)
                    last_label = x
    bottom = top + n * cell_h
    svg.text(24, top + n * cell_h / 2, "block", size=SMALL, anchor="middle")
    every = max(1, round(40 / cell_w))
    for i in range(0, len(steps), every):
        svg.text(left + i * cell_w + cell_w / 2, bottom + 16, str(i), size=SMALL, anchor="middle")
    svg.text(left + len(steps) * cell_w / 2, bottom + 34, "step", anchor="middle")
    entries = [(swatch(colour(r["id"])), f"request {r['id']}: {r['label']}") for r in trace["requests"]]
    y = svg.key(bottom + 62, entries)
    y = svg.key(y + 16, [(swatch("url(#hatch)"), "shared (2 or more holders)"), (swatch("#d1d5db"), "free, still cached"),
                         (lambda x, yy: f'<line x1="{x}" y1="{yy + 10}" x2="{x + 16}" y2="{yy + 2}" stroke="#111" '
                                        f'stroke-width="1.5" marker-end="url(#arrow)"/>', "copy on write"),
                         (swatch("#fff", RED), "a preemption: its blocks freed")])
    svg.write(path, y + 10)


def check_blocks(figures, root):
    problems = []
    trace = figures["block_trace"]
    steps, n = trace["steps"], trace["blocks"]
    drawn = {}
    for r in root.iter():
        if r.get("data-holders") is not None:
            drawn[(int(r.get("data-step")), int(r.get("data-block")))] = [int(h) for h in r.get("data-holders").split()]
    recorded = {(i, b): h for i, st in enumerate(steps) for b, h in enumerate(st["holders"]) if h}
    if drawn != recorded:
        wrong = sorted(k for k in set(drawn) | set(recorded) if drawn.get(k) != recorded.get(k))
        problems.append(f"blocks: {len(wrong)} cells drawn unlike the record (first: step {wrong[0][0]}, block {wrong[0][1]})")
    # The record with itself: replaying the events from an empty pool gives every snapshot.
    held = [[] for _ in range(n)]
    for i, st in enumerate(steps):
        for e in st["events"]:
            kind, r = e["kind"], e.get("request")
            if kind in ("allocate", "adopt", "share", "copy"):
                if kind in ("allocate", "copy") and held[e["block"]]:
                    problems.append(f"blocks: step {i}: {kind} of block {e['block']}, which {held[e['block']]} hold")
                held[e["block"]].append(r)
            elif kind == "free":
                if r in held[e["block"]]:
                    held[e["block"]].remove(r)
                else:
                    problems.append(f"blocks: step {i}: request {r} frees block {e['block']}, which it does not hold")
            elif kind == "preempt":
                for b in e["blocks"]:
                    if r in held[b]:
                        held[b].remove(r)
                    else:
                        problems.append(f"blocks: step {i}: preempted request {r} did not hold block {b}")
            if kind == "copy" and r in held[e["from"]]:
                held[e["from"]].remove(r)
        if [sorted(h) for h in held] != [sorted(h) for h in st["holders"]]:
            problems.append(f"blocks: replaying the events up to step {i} does not give its snapshot")
            held = [list(h) for h in st["holders"]]
        if set(st.get("cached", [])) & {b for b in range(n) if st["holders"][b]}:
            problems.append(f"blocks: step {i}: a block both held and listed as cached")
    return problems


DRAW = {"timeline": draw_timeline, "rounds": draw_rounds, "blocks": draw_blocks}
CHECK = {"timeline": check_timeline, "rounds": check_rounds, "blocks": check_blocks}


def draw(kind, figures, path):
    DRAW[kind](figures, path)


def check(kind, figures, svg_text):
    """The problems, one line each, between a picture (its SVG text) and the record's figures."""
    try:
        root = ET.fromstring(svg_text)
    except ET.ParseError as e:
        return [f"{kind}: the SVG does not parse ({e})"]
    try:
        return CHECK[kind](figures, root)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        return [f"{kind}: cannot check against the record ({type(e).__name__}: {e})"]
