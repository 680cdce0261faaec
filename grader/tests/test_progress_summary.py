"""The progress line and the class summary (gradebook, histogram, students who need a look)."""
import io
import json
from pathlib import Path

from grader import summary
from grader.progress import Counts, Progress, clock, eta, progress_line


def test_clock_and_eta():
    assert clock(0) == "0:00" and clock(65) == "1:05" and clock(3723) == "1:02:03"
    assert eta(100.0, 10, 30) == 300.0
    assert eta(5.0, 0, 30) is None  # nothing graded yet in this run: no rate to go by
    assert eta(5.0, 3, 0) == 0.0


def test_progress_line_counts_kept_students_as_done_but_not_in_the_rate():
    line = progress_line(Counts(total=200, done=60, kept=50, needs_look=4), elapsed_s=100.0)
    assert line == "60/200 done (50 kept from before), 4 need a look, 1:40 elapsed, ETA 23:20"
    assert "ETA --:--" in progress_line(Counts(total=5), elapsed_s=3.0)


def test_progress_in_a_log_is_one_plain_line_per_student():
    stream = io.StringIO()
    progress = Progress(3, stream, tty=False)
    progress.finished("alice", 100.0, 100.0, [])
    progress.finished("bob", 0.0, 100.0, ["build error"])
    progress.kept("carol")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert lines[0].startswith("alice") and "100.00 / 100" in lines[0] and "[1/3 done, 0 need a look" in lines[0]
    assert "needs a look: build error" in lines[1] and "[2/3 done, 1 need a look" in lines[1]
    assert "kept" in lines[2] and "3/3 done (1 kept from before)" in lines[2]


def test_a_score_past_the_maximum_says_it_is_extra_credit():
    stream = io.StringIO()
    Progress(1, stream, tty=False).finished("alice", 106.0, 90.0, [], extra_credit=16.0)
    assert "106.00 / 90 (+16 extra credit)" in stream.getvalue()


def test_progress_on_a_terminal_rewrites_its_line():
    stream = io.StringIO()
    progress = Progress(2, stream, tty=True)
    progress.finished("alice", 50.0, 100.0, [])
    progress.close()
    text = stream.getvalue()
    assert text.startswith("\r\x1b[Kalice") and "\n1/2 done" in text and text.endswith("\n")


def result(score: float, attention=()) -> dict:
    return {"score": score, "tests": [], "extra_data": {"attention": list(attention), "lab": "01-vector-add",
                                                        "max_points": 100.0}}


def test_histogram_bins_cover_zero_to_the_maximum():
    table = summary.histogram([0, 9.9, 10, 55, 100, 105], 100)
    assert [count for _, _, count in table] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]  # 100 and extra credit: top bin
    assert table[0][:2] == (0, 10) and table[-1][:2] == (90, 100)


def test_summary_gradebook_and_picture_from_the_results(tmp_path: Path):
    for name, r in {"alice": result(100), "bob": result(0, ["build error"]), "carol": result(72.5),
                    "dave": result(0, ["refused at intake: uses 'system'"])}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(r))
    text = summary.write_all(tmp_path, "01-vector-add", 100.0, ["alice", "bob", "carol", "dave", "erin"])
    assert text.startswith("01-vector-add: 4 students graded, mean 43.1, median 36.2 / 100; 1 with full marks")
    assert "Needs a TA's look: 2" in text
    assert "  bob " in text and "build error" in text and "refused at intake: uses 'system'" in text
    assert "Not graded yet (1; run grade-class again to finish): erin" in text
    assert "Score distribution (out of 100):" in text  # also for a lab with no questions graded by hand
    assert (tmp_path / "summary.txt").read_text() == text
    assert (tmp_path / "gradebook.csv").read_text().splitlines() == [
        "student,01-vector-add,max", "alice,100.0,100.0", "bob,0.0,100.0", "carol,72.5,100.0", "dave,0.0,100.0"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "no matplotlib" in text
        return
    assert (tmp_path / "histogram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_reference_timings_of_each_gpu_are_summed_up_with_a_warning_where_one_moved(tmp_path: Path):
    def run(median: float, failed=()):
        return {"at": 0.0, "medians": {"k": median} if not failed else {}, "failed": list(failed)}
    summary.write_reference_timings(tmp_path, "GPU-a", "H100", [run(1e-3), run(1.05e-3)])
    summary.write_reference_timings(tmp_path, "GPU-b", "H100 (2)", [run(1e-3), run(0.8e-3)])
    summary.write_reference_timings(tmp_path, "GPU-c", "", [run(1e-3), run(0, ["k case: crashed"])])
    summary.write_reference_timings(tmp_path, "GPU-d", "H100 (4)", [run(1e-3)])
    lines = summary.reference_timings_text(tmp_path)
    text = "\n".join(lines)
    assert "H100: at the start and at the end: k 1.000 -> 1.050 ms (+5.0%)" in text
    assert "WARNING: on H100 (2) the reference's own time moved by -20% during the run" in text
    assert "WARNING: on GPU-c the reference's timing at the end failed (k case: crashed)" in text
    assert "H100 (4): timed once" in text
    assert text.count("WARNING") == 2
    assert summary.reference_timings_text(tmp_path / "nothing") == []
