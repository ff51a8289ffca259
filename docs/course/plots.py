"""The report's plots: each drawn by gnuplot from one CSV table of a run, checked before it is drawn.

A plot never hides a problem in its table. It stops the report (PlotError, one line naming the
plot, the table and the cell) when the table or a column is missing, a column prefix is ambiguous,
a plotted cell is not a number, fewer than two points remain, two bars would share a label, or a
log axis meets a value ≤ 0. Rows are left out only by the plot's spec (`rows`, `skip`), and the
plots.json manifest names every row left out and why, so tests/report/check_report.py can check
each plot's data file against the record, row by row.

One style for every figure: a fixed 760 × 460 canvas (shown at that size, never scaled down),
13 px text, the key below the plot area (never over the data), measured series solid and
predictions dashed (hatched bars), reference lines grey and dotted, the course's figure brown and
dash-dotted, units taken from the CSV headers (never typed by hand), log axes only where a spec
asks for them. Point labels are placed by a greedy search that keeps them apart and off the points
(with a leader line when moved away); the browser test checks the drawn text's bounding boxes.

The plots a binary draws itself (lib/measure/svg_plot) are not drawn here, but own_series() names,
for each of their curves, the record's rows that hold its points (plots/own_plots.json), so that
check_report.py can compare them with the points the SVG carries.
"""
import math
import re
import statistics
import subprocess

WIDTH, HEIGHT = 760, 460
FONT = 13                    # px: ticks, key, axis titles
LABEL_FONT = 12              # px: point labels
TITLE_FONT = 15
CHAR = 0.64                  # a character's width, as a share of the font size (generous, for placement)
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
REFERENCE = "#555555"
COURSE = "#a0522d"           # the course text's figure as a reference line
OFF_SCALE = "#b91c1c"
UNIT = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>[^()]*)\)\s*$")


class PlotError(Exception):
    """A plot that cannot be drawn truthfully; the message is one line."""


# --- reading the table ----------------------------------------------------------------------------

