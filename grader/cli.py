"""Command line: python3 -m grader <command> ...; `python3 -m grader --help` lists the commands."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from grader import buildinfo, record, release, report, skeleton
from grader.build import binary_path
from grader.config import REPO_ROOT, ConfigError, list_labs, load_lab
from grader.grade import GraderError, NoGpu, fresh_workroot, grade_class, grade_submission, remove_workroot
from grader.selfcheck import case_problems, check_lab

NO_GPU_EXIT = 3


def _labs(lab: str | None) -> list[str]:
    return [lab] if lab else list_labs()


def cmd_grade(args: argparse.Namespace) -> int:
    if args.submission and not args.lab:
        print("grade: --submission needs --lab", file=sys.stderr)
        return 2
    labs = _labs(args.lab)
    totals = []
    for lab in labs:
        config = load_lab(lab)
        submission = Path(args.submission) if args.submission else config.lab_dir
        workroot = fresh_workroot()
        try:
            graded = grade_submission(config, submission, workroot, with_reference=not args.no_reference)
        finally:
            remove_workroot(workroot, args.keep)
        results = Path(args.results) if args.results and len(labs) == 1 else Path(args.results_dir) / f"{lab}.json"
        report.write_json(results, graded.results)
        print(graded.table)
        print(f"(results written to {results})\n")
        totals.append((lab, graded.results["score"], config.max_points))
    if len(totals) > 1:
        print("Summary")
        for lab, score, maximum in totals:
            print(f"  {lab:<24} {score:7.1f} / {maximum:g}")
    return 0


def cmd_grade_class(args: argparse.Namespace) -> int:
    config = load_lab(args.lab)
    workroot = fresh_workroot()
    try:
        grade_class(config, Path(args.submissions), Path(args.out), workroot)
    finally:
        remove_workroot(workroot, args.keep)
    print(f"Gradebook: {Path(args.out) / 'gradebook.csv'}")
    return 0


def cmd_skeleton(args: argparse.Namespace) -> int:
    stale = 0
    for lab in _labs(args.lab):
        config = load_lab(lab)
        if config.solution_dir is None:
            continue
        if args.check:
            for diff in skeleton.differences(config):
                stale += 1
                print(diff)
        else:
            for path in skeleton.write(config):
                print(f"wrote {path.relative_to(REPO_ROOT)}")
    if stale:
        print(f"{stale} skeleton file(s) differ from their reference; run `python3 -m grader skeleton`.",
              file=sys.stderr)
        return 1
    return 0


def cmd_configure(args: argparse.Namespace) -> int:
    buildinfo.write(load_lab(args.lab), Path(args.out))
    return 0


def cmd_check_cases(args: argparse.Namespace) -> int:
    config = load_lab(args.lab)
    with tempfile.TemporaryDirectory(prefix="kit-cases-") as folder:
        problems = case_problems(config, Path(args.binary).resolve(), Path(folder), with_hidden=args.with_hidden)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{args.lab}: the test cases of {Path(args.binary).name} match the config.")
    return 1 if problems else 0


def cmd_selfcheck(args: argparse.Namespace) -> int:
    failed = 0
    for lab in _labs(args.lab):
        config = load_lab(lab)
        workroot = fresh_workroot()
        try:
            problems, text = check_lab(config, Path(args.build_dir).resolve(), workroot)
        finally:
            remove_workroot(workroot, args.keep)
        print(text)
        print(f"\n{lab}: self-check {'FAILED' if problems else 'passed'}")
        for problem in problems:
            print(f"  - {problem}")
        failed += bool(problems)
    return 1 if failed else 0


def cmd_record(args: argparse.Namespace) -> int:
    data = record.gather(Path(args.build_dir).resolve(), args.commit)
    if not data["labs"]:
        print(f"no {record.RESULTS_NAME} under {args.build_dir}: run the self-check on a GPU first", file=sys.stderr)
        return 1
    report.write_json(Path(args.out), data)
    for lab, result in data["labs"].items():
        print(f"{lab:<24} {result['score']:6.1f} / {result['max']:g}  {len(result['measurements'])} measurements")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    try:
        count = release.make_release(Path(args.out))
    except release.LeakError as error:
        print(f"release stopped: {error}", file=sys.stderr)
        return 1
    print(f"{count} files released to {args.out}; no solution code, hidden test or secret seed in them.")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python3 -m grader", description="The CUDA lab kit's grader.")
    commands = top.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade one submission, or the labs in this checkout")
    grade.add_argument("--lab", help="lab name, e.g. 01-vector-add (default: every lab)")
    grade.add_argument("--submission", help="a folder or .zip (default: the lab's files in labs/)")
    grade.add_argument("--results", help="results.json path for one lab (default: results.json)",
                       default="results.json")
    grade.add_argument("--results-dir", default="build/grades", help="where results go when grading every lab")
    grade.add_argument("--no-reference", action="store_true", help="skip building and timing the reference")
    grade.add_argument("--keep", action="store_true", help="keep the build and run folders")
    grade.set_defaults(run=cmd_grade)

    klass = commands.add_parser("grade-class", help="grade every submission in a folder; writes a gradebook")
    klass.add_argument("--lab", required=True)
    klass.add_argument("--submissions", required=True, help="a folder with one folder or .zip per student")
    klass.add_argument("--out", required=True, help="where per-student results and gradebook.csv go")
    klass.add_argument("--keep", action="store_true")
    klass.set_defaults(run=cmd_grade_class)

    skel = commands.add_parser("skeleton", help="regenerate student skeletons from the references")
    skel.add_argument("--lab")
    skel.add_argument("--check", action="store_true", help="exit 1 if a committed skeleton is out of date")
    skel.set_defaults(run=cmd_skeleton)

    selfcheck = commands.add_parser("selfcheck", help="reference full marks, skeleton zero, wrong variants lose")
    selfcheck.add_argument("--lab")
    selfcheck.add_argument("--build-dir", default="build")
    selfcheck.add_argument("--keep", action="store_true")
    selfcheck.set_defaults(run=cmd_selfcheck)

    cases = commands.add_parser("check-cases", help="compare a test program's cases with its lab config")
    cases.add_argument("--lab", required=True)
    cases.add_argument("--binary", required=True)
    cases.add_argument("--with-hidden", action="store_true")
    cases.set_defaults(run=cmd_check_cases)

    rec = commands.add_parser("record", help="gather a GPU run's measurements (after selfcheck) into one JSON file")
    rec.add_argument("--build-dir", default="build")
    rec.add_argument("--commit", default="unknown")
    rec.add_argument("--out", required=True)
    rec.set_defaults(run=cmd_record)

    rel = commands.add_parser("release", help="copy the student release (no solutions/) and check it for leaks")
    rel.add_argument("--out", required=True)
    rel.set_defaults(run=cmd_release)

    configure = commands.add_parser("configure", help="(used by CMake) write a lab's build files")
    configure.add_argument("--lab", required=True)
    configure.add_argument("--out", required=True)
    configure.set_defaults(run=cmd_configure)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (ConfigError, skeleton.MarkerError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except NoGpu as error:
        print(f"Grading needs a CUDA GPU, and this machine has none usable ({error}).\n"
              f"The code was built; run the grader on a machine with an NVIDIA GPU to grade it.", file=sys.stderr)
        return NO_GPU_EXIT
    except GraderError as error:
        print(f"grader problem (not the submission's fault): {error}", file=sys.stderr)
        return 4
