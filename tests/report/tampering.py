"""The shape every "the check catches it" case of tests/report shares: break a report's files,
run a check, expect a problem naming given words, put the files back."""


def expect_problem(failures, case, files, edit, check, *words):
    """Saves `files`, runs edit(), then check() (a list of problem lines); notes a failure in
    `failures` unless one line holds every word of `words`; restores the files in any case."""
    saved = {p: p.read_text() for p in files}
    try:
        edit()
        problems = check()
    finally:
        for p, text in saved.items():
            p.write_text(text)
    hit = next((p for p in problems if all(w in p for w in words)), None)
    if hit is None:
        failures.append(f"{case}: the check did not say {words} (it said {problems})")
    else:
        print(f"ok: {case}: {hit}")