def column(table, prefix, what):
    """The index of the column headed `prefix` (exactly), or else of the one column whose header starts so."""
    headers = table["headers"]
    if headers.count(prefix) > 1:
        raise PlotError(f"{what}: {headers.count(prefix)} columns of table '{table['title']}' are headed '{prefix}'")
    if prefix in headers:
        return headers.index(prefix)
    found = [i for i, h in enumerate(headers) if h.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise PlotError(f"{what}: no column '{prefix}' in table '{table['title']}' (columns: {', '.join(headers)})")
    raise PlotError(f"{what}: column prefix '{prefix}' matches {len(found)} columns of table '{table['title']}' "
                    f"({', '.join(headers[i] for i in found)}): name one exactly")


def number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def unit_of(header):
    """(name, unit) of a CSV header: "time (ms)" → ("time", "ms"). A parenthesis with a space or a
    digit in it is part of the name ("decode tok/s (ctx 128)"), not a unit."""
    m = UNIT.match(header)
    if m and len(m.group("unit")) <= 12 and not any(c.isspace() or c.isdigit() for c in m.group("unit")):
        return m.group("name"), m.group("unit")
    return header, None


def axis_title(label, headers, what):
    """The spec's axis title with the unit of its columns' headers; all plotted columns must agree on it."""
    units = {unit_of(h)[1] for h in headers}
    if len(units) > 1:
        raise PlotError(f"{what}: the columns {', '.join(headers)} have different units: they cannot share an axis")
    unit = units.pop()
    if not label:
        label = unit_of(headers[0])[0] if len(headers) == 1 else ""
    return f"{label} ({unit})" if unit else label


def select_rows(plot, table):
    """(plotted row indices, [(index, first cell, why) of rows left out by the spec])."""
    kept, left_out = [], []
    for i, row in enumerate(table["rows"]):
        first = row[0].strip() if row else ""
        if plot.rows is not None and not first.startswith(plot.rows):
            left_out.append((i, first, f"the plot keeps only rows starting '{plot.rows}'"))
        elif any(first.startswith(s) for s in plot.skip):
            left_out.append((i, first, f"the plot leaves out rows starting '{next(s for s in plot.skip if first.startswith(s))}'"))
        else:
            kept.append(i)
    return kept, left_out


def parsed(cell, header, parse):
    """A cell's number: the cell itself, or group 1 of the spec's regex for its column ("507 (86.9)" → "86.9")."""
    if header in parse and (m := re.search(parse[header], cell)):
        return m.group(1)
    return cell


def values(plot, table, rows, columns, what):
    """The numbers of `columns` in `rows`; a cell that is not a number stops the plot."""
    out = []
    for i in rows:
        row = table["rows"][i]
        got = []
        for c in columns:
            cell = row[c] if c < len(row) else ""
            v = number(parsed(cell, table["headers"][c], plot.parse))
            if v is None:
                raise PlotError(f"{what}: row '{row[0].strip()}' of table '{table['title']}' has '{cell}' in column "
                                f"'{table['headers'][c]}', not a number")
            got.append(v)
        out.append(got)
    return out


# --- axes and label placement -----------------------------------------------------------------------

def axis_range(lo, hi, log, zero=False):
    """A little room around [lo, hi]; a linear axis of positive values starts at 0 when `zero`."""
    if log:
        pad = max((hi / lo) ** 0.06, 1.15)
        return lo / pad, hi * pad
    if zero and lo >= 0:
        lo = 0.0
    span = (hi - lo) or abs(hi) or 1.0
    return (lo - 0.06 * span if not (zero and lo == 0) else lo), hi + 0.08 * span


def log_tics(lo, hi):
    """Powers of two over a short range (tokens, bits), 1-2-5 decades over a longer one, decades over a long one."""
    if hi / lo <= 64:
        return [2.0 ** k for k in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1)]
    steps = (1, 2, 5) if hi / lo <= 1e4 else (1,)
    return [m * 10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in steps if lo <= m * 10.0 ** k <= hi]


def tic_text(v):
    return f"{v:g}"


class Frame:
    """The plot area on the canvas, in pixels (y down), and the map from data to it."""

    def __init__(self, left, right, top, bottom, xr, yr, logx, logy):
        self.left, self.right, self.top, self.bottom = left, WIDTH - right, top, HEIGHT - bottom
        self.xr, self.yr, self.logx, self.logy = xr, yr, logx, logy

    def _f(self, v, r, log):
        return (math.log(v / r[0]) / math.log(r[1] / r[0])) if log else (v - r[0]) / (r[1] - r[0])

    def px(self, x):
        return self.left + (self.right - self.left) * self._f(x, self.xr, self.logx)

    def py(self, y):
        return self.bottom - (self.bottom - self.top) * self._f(y, self.yr, self.logy)

    def margins(self):
        return [f"set lmargin at screen {self.left / WIDTH:.5f}", f"set rmargin at screen {self.right / WIDTH:.5f}",
                f"set tmargin at screen {1 - self.top / HEIGHT:.5f}", f"set bmargin at screen {1 - self.bottom / HEIGHT:.5f}"]


def text_box(text, font):
    return len(text) * CHAR * font, font * 1.3


