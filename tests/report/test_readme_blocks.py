#!/usr/bin/env python3
"""Unit tests of docs/course/readme_blocks.py: how a run's log becomes a README block, and how a
block edited by hand is caught."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "course"))
import readme_blocks  # noqa: E402

LOG = """$ build/chapters/09_x/ch09_x -n 4 -t 2 --csv build/course/records/09-a.csv --json build/course/records/09-a.json
loaded the model
First table: a title
a  b
----
1  2

Second table
c
-
3
total: 4 tokens
"""


class ShownOutput(unittest.TestCase):
    def test_whole_log_without_bookkeeping_flags(self):
        body = readme_blocks.shown_output(LOG, "")
        self.assertTrue(body.startswith("```\n$ ./build/chapters/09_x/ch09_x -n 4 -t 2\nloaded the model\n"))
        self.assertNotIn("--csv", body)
        self.assertTrue(body.endswith("total: 4 tokens\n```\n"))

    def test_head_and_tail(self):
        body = readme_blocks.shown_output(LOG, " head=2 tail=1")
        self.assertEqual(body, "```\n$ ./build/chapters/09_x/ch09_x -n 4 -t 2\nloaded the model\n"
                               "First table: a title\n...\ntotal: 4 tokens\n```\n")

    def test_one_table_by_its_title(self):
        self.assertEqual(readme_blocks.shown_output(LOG, ' table="First table"'),
                         "```\nFirst table: a title\na  b\n----\n1  2\n```\n")
        self.assertEqual(readme_blocks.shown_output(LOG, ' table="Second"'),
                         "```\nSecond table\nc\n-\n3\ntotal: 4 tokens\n```\n")
        with self.assertRaises(KeyError):
            readme_blocks.shown_output(LOG, ' table="Third"')

    def test_command_alone(self):
        self.assertEqual(readme_blocks.shown_output(LOG, " command"), "```\n$ ./build/chapters/09_x/ch09_x -n 4 -t 2\n```\n")


class UpdateAndCheck(unittest.TestCase):
    def test_update_writes_checksums_and_check_catches_a_hand_edit(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "chapters" / "09_x").mkdir(parents=True)
            readme = root / "chapters" / "09_x" / "README.md"
            readme.write_text("# X\n\n<!-- output: 09-a table=\"First\" -->\nold\n<!-- /output 09-a · none · 000000000000 -->\n")
            records = root / "records"
            records.mkdir()
            (records / "09-a.log").write_text(LOG)
            # A quick run's record does not replace a README block: the prose describes the full run.
            self.assertEqual(len(readme_blocks.update(root, records, "m", full_runs=set())), 1)
            self.assertIn("old", readme.read_text())
            self.assertEqual(readme_blocks.update(root, records, "a machine, 2 threads, 2026-12-01", {"09-a"}), [])
            text = readme.read_text()
            self.assertIn("First table: a title\na  b", text)
            self.assertIn("<!-- /output 09-a · a machine, 2 threads, 2026-12-01 · ", text)
            self.assertEqual(readme_blocks.check(root), (1, []))
            readme.write_text(text.replace("1  2", "1  3"))
            blocks, problems = readme_blocks.check(root)
            self.assertEqual(blocks, 1)
            self.assertEqual(len(problems), 1)
            self.assertIn("edited by hand", problems[0])

    def test_a_part_with_its_own_readme_is_written_and_checked(self):
        # chapter 06's part 2 keeps its blocks in chapters/06_quantization/packed/README.md
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "chapters" / "09_x" / "part").mkdir(parents=True)
            readme = root / "chapters" / "09_x" / "part" / "README.md"
            readme.write_text("<!-- output: 09-a command -->\nold\n<!-- /output 09-a · none · 000000000000 -->\n")
            records = root / "records"
            records.mkdir()
            (records / "09-a.log").write_text(LOG)
            self.assertEqual(readme_blocks.update(root, records, "m", {"09-a"}), [])
            self.assertIn("$ ./build/chapters/09_x/ch09_x -n 4 -t 2", readme.read_text())
            readme.write_text(readme.read_text().replace("-n 4", "-n 5"))
            self.assertEqual(len(readme_blocks.check(root)[1]), 1)

    def test_a_block_without_a_record_is_reported_and_left(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "chapters" / "09_x").mkdir(parents=True)
            readme = root / "chapters" / "09_x" / "README.md"
            original = "<!-- output: 09-b -->\nold\n<!-- /output 09-b · none · 000000000000 -->\n"
            readme.write_text(original)
            missing = readme_blocks.update(root, root / "records", "m", {"09-b"})
            self.assertEqual(len(missing), 1)
            self.assertEqual(readme.read_text(), original)

    def test_only_the_runs_just_made_are_rewritten(self):
        # course.py --chapters 02 --update-readmes: another chapter's record in the same folder
        # (older, maybe from a slower minute) must not replace its block under this run's stamp.
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            blocks = {}
            for name, chapter in (("09-a", "09_x"), ("10-a", "10_y")):
                (root / "chapters" / chapter).mkdir(parents=True)
                blocks[name] = root / "chapters" / chapter / "README.md"
                blocks[name].write_text(f"<!-- output: {name} -->\nold\n<!-- /output {name} · none · 000000000000 -->\n")
            records = root / "records"
            records.mkdir()
            for name in blocks:
                (records / f"{name}.log").write_text(LOG)
            self.assertEqual(readme_blocks.update(root, records, "today", {"09-a", "10-a"}, only={"09-a"}), [])
            self.assertIn("total: 4 tokens", blocks["09-a"].read_text())
            self.assertIn("old", blocks["10-a"].read_text())


if __name__ == "__main__":
    unittest.main()