def overlaps(a, b, pad=2.0):
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def place_labels(frame, points, taken=()):
    """Greedy label placement. points: [(px, py, text)]; returns [(x_left, y_centre, leader)] in
    pixels, where leader says whether a line joins the label to its point. Crowded points choose
    first; each tries beside its point, then ever further out in 16 directions. Labels stay inside
    the plot area, off every point marker and off each other; a label that finds no room stops the plot."""
    marks = [(x - 6, y - 6, x + 6, y + 6) for x, y, _ in points]
    boxes = list(taken)
    crowd = [sum(1 for q in points if abs(q[0] - p[0]) < 60 and abs(q[1] - p[1]) < 30) for p in points]
    order = sorted(range(len(points)), key=lambda i: (-crowd[i], points[i][1]))
    placed = [None] * len(points)
    inside = (frame.left + 2, frame.top + 2, frame.right - 2, frame.bottom - 2)
    for i in order:
        x, y, text = points[i]
        w, h = text_box(text, LABEL_FONT)
        candidates = [(x + 9, y, False), (x - 9 - w, y, False), (x - w / 2, y - 9 - h / 2, False), (x - w / 2, y + 9 + h / 2, False)]
        for r in (24, 38, 54, 74, 98, 126, 160):
            for k in range(16):
                angle = math.pi * 2 * k / 16
                ax, ay = x + r * math.cos(angle), y - r * math.sin(angle)
                c = math.cos(angle)
                left = ax if c > 0.3 else ax - w if c < -0.3 else ax - w / 2
                centre = ay if abs(c) > 0.3 else ay - h / 2 if math.sin(angle) > 0 else ay + h / 2
                candidates.append((left, centre, True))
        for left, centre, leader in candidates:
            box = (left, centre - h / 2, left + w, centre + h / 2)
            if not (box[0] >= inside[0] and box[2] <= inside[2] and box[1] >= inside[1] and box[3] <= inside[3]):
                continue
            if any(overlaps(box, m, 1.0) for m in marks) or any(overlaps(box, b) for b in boxes):
                continue
            boxes.append(box)
            placed[i] = (left, centre, leader)
            break
        else:
            raise PlotError(f"the point labels do not fit without overlapping (no room for '{text}')")
    return placed


def nearest_on_box(x, y, box):
    return min(max(x, box[0]), box[2]), min(max(y, box[1]), box[3])


def gq(s):
    """A gnuplot string."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- drawing --------------------------------------------------------------------------------------

def preamble(svg_name, title):
    """The canvas, and the title centred on it (gnuplot's own title centres on the plot area,
    which a long bar label moves); a title wider than the canvas stops the plot."""
    if text_box(title, TITLE_FONT)[0] > WIDTH - 20:
        raise PlotError(f"plot '{title}': the title is too long for a {WIDTH}-pixel figure")
    return [
        f"set terminal svg size {WIDTH},{HEIGHT} fixed noenhanced font 'sans,{FONT}' background '#ffffff'",
        f"set output {gq(svg_name)}", "unset key",
        f"set label {gq(title)} at screen 0.5,{1 - 22 / HEIGHT:.5f} center font ',{TITLE_FONT}'",
        "set border 3 lc rgb '#333333'", "set tics nomirror out", "set format x '%g'", "set format y '%g'",
        "set style line 100 lc rgb '#dddddd' lw 1 dt 1", "set grid back ls 100",
    ]


# A key entry: (title, kind, colour), kind one of "line", "predicted line", "bar", "predicted bar", "reference",
# "course" (the course text's figure).
SAMPLE, GAP = 30, 26          # px: a key sample's width; the space between entries


def key_rows(entries):
    """The key's entries in rows that fit the canvas, as [[(entry, width)]]."""
    rows, width = [], 0
    for e in entries:
        w = SAMPLE + 6 + text_box(e[0], FONT)[0]
        if not rows or width + GAP + w > WIDTH - 40:
            rows.append([])
            width = -GAP
        rows[-1].append((e, w))
        width += GAP + w
    return rows


def bottom_margin(entries):
    """Room below the plot area: tick labels and the axis title, then the key's rows."""
    return 74 + 22 * len(key_rows(entries)) + (4 if entries else 0)


def key_lines(entries):
    """The key, drawn by hand below the x-axis title (never over the data), each row centred."""
    out = []
    top = HEIGHT - bottom_margin(entries) + 66
    for r, row in enumerate(key_rows(entries)):
        x = (WIDTH - (sum(w for _, w in row) + GAP * (len(row) - 1))) / 2
        y = top + 11 + 22 * r
        sy = 1 - y / HEIGHT
        for (title, kind, colour), w in row:
            x0, x1 = x / WIDTH, (x + SAMPLE) / WIDTH
            if kind.endswith("bar"):
                fill = "fs pattern 4" if kind.startswith("predicted") else "fs solid 0.85"
                out.append(f"set object rect from screen {x0:.5f},{sy - 6 / HEIGHT:.5f} to screen {x1:.5f},{sy + 6 / HEIGHT:.5f} "
                           f"fc rgb '{colour}' {fill} border lc rgb '{colour}' front")
            else:
                dash = {"reference": "dt 3 lw 1.6", "course": "dt 4 lw 1.8"}.get(kind) or \
                    ("dt 2 lw 2" if kind.startswith("predicted") else "dt 1 lw 2")
                out.append(f"set arrow from screen {x0:.5f},{sy:.5f} to screen {x1:.5f},{sy:.5f} nohead {dash} lc rgb '{colour}' front")
                if kind not in ("reference", "course"):
                    pt = 6 if kind.startswith("predicted") else 7
                    out.append(f"set label '' at screen {(x0 + x1) / 2:.5f},{sy:.5f} point pt {pt} ps 0.9 lc rgb '{colour}' front")
            out.append(f"set label {gq(title)} at screen {(x + SAMPLE + 6) / WIDTH:.5f},{sy:.5f} left front")
            x += w + GAP
    return out


def colours(predicted):
    """Palette indices: a predicted column shares the colour of the measured column before it."""
    out, c = [], 0
    for j, p in enumerate(predicted):
        if p and j > 0 and not predicted[j - 1]:
            out.append(out[-1])
        else:
            out.append(c)
            c += 1
    return [PALETTE[i % len(PALETTE)] for i in out]


def draw(plot, tables, path, record_name):
    """Writes path.svg, its data (.tsv) and its gnuplot script (.gp); returns the manifest entry.
    Raises PlotError when the table cannot be plotted truthfully."""
    what = f"plot '{plot.title}'"
    from_table = next((t for t in tables if t["number"] == plot.table or (not t["number"] and t["title"].startswith(plot.table))), None)
    if from_table is None:
        raise PlotError(f"{what}: run '{plot.run}' printed no table '{plot.table}' "
                        f"(it has: {'; '.join(t['title'][:40] for t in tables) or 'no tables'})")
    t = from_table
    unknown = [h for h in plot.parse if h not in t["headers"]]
    if unknown:
        raise PlotError(f"{what}: parse names no column of table '{t['title']}': {', '.join(unknown)}")
    ys = [column(t, y, what) for y in plot.ys]
    x = column(t, plot.x, what)
    label = column(t, plot.labels, what) if plot.labels else None
    rows, left_out = select_rows(plot, t)
    if len(rows) < 2:
        raise PlotError(f"{what}: {len(rows)} point{'s' if len(rows) != 1 else ''} from table '{t['title']}' "
                        f"(a plot needs at least two; quick-mode tables too short belong in a README run)")
    if plot.bars:
        data = values(plot, t, rows, ys, what)
        cells = [{h: (r[i] if i < len(r) else "") for i, h in enumerate(t["headers"])} for r in (t["rows"][i] for i in rows)]
        categories = [(plot.category(c) if plot.category else c[t["headers"][x]]).strip() for c in cells]
        repeated = sorted({c for c in categories if categories.count(c) > 1})
        if repeated:
            raise PlotError(f"{what}: two bars would share the label '{repeated[0]}' (give the plot a category that tells them apart)")
    else:
        data = values(plot, t, rows, [x] + ys, what)
        categories = [t["rows"][i][label].strip() for i in rows] if label is not None else None
    flat = [v for row in data for v in (row if plot.bars else row[1:])]
    if plot.logy and min(flat) <= 0:
        raise PlotError(f"{what}: a log axis cannot show {min(flat):g} (a value ≤ 0 in table '{t['title']}')")
    if plot.logx and not plot.bars and min(r[0] for r in data) <= 0:
        raise PlotError(f"{what}: a log x axis cannot show {min(r[0] for r in data):g}")

    headers = [t["headers"][c] for c in ys]
    scale = 1.0
    if all(unit_of(h)[1] == "s" for h in headers) and max(abs(v) for v in flat) < 2:
        scale = 1000.0  # seconds that are all short: shown in ms (the data file keeps the record's seconds)
    value_title = axis_title(plot.ylabel, headers, what)
    if scale == 1000.0:
        value_title = value_title[:-len("(s)")] + "(ms)"
    names = list(plot.names) if plot.names else [unit_of(h)[0] for h in headers]
    if len(names) != len(headers):
        raise PlotError(f"{what}: {len(names)} names for {len(headers)} value columns")

    data_path = path.with_suffix(".tsv")
    lines = []
    for k, row in enumerate(data):
        if plot.bars:
            lines.append(gq(categories[k].replace('"', "'")) + "\t" + "\t".join(f"{v:.10g}" for v in row))
        else:
            lines.append("\t".join(f"{v:.10g}" for v in row) + (f"\t{gq(categories[k])}" if categories else ""))
    data_path.write_text("\n".join(lines) + "\n")

    script = preamble(path.name, plot.title)
    refs = [resolve_ref(r, t, ys[0], what) for r in plot.refs]
    predicted = [any(h.startswith(p) for p in plot.predicted) for h in headers]
    if plot.bars:
        script += bars(plot, data, categories, names, predicted, refs, value_title, scale, data_path.name)
    else:
        xtitle = axis_title(plot.xlabel, [t["headers"][x]], what)
        script += xy(plot, data, categories, names, predicted, refs, xtitle, value_title, scale, data_path.name)
    gp = path.with_suffix(".gp")
    gp.write_text("\n".join(script) + "\n")
    r = subprocess.run(["gnuplot", gp.name], cwd=path.parent, capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        raise PlotError(f"{what}: gnuplot failed on {gp.name}: {' '.join(r.stderr.split())[:300]}")
    return {"svg": f"plots/{path.name}", "data": f"plots/{data_path.name}", "script": f"plots/{gp.name}",
            "record": f"records/{record_name}", "table": t["title"], "kind": "bars" if plot.bars else "xy",
            "x": None if plot.bars else t["headers"][x], "ys": headers, "label": t["headers"][label] if label is not None else None,
            "rows": rows, "left_out": [{"row": i, "first_cell": f, "why": why} for i, f, why in left_out],
            "scale": scale, "title": plot.title, "parse": dict(plot.parse)}


def resolve_ref(ref, table, first_y, what):
    """A reference line's value: given, or the cell of row `row` in the plot's first value column."""
    if ref.row is None:
        return ref
    row = next((r for r in table["rows"] if r[0].strip().startswith(ref.row)), None)
    value = number(row[first_y]) if row is not None else None
    if value is None:
        raise PlotError(f"{what}: reference '{ref.label}' needs a number in row '{ref.row}', column "
                        f"'{table['headers'][first_y]}' of table '{table['title']}'")
    return type(ref)(ref.label.format(value=value), value=value, course=ref.course)


def ref_style(ref):
    """A reference line: grey and dotted, or the course's figure: brown and dash-dotted."""
    return f"dt 4 lw 1.8 lc rgb '{COURSE}'" if ref.course else f"dt 3 lw 1.6 lc rgb '{REFERENCE}'"


def ref_entry(ref):
    return (ref.label, "course", COURSE) if ref.course else (ref.label, "reference", REFERENCE)


def bars(plot, data, categories, names, predicted, refs, value_title, scale, data_name):
    """Horizontal bars, one band per row (first row on top), one bar per value column; a single
    column's bars carry their values at their ends."""
    n, k = len(data), len(names)
    longest = max(len(c) for c in categories)
    left = 20 + longest * CHAR * FONT
    if left > WIDTH * 0.5:
        raise PlotError(f"plot '{plot.title}': the bar label '{max(categories, key=len)}' is too long for the figure")
    colour = colours(predicted)
    entries = [] if k == 1 and not refs else \
        [(nm, "predicted bar" if p else "bar", c) for nm, p, c in zip(names, predicted, colour)] + \
        [ref_entry(r) for r in refs]
    flat = [v * scale for row in data for v in row] + [r.value * scale for r in refs]
    lo, hi = min(flat), max(flat)
    if k == 1:  # room for the values at the bars' ends
        hi = hi * (hi / lo) ** 0.12 if plot.logy else hi * 1.1
    vr = axis_range(lo, hi, plot.logy, zero=not plot.logy)
    frame = Frame(left, 30, 44, bottom_margin(entries), vr, (-0.6, n - 0.4), plot.logy, False)
    out = frame.margins() + key_lines(entries)
    out += [f"set xrange [{vr[0]:.10g}:{vr[1]:.10g}]", f"set yrange [-0.6:{n - 0.4}]",
            f"set xlabel {gq(value_title)}", "set ylabel ''", "set grid noytics",
            "set ytics (" + ", ".join(f"{gq(c)} {n - 1 - i}" for i, c in enumerate(categories)) + ") scale 0"]
    if plot.logy:
        out += ["set logscale x", "set xtics (" + ", ".join(tic_text(v) for v in log_tics(*vr)) + ")"]
    band = 0.8 / k
    base = vr[0]  # bars start at the axis (0, or a log axis' lower end)
    parts = []
    for j in range(k):
        offset = 0.4 - band * (j + 0.5)  # the first column on top within its band
        fill = "fs pattern 4" if predicted[j] else "fs solid 0.85"
        y = f"{n - 1}-$0+{offset:.4f}"
        parts.append(f"{gq(data_name) if j == 0 else chr(39) * 2} using (${j + 2}*{scale:g}):({y}):({base:.10g}):(${j + 2}*{scale:g}):"
                     f"({y}-{band * 0.45:.4f}):({y}+{band * 0.45:.4f}) with boxxyerror {fill} border lc rgb '{colour[j]}' "
                     f"lc rgb '{colour[j]}' notitle")
    if k == 1:
        parts.append(f"'' using ($2*{scale:g}):({n - 1}-$0):(sprintf(' %g', $2*{scale:g})) with labels left "
                     f"font ',{LABEL_FONT}' notitle")
    for r in refs:
        out.append(f"set arrow from {r.value * scale:.10g}, graph 0 to {r.value * scale:.10g}, graph 1 nohead {ref_style(r)} front")
    out.append("plot " + ", \\\n     ".join(parts))
    return out


def xy(plot, data, labels, names, predicted, refs, xtitle, ytitle, scale, data_name):
    """Lines (one per value column), or a labelled scatter (one point per row, its label beside it)."""
    xs = [r[0] for r in data]
    ys = [v * scale for r in data for v in r[1:]]
    off_scale = set()
    if plot.clip:  # points far above the rest go to the top edge, marked, so the others stay readable
        median = statistics.median(ys)
        off_scale = {i for i, r in enumerate(data) if r[1] * scale > plot.clip * median}
        if len(off_scale) * 2 >= len(data):
            raise PlotError(f"plot '{plot.title}': {len(off_scale)} of {len(data)} points off scale: clip is wrong for this table")
    shown = [r[1] * scale for i, r in enumerate(data) if i not in off_scale] if labels else ys
    ref_values = [r.value * scale for r in refs if r.power is None]
    if not labels:  # a power law's line stays in view to the last x: its end is part of the y range
        ref_values += [data[0][1 + r.of] * scale * (max(xs) / data[0][0]) ** r.power for r in refs if r.power is not None]
    xr = axis_range(min(xs), max(xs), plot.logx)
    yr = axis_range(min(shown + ref_values), max(shown + ref_values), plot.logy, zero=not plot.logy)
    colour = colours(predicted)
    entries = [] if labels or (len(names) == 1 and not refs) else \
        [(nm, "predicted line" if p else "line", c) for nm, p, c in zip(names, predicted, colour)] + \
        [ref_entry(r) for r in refs]
    # Room on the left for the widest y tick label and the axis title beside it.
    tics = [tic_text(v) for v in log_tics(*yr)] if plot.logy else [f"{v:.3g}" for v in yr]
    left = max(84, 56 + max(len(t) for t in tics) * CHAR * FONT)
    frame = Frame(left, 30, 44, bottom_margin(entries), xr, yr, plot.logx, plot.logy)
    out = frame.margins() + key_lines(entries)
    out += [f"set xrange [{xr[0]:.10g}:{xr[1]:.10g}]", f"set yrange [{yr[0]:.10g}:{yr[1]:.10g}]",
            f"set xlabel {gq(xtitle)}", f"set ylabel {gq(ytitle)}"]
    if plot.logx:
        out += ["set logscale x", "set xtics (" + ", ".join(tic_text(v) for v in log_tics(*xr)) + ")"]
    if plot.logy:
        out += ["set logscale y", "set ytics (" + ", ".join(tic_text(v) for v in log_tics(*yr)) + ")"]
    parts = []
    if labels:
        top = yr[1]
        taken = []
        for r in refs:  # a horizontal reference, its label at the right end above the line
            out.append(f"set arrow from graph 0, first {r.value * scale:.10g} to graph 1, first {r.value * scale:.10g} nohead {ref_style(r)} back")
            w, h = text_box(r.label, LABEL_FONT)
            ly = frame.py(r.value * scale) - h / 2 - 3
            taken.append((frame.right - 6 - w, ly - h / 2, frame.right - 6, ly + h / 2))
            out.append(f"set label {gq(r.label)} at screen {(frame.right - 6 - w) / WIDTH:.5f},{1 - ly / HEIGHT:.5f} left "
                       f"font ',{LABEL_FONT}' textcolor rgb '{COURSE if r.course else REFERENCE}' front")
        points = []
        for i, r in enumerate(data):
            y = top if i in off_scale else r[1] * scale
            text = labels[i] + (f": {r[1]:.3g}, off scale ↑" if i in off_scale else "")
            points.append((frame.px(r[0]), frame.py(y), text))
        for i, ((x, y, text), (left, centre, leader)) in enumerate(zip(points, place_labels(frame, points, taken))):
            out.append(f"set label {gq(text)} at screen {left / WIDTH:.5f},{1 - centre / HEIGHT:.5f} left "
                       f"font ',{LABEL_FONT}' textcolor rgb '{OFF_SCALE if i in off_scale else '#222222'}' front")
            if leader:
                w, h = text_box(text, LABEL_FONT)
                ex, ey = nearest_on_box(x, y, (left, centre - h / 2, left + w, centre + h / 2))
                out.append(f"set arrow from screen {x / WIDTH:.5f},{1 - y / HEIGHT:.5f} to screen {ex / WIDTH:.5f},"
                           f"{1 - ey / HEIGHT:.5f} nohead lw 0.8 lc rgb '#999999' back")
        y_in = f"($2*{scale:g} <= {top:.10g} ? $2*{scale:g} : NaN)"
        parts.append(f"{gq(data_name)} using 1:{y_in} with points pt 7 ps 0.9 lc rgb '{PALETTE[0]}' notitle")
        if off_scale:  # at the top edge, a triangle pointing up: the value is above the axis
            parts.append(f"'' using 1:($2*{scale:g} > {top:.10g} ? {top:.10g} : NaN) with points pt 9 ps 1.4 "
                         f"lc rgb '{OFF_SCALE}' notitle")
    else:
        for j, name in enumerate(names):
            style = "dt 2 pt 6" if predicted[j] else "dt 1 pt 7"
            parts.append(f"{gq(data_name) if j == 0 else chr(39) * 2} using 1:(${j + 2}*{scale:g}) with linespoints lw 2 "
                         f"{style} ps 0.9 lc rgb '{colour[j]}' notitle")
        for r in refs:
            if r.power is not None:  # ∝ x^power through the first point of value column `of`
                x0, y0 = data[0][0], data[0][1 + r.of] * scale
                parts.append(f"{y0:.10g}*(x/{x0:.10g})**{r.power:g} with lines {ref_style(r)} notitle")
            else:
                parts.append(f"{r.value * scale:.10g} with lines {ref_style(r)} notitle")
    out.append("plot " + ", \\\n     ".join(parts))
    return out


# --- the binaries' own plots -----------------------------------------------------------------------

def own_series(plot, tables, figures, what):
    """What each curve of a binary-drawn plot (chapters.OwnPlot) must be, from the run's record, as
    plots/own_plots.json lists it for check_report.py: the curve's name, the table's title, the x
    and y headers and the rows holding its points in order (or a law, a reference value, a JSON
    figures list). A table, column or row the spec names that the record lacks, or a plotted cell
    that is not a number, stops the report (PlotError)."""
    out = []
    for spec in plot.series:
        if spec.figures is not None:  # chapter 08: one curve per entry of a figures list
            entries = figures.get(spec.figures) if isinstance(figures, dict) else None
            if not isinstance(entries, list) or not entries:
                raise PlotError(f"{what}: the record's figures have no list '{spec.figures}'")
            for i, e in enumerate(entries):
                try:
                    name = spec.name.format(**e)
                except KeyError as k:
                    raise PlotError(f"{what}: entry {i} of figures '{spec.figures}' has no field {k}") from None
                out.append({"name": name, "match": "prefix", "figures": spec.figures, "index": i})
            continue
        t = next((t for t in tables if t["number"] == spec.table or (not t["number"] and t["title"].startswith(spec.table))), None)
        if t is None:
            raise PlotError(f"{what}: the run printed no table '{spec.table}'")
        x, y = column(t, spec.x, what), column(t, spec.y, what)
        first = [r[0].strip() if r else "" for r in t["rows"]]
        rows = [i for i, f in enumerate(first) if spec.rows is None or f.startswith(spec.rows)]
        groups = list(dict.fromkeys(first[i] for i in rows)) if spec.group else [None]
        for g in groups:
            mine = [i for i in rows if g is None or first[i] == g]
            if not mine:
                raise PlotError(f"{what}: no row of table '{t['title']}' for the curve '{spec.name}'")
            for i in mine:
                for c in (x, y):
                    cell = t["rows"][i][c] if c < len(t["rows"][i]) else ""
                    if number(cell) is None:
                        raise PlotError(f"{what}: row '{first[i]}' of table '{t['title']}' has '{cell}' in column "
                                        f"'{t['headers'][c]}', not a number")
            entry = {"name": spec.name.replace("{}", g) if g is not None else spec.name, "match": "exact",
                     "table": t["title"], "x": t["headers"][x], "y": t["headers"][y], "rows": mine, "timed": spec.timed}
            if spec.law is not None:
                entry["law"] = list(spec.law)
            if spec.value is not None:
                entry["value"] = spec.value
            out.append(entry)
    names = [e["name"] for e in out]
    if len(set(names)) != len(names):
        raise PlotError(f"{what}: two curves are named alike ({', '.join(sorted({n for n in names if names.count(n) > 1}))})")
    return out
