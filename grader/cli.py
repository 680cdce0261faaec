"""Command line: python3 -m grader <command> ...; `python3 -m grader --help` lists the commands."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from grader import (build, buildinfo, calls, classroom, cluster, figures, handouts, intake, journey, leaderboard,
                    linkcheck, lms, merge, profile, profilecheck, record, release, report, sandbox, skeleton, slurm,
                    variants)
from grader.config import REPO_ROOT, ConfigError, LabConfig, list_labs, load_call_tables, load_lab
from grader.gpulock import GpuLock, list_gpus
from grader.errors import GraderError, NoGpu
from grader.grade import (add_feedback, build_reference, build_submission, check_configured, compile_error_message,
                          fresh_workroot, grade_submission, remove_workroot)
from grader.proc import interrupt_on_sigterm, run_attached
from grader.run.schedule import ProgramRun
from grader.selfcheck import case_problems, check_lab

NO_GPU_EXIT = 3
INTERRUPTED_EXIT = 130


def _labs(lab: str | None) -> list[str]:
    return [lab] if lab else list_labs()


def cmd_grade(args: argparse.Namespace) -> int:
    if args.submission and not args.lab:
        print("grade: --submission needs --lab", file=sys.stderr)
        return 2
    # A mistyped path is the TA's, not the student's: no results.json with 0 points for it.
    if args.submission and not Path(args.submission).exists():
        print(f"grade: the submission {args.submission} does not exist (give a student's folder or .zip)",
              file=sys.stderr)
        return 2
    sandbox.apply_policy(untrusted=bool(args.submission), opted_out=args.no_sandbox)
    labs = _labs(args.lab)
    totals = []
    not_run = []  # (lab, why) of the labs whose tests did not run at all
    lock = GpuLock(list_gpus()[0].key)  # the GPU the test programs use: the first one they see
    for lab in labs:
        config = load_lab(lab)
        submission = Path(args.submission) if args.submission else config.lab_dir
        workroot = fresh_workroot()
        try:
            graded = grade_submission(config, submission, workroot, with_reference=not args.no_reference, lock=lock)
            if args.profile and not graded.not_run and config.profile:
                case_status = graded.results["extra_data"].get("case_status", {})
                add_feedback(graded, _profile_feedback(config, workroot, lock, case_status))
        finally:
            remove_workroot(workroot, args.keep)
        results = Path(args.results) if args.results and len(labs) == 1 else Path(args.results_dir) / f"{lab}.json"
        report.write_json(results, graded.results)
        print(graded.table)
        print(f"(results written to {results})\n")
        totals.append((lab, graded.results["score"], config.autograded_points, config.question_points))
        if graded.not_run:
            not_run.append((lab, graded.not_run))
    if len(totals) > 1:
        print("Summary")
        for lab, score, maximum, by_hand in totals:
            print(f"  {lab:<24} {score:7.1f} / {maximum:g}" + (f"  (+{by_hand:g} graded by hand)" if by_hand else ""))
    # One's own checkout that does not compile fails the command (make grade stops there); a submission given
    # with --submission was graded all the same (its results say why), as a TA's scripts expect.
    if not_run and not args.submission:
        for lab, why in not_run:
            print(f"{lab}: no test ran: the submission {why} (see above)", file=sys.stderr)
        return 1
    return 0


def _profile_feedback(config: LabConfig, workroot: Path, lock: GpuLock, case_status: dict[str, str]) -> str:
    """After grading: the submission's timed kernels profiled in its sandbox, beside the reference's where grading
    built it, as text for its report. It holds the GPU alone, as timing does, and feeds no score."""
    built = workroot / "build"
    reference_binary = build.binary_path(built, config.name, "reference")
    ncu = profile.find_ncu()

    def reference() -> profile.Profiled | None:
        if not reference_binary.is_file():
            return None
        return profile.profile_build(config, reference_binary, ncu, workroot / "profile-reference")
    with lock.exclusive():
        return profile.submission_feedback(config, build.binary_path(built, config.name, "student"), ncu,
                                           workroot / "profile", case_status, reference)


def _find_ncu_or_say() -> Path | None:
    ncu = profile.find_ncu()
    if ncu is None:
        print("profile: Nsight Compute's `ncu` was not found (on the PATH, in /usr/local/cuda/bin or "
              "/opt/nvidia/nsight-compute): install Nsight Compute, which comes with the CUDA toolkit",
              file=sys.stderr)
    return ncu


def cmd_profile(args: argparse.Namespace) -> int:
    """Your build of a lab's timed kernels under Nsight Compute, beside the reference's where solutions/ is
    there: a table, hints and a roofline (grader/profile.py). --variant profiles a slow variant, or a correct
    alternative such as a journey's step, instead; --check proves every lab's slow variants show what they must
    (grader/profilecheck.py)."""
    if args.check:
        return _profile_check(args)
    if not args.lab or len(args.lab) > 1:
        print("profile: give one lab, e.g. --lab 07-transpose (or --check for several)", file=sys.stderr)
        return 2
    config = load_lab(args.lab[0])
    if not config.profile:
        print(f"profile: {config.name} names no kernel to profile ([[profile]] in its lab.toml)", file=sys.stderr)
        return 2
    variants = {v.name: (table, v) for table in ("slow", "right") for v in getattr(config, table)}
    if args.variant and args.variant not in variants:
        known = ", ".join(variants) or "none"
        print(f"profile: {config.name} has no slow variant or correct alternative '{args.variant}' ([[slow]] or "
              f"[[right]] in solutions/{config.name}/hidden.toml: {known})", file=sys.stderr)
        return 2
    ncu = _find_ncu_or_say()
    if ncu is None:
        return 2
    sandbox.apply_policy(untrusted=False, opted_out=False)  # your own files: the build is checked as grading checks it
    workroot = fresh_workroot()
    try:
        if args.variant:
            # The reference's build first: the variant links its compiled tests and harness.
            check_configured(config, build.configure(config, workroot / "build", None))
            build_reference(config, workroot / "build")
            built = profilecheck.build_variant(config, variants[args.variant][0], args.variant,
                                               workroot / "build", workroot)
            staged = None
        else:
            staged = intake.stage(config.lab_dir, config, workroot / "submission")
            built = build_submission(config, staged.folder, workroot / "build")
        if not built.ok:
            print(compile_error_message(built, staged), file=sys.stderr)
            return 1
        # A variant's own kernels, where it names them, each beside the reference's it replaces.
        entries, counterparts = (profile.variant_entries(config, variants[args.variant][1]) if args.variant
                                 else (list(config.profile), {}))
        # Profiling times nothing that counts, but its runs must not overlap another's timing on this GPU.
        with GpuLock(list_gpus()[0].key).exclusive():
            mine = profile.profile_build(config, built.binary, ncu, workroot / "yours", entries=entries)
            reference = None
            if config.solution_dir is not None and not args.no_reference:
                reference = profile.profile_build(config, build_reference(config, workroot / "build"), ncu,
                                                  workroot / "reference")
        label = f"{variants[args.variant][0]}-{args.variant}" if args.variant else ""
        out = Path(args.out) / config.name / label
        print(profile.write_profile(config, mine, reference, out, label=args.variant or "yours", entries=entries,
                                    counterparts=counterparts))
        return 0
    except intake.IntakeError as error:
        print(f"profile: your files were refused as grading would refuse them: {error}", file=sys.stderr)
        return 1
    except profile.ProfileError as error:
        print(f"profile: {error}", file=sys.stderr)
        return 2
    finally:
        remove_workroot(workroot, args.keep)


def _profile_check(args: argparse.Namespace) -> int:
    """Every lab with [[slow]] variants (or those --lab names): each variant profiled beside the reference and
    its `shows` asserted; one verdict a lab, its report under --out; exit 1 if any lab fails."""
    configs = [load_lab(lab) for lab in (args.lab or list_labs())]
    configs = [config for config in configs if config.slow or args.lab]
    ncu = _find_ncu_or_say()
    if ncu is None:
        return 2
    sandbox.apply_policy(untrusted=False, opted_out=False)  # the instructor's own variants, compiled as grading would
    lock = GpuLock(list_gpus()[0].key)
    failed = []
    started = time.monotonic()
    for config in configs:
        workroot = fresh_workroot()
        try:
            checked = profilecheck.check_lab(config, ncu, workroot, Path(args.out) / config.name, lock,
                                             [args.variant] if args.variant else None)
        except (profile.ProfileError, GraderError) as error:
            checked = profilecheck.LabCheck(config.name, False, [f"FAIL {error}"], "", 0.0)
        finally:
            remove_workroot(workroot, args.keep)
        print(checked.summary(), flush=True)
        if not checked.passed:
            failed.append(config.name)
    print(f"\nProfile check: {len(configs) - len(failed)} of {len(configs)} labs passed in "
          f"{time.monotonic() - started:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else "")
          + f". Reports: {args.out}/<lab>/report.txt")
    return 1 if failed else 0


def _part(text: str) -> tuple[int, int]:
    try:
        return classroom.parse_part(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def cmd_grade_class(args: argparse.Namespace) -> int:
    config = load_lab(args.lab)
    submissions = Path(args.submissions)
    if not submissions.is_dir():
        what = "is not a folder" if submissions.exists() else "does not exist"
        print(f"grade-class: {submissions} {what} (give the folder with one folder or .zip per student)",
              file=sys.stderr)
        return 2
    # The folder is checked before the sandbox, compute-sanitizer or the reference build are: a TA's mistake
    # here costs no build, and needs none of what grading needs.
    folder = classroom.read_class(submissions)
    if warning := classroom.skipped_warning(folder.skipped):
        print(warning, file=sys.stderr)
    if not folder.students:
        print(f"grade-class: {submissions} holds no submissions (a folder or .zip per student), so there is "
              f"nothing to grade", file=sys.stderr)
        return 2
    if args.check_intake:
        return _check_intake(config, submissions, args.shard)
    if not args.out:
        print("grade-class: --out is needed (the folder the results and the gradebook go to)", file=sys.stderr)
        return 2
    out = Path(args.out)
    sandbox.apply_policy(untrusted=True, opted_out=args.no_sandbox)
    options = classroom.ClassOptions(
        jobs=args.jobs, gpu_jobs=args.gpu_jobs, regrade_all=args.regrade == [],
        regrade=frozenset(args.regrade or ()), keep_work=args.keep, profile=args.profile,
        judge_per_program=args.judge_per_program)
    interrupt_on_sigterm()
    workroot = fresh_workroot()
    try:
        result = classroom.grade_class(config, submissions, out, workroot, options, args.shard)
    finally:
        remove_workroot(workroot, args.keep)
    print("\n" + result.summary)
    print(f"Gradebook: {out / 'gradebook.csv'}; summary: {out / 'summary.txt'}")
    for upload in (lms.CANVAS_UPLOAD, lms.GRADESCOPE_UPLOAD):
        if (out / upload).is_file():
            print(f"Scores to upload to {upload.split('-')[0].capitalize()}: {out / upload}")
    if result.stopped:
        print("Stopped before the end: run the same command again to grade the rest (finished students are kept).")
        return INTERRUPTED_EXIT
    return 0


def _check_intake(config: LabConfig, submissions: Path, shard: tuple[int, int] | None) -> int:
    """One line per student, ok or refused and why; exit 1 when any is refused."""
    checks = classroom.check_intake(config, submissions, shard)
    width = max(len(check.student) for check in checks) if checks else 0
    for check in checks:
        verdict = f"refused: {' '.join(check.problem.split())}" if check.problem else "ok"
        print(f"{check.student:<{width}}  {verdict}")
    refused = sum(bool(check.problem) for check in checks)
    print(f"\nIntake of {config.name}: {len(checks) - refused} ok, {refused} refused (nothing built or run).")
    return 1 if refused else 0


def cmd_check(args: argparse.Namespace) -> int:
    """Intake's checks on one's own files (or --submission), before a build: one line per problem, exit 1."""
    config = load_lab(args.lab)
    submission = Path(args.submission) if args.submission else config.lab_dir
    found = intake.check(submission, config)
    for problem in found:
        print(f"error: {problem}", file=sys.stderr)
    if found:
        print(f"{config.name}: grading would refuse this submission before building it ({len(found)} problem"
              f"{'' if len(found) == 1 else 's'} above); fix {'it' if len(found) == 1 else 'them'} and try again.",
              file=sys.stderr)
        return 1
    print(f"{config.name}: intake check passed ({', '.join(config.student_files)}: nothing grading refuses before "
          f"building).")
    return 0


def cmd_slurm(args: argparse.Namespace) -> int:
    load_lab(args.lab)  # a wrong lab name fails here, not in every array task
    job = slurm.SlurmJob(lab=args.lab, submissions=Path(args.submissions), out=Path(args.out), shards=args.shards,
                         gres=args.gres, cpus_per_task=args.cpus_per_task, time_limit=args.time,
                         partition=args.partition, account=args.account, python=args.python, profile=args.profile)
    path = slurm.write(job)
    print(f"wrote {path}")
    if not args.submit:
        print(f"submit it with: sbatch {path}\nthen, when every task has finished: "
              f"python3 -m grader merge --out {args.out}")
        return 0
    submitted = slurm.submit(path)
    print(submitted.output.strip())
    if not submitted.ok:
        print(f"sbatch {submitted.describe_exit()}", file=sys.stderr)
        return 1
    print(f"when every task has finished: python3 -m grader merge --out {args.out}")
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    load_lab(args.lab)  # a mistyped lab fails here, not after the job waited in the queue
    try:
        return cluster.run(args.lab, Path(args.build), args.python, args.grade, Path(args.config))
    except cluster.ClusterError as error:
        print(f"make cluster: {error}", file=sys.stderr)
        return 2


def cmd_merge(args: argparse.Namespace) -> int:
    try:
        merged = merge.merge(Path(args.out))
    except merge.MergeError as error:
        print(f"merge refused: {error}", file=sys.stderr)
        return 1
    print(merged.summary)
    if merged.missing_students:
        print(f"{len(merged.missing_students)} students have no result yet: {', '.join(merged.missing_students)}",
              file=sys.stderr)
    if merged.missing_shards:
        print(f"missing shards: {', '.join(str(k) for k in merged.missing_shards)} (a task that never ran, or was "
              f"cancelled or lost its node before it finished)\n{merge.rerun_hint(merged, Path(args.out))}",
              file=sys.stderr)
    return 0 if merged.complete else 1


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """A page per graded class (one lab each) in --out; names from --names, or each folder's own names file."""
    for folder in args.graded:
        graded = Path(folder)
        names = Path(args.names) if args.names else graded / leaderboard.NAMES_FILE
        try:
            written = leaderboard.write(load_lab(leaderboard.class_lab(graded)), graded, names, Path(args.out))
        except leaderboard.LeaderboardError as error:
            print(f"leaderboard: {error}", file=sys.stderr)
            return 2
        print(leaderboard.describe(written))
    return 0


def cmd_skeleton(args: argparse.Namespace) -> int:
    stale = 0
    broken = []
    for lab in _labs(args.lab):
        config = load_lab(lab)
        if config.solution_dir is None:
            continue
        if args.check:
            for diff in skeleton.differences(config):
                stale += 1
                print(diff)
            broken += variants.problems(config)  # a reference edit can strand a variant as it can a skeleton
        else:
            for path in skeleton.write(config):
                print(f"wrote {path.relative_to(REPO_ROOT)}")
    if stale:
        print(f"{stale} skeleton file(s) differ from their reference; run `python3 -m grader skeleton`.",
              file=sys.stderr)
    if broken:
        print(variants.broken_message(broken), file=sys.stderr)
    return 1 if stale or broken else 0


def cmd_handouts(args: argparse.Namespace) -> int:
    if args.check:
        found = [problem for lab in _labs(args.lab) for problem in handouts.problems(load_lab(lab))]
        for problem in found:
            print(problem)
        if found:
            print(f"{len(found)} handout problem(s); fix the config, or run `make handouts` to rewrite the "
                  f"grading sections.", file=sys.stderr)
        return 1 if found else 0
    for lab in _labs(args.lab):
        config = load_lab(lab)
        if handouts.write(config):
            print(f"wrote {handouts.shown_path(config)}")
    return 0


def cmd_figures(args: argparse.Namespace) -> int:
    if not any((REPO_ROOT / "docs" / "gpu-runs").glob("*.json")):
        print("figures: no GPU run records in docs/gpu-runs/ (a student's checkout has none): nothing to check")
        return 0
    result = figures.run(write=not args.check)
    if args.list:
        for mark in result.marks:
            print(f"{mark.where}: {mark.text}")
    for problem in result.problems + (result.stale if args.check else []):
        print(problem)
    for path in result.changed:
        print(f"wrote {path}")
    if result.problems or (args.check and result.stale):
        print(f"{len(result.problems) + (len(result.stale) if args.check else 0)} figure problem(s). A figure "
              f"read as measured carries <!-- measured: EXPRESSION --> right after its number, a comparison "
              f"<!-- measured: A < B --> in its sentence, program output <!-- measured --> on the line before its "
              f"block; what no record holds, <!-- unmeasured: why -->. `make figures` writes the marked figures from "
              f"the newest GPU run records in docs/gpu-runs/; grader/figures.py says more.", file=sys.stderr)
        return 1
    return 0


def cmd_configure(args: argparse.Namespace) -> int:
    buildinfo.write(load_lab(args.lab), Path(args.out), one_process=args.one_process)
    return 0


def cmd_calls(args: argparse.Namespace) -> int:
    """The two sides of the judge/runner split for a header outside labs/ (the harness's test of it)."""
    toml = Path(args.host_buffers).resolve()
    where = str(toml.relative_to(REPO_ROOT)) if toml.is_relative_to(REPO_ROOT) else str(toml)
    plan = calls.plan(Path(args.header), load_call_tables(toml), where)
    if not plan.split:
        raise ConfigError(f"{args.header} cannot be split into judge and runner: {plan.unsplit_because}")
    for path, text in ((args.judge_out, calls.judge_source(plan)), (args.runner_out, calls.runner_source(plan))):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
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
    sandbox.apply_policy(untrusted=False, opted_out=args.no_sandbox)  # the grading runs exactly as a TA's would
    build_dir = Path(args.build_dir).resolve()
    build.require_graded_build(build_dir)
    configs = [load_lab(lab) for lab in (args.lab or list_labs())]
    build.require_built(build_dir, [config.name for config in configs])
    lock = GpuLock(list_gpus()[0].key)
    # NoGpu here, before the variants are compiled for nothing.
    with tempfile.TemporaryDirectory(prefix="kit-gpu-probe-") as folder:
        reference = build.binary_path(build_dir, configs[0].name, "reference")
        ProgramRun(configs[0], reference, Path(folder)).list_cases([])
    # One lab at a time (two builds in one build folder at once would trample each other), each with every core.
    started = time.monotonic()
    builds = {config.name: build.build_variants(build_dir, config) for config in configs}
    print(f"(variants built in {time.monotonic() - started:.0f} s)", flush=True)
    unbuilt = {lab: built.errors() for lab, built in builds.items() if not built.ok}

    def check(config: LabConfig) -> tuple[list[str], str]:
        if config.name in unbuilt:
            return [f"its wrong and right variants did not build:\n{unbuilt[config.name]}"], ""
        workroot = fresh_workroot()
        try:
            return check_lab(config, build_dir, workroot, lock)
        finally:
            remove_workroot(workroot, args.keep)

    failed = 0
    # Labs checked side by side share the GPU for their correctness tests; whatever is timed holds it alone.
    # Each lab's report is printed as soon as it is done.
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        checks = {pool.submit(check, config): config for config in configs}
        for done in as_completed(checks):
            problems, text = done.result()
            print(text)
            print(f"\n{checks[done].name}: self-check {'FAILED' if problems else 'passed'} "
                  f"({time.monotonic() - started:.0f} s since the start)")
            for problem in problems:
                print(f"  - {problem}")
            print(flush=True)
            failed += bool(problems)
    return 1 if failed else 0


def cmd_journey(args: argparse.Namespace) -> int:
    """Time every step of a lab's journey (hidden.toml [journey]) beside its peer, in one run."""
    sandbox.apply_policy(untrusted=False, opted_out=args.no_sandbox)
    config = load_lab(args.lab)
    if config.journey is None:
        print(f"{config.name} has no journey (solutions/{config.name}/hidden.toml [journey])", file=sys.stderr)
        return 2
    build_dir = Path(args.build_dir).resolve()
    build.require_graded_build(build_dir)
    build.require_configured(build_dir)
    started = time.monotonic()
    problems = journey.build_steps(config, build_dir)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(f"(steps built in {time.monotonic() - started:.0f} s)", flush=True)
    lock = GpuLock(list_gpus()[0].key)
    workroot = fresh_workroot()
    try:
        rows, problems = journey.time_steps(config, build_dir, workroot, lock)
    finally:
        remove_workroot(workroot, args.keep)
    path = journey.write(build_dir, config.name, rows)
    print(journey.summary(config, rows))
    print(f"({len(rows)} of {len(config.journey.steps)} steps timed in {time.monotonic() - started:.0f} s; written to "
          f"{path}; `python3 -m grader record` puts them into the run record)")
    for problem in problems:
        print(f"  - {problem}")
    return 1 if problems else 0


def cmd_link_check(args: argparse.Namespace) -> int:
    libraries = [Path(p) for p in args.libraries] + linkcheck.system_libraries()
    found = linkcheck.problems([Path(p) for p in args.student], [Path(p) for p in args.instructor],
                               linkcheck.library_definitions(libraries, Path(args.cache_dir)),
                               tuple(args.lab_libraries), tuple(args.forbidden), tuple(args.allowed_calls),
                               lab=args.lab)
    for problem in found:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if found else 0


def cmd_sandboxed_compile(args: argparse.Namespace) -> int:
    """A compiler command run in the sandbox (CMake's launcher for student files when grading)."""
    sandbox.use(sandbox.Policy(enabled=True))
    sandbox.require()
    if note := sandbox.caveat():
        print(f"Note on the sandbox: {note}.", file=sys.stderr)
    spec = sandbox.Spec(writable=tuple(Path(p) for p in args.writable),
                        readable=tuple(Path(p) for p in args.readable), limits=sandbox.COMPILE_LIMITS)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return run_attached(sandbox.confine(command, spec))


def cmd_record(args: argparse.Namespace) -> int:
    data = record.gather(Path(args.build_dir).resolve(), args.commit)
    if not data["labs"]:
        print(f"no {record.RESULTS_NAME} under {args.build_dir}: run the self-check on a GPU first", file=sys.stderr)
        return 1
    report.write_json(Path(args.out), data)
    for lab, result in data["labs"].items():
        scored = f"{result['score']:6.1f} / {result['max']:g}" if "score" in result else "(no self-check)"
        steps = f", {len(result['journey'])} journey steps" if result.get("journey") else ""
        print(f"{lab:<24} {scored}  {len(result['measurements'])} measurements{steps}")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    try:
        count = release.make_release(Path(args.out), allow_dirty=args.allow_dirty, git_init=args.git_init)
    except release.ReleaseError as error:
        print(f"release stopped: {error}", file=sys.stderr)
        return 1
    print(f"{count} files released to {args.out}{' (a git repository of one commit)' if args.git_init else ''}; "
          f"no instructor material, solution code, hidden test, hidden size or secret seed in them.")
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
    grade.add_argument("--no-sandbox", action="store_true",
                       help="grade untrusted code without the OS sandbox (only where none can run; see README)")
    grade.add_argument("--profile", action="store_true",
                       help="after grading, profile the timed kernels under Nsight Compute (in the sandbox) and add "
                            "the table and hints to the report: feedback only, no points")
    grade.set_defaults(run=cmd_grade)

    profiling = commands.add_parser(
        "profile", help="your build of a lab's timed kernels under Nsight Compute: metrics, hints, a roofline",
        description="Runs each kernel a lab's [[profile]] names once under Nsight Compute (ncu), in its timing "
                    "case, and shows its counters beside the reference's (where solutions/ is there), with the "
                    "lab's hints and a roofline picture. It profiles the lab's files in this checkout, on this "
                    "machine's GPU, outside the sandbox: your own code.")
    profiling.add_argument("--lab", action="append", metavar="LAB",
                           help="the lab (with --check: give it again for more; default every lab with [[slow]])")
    profiling.add_argument("--variant", metavar="NAME", help="profile the reference's slow variant or correct "
                           "alternative NAME ([[slow]] or [[right]] in hidden.toml, a journey's step for one) beside "
                           "the reference, instead of the lab's files")
    profiling.add_argument("--check", action="store_true",
                           help="for every lab (or each --lab), profile the reference and each slow variant and "
                                "check what its `shows` says; one pass/fail line per lab, exit 1 if any fails")
    profiling.add_argument("--out", default="build/profile", help="where <lab>/report.txt and roofline.png go")
    profiling.add_argument("--no-reference", action="store_true", help="profile your build only")
    profiling.add_argument("--keep", action="store_true", help="keep the build and the profiler's CSV files")
    profiling.set_defaults(run=cmd_profile)

    klass = commands.add_parser(
        "grade-class", help="grade every submission in a folder; writes a gradebook and a summary",
        description="Grade every submission (a folder or .zip per student) into OUT/<student>/results.json, then "
                    "OUT/gradebook.csv, OUT/summary.txt and OUT/histogram.png. Builds run in parallel, correctness "
                    "tests a few at a time on each GPU, timing alone on a GPU. Run it again after an "
                    "interruption: students already graded with the same files are kept.")
    klass.add_argument("--lab", required=True)
    klass.add_argument("--submissions", required=True, help="a folder with one folder or .zip per student")
    klass.add_argument("--out", help="where per-student results and gradebook.csv go (not needed with "
                       "--check-intake)")
    klass.add_argument("--regrade", nargs="*", metavar="STUDENT",
                       help="grade again even if unchanged: every student, or the ones named")
    klass.add_argument("--shard", type=_part, metavar="I/N", help="grade only every N-th student from the I-th "
                       "(sorted by name; I counts from 0), e.g. one Slurm array task's share")
    klass.add_argument("--jobs", type=int, default=0, help="builds at once (default: the cores the test "
                       "programs and the timing leave free)")
    klass.add_argument("--gpu-jobs", type=int, default=classroom.DEFAULT_GPU_JOBS,
                       help="correctness test programs at once per GPU (default %(default)s)")
    klass.add_argument("--check-intake", action="store_true",
                       help="only check each submission's intake (files found, forbidden identifiers, zips) and "
                            "print one line per student; builds and runs nothing, so needs no GPU; exit 1 if any "
                            "is refused")
    klass.add_argument("--keep", action="store_true", help="keep the build and run folders")
    klass.add_argument("--no-sandbox", action="store_true",
                       help="grade untrusted code without the OS sandbox (only where none can run; see README)")
    klass.add_argument("--profile", action="store_true",
                       help="after each student's timing, profile their timed kernels under Nsight Compute (in the "
                            "sandbox, holding the GPU alone) and add the table and hints to their feedback: no points")
    klass.add_argument("--judge-per-program", action="store_true",
                       help="start the tests' judge afresh for each test program instead of sharing a few serving "
                            "ones (slower: for measuring what they save)")
    klass.set_defaults(run=cmd_grade_class)

    checking = commands.add_parser(
        "check", help="check one's own files (or a submission) as grading's intake does, building nothing",
        description="What grading refuses before it builds: a missing or doubled student file, a forbidden "
                    "#include or identifier (the lab's `forbidden`, and files, processes, the environment or "
                    "leaving the process in any lab). One line per problem; exit 1 if any. `make <lab>` runs it.")
    checking.add_argument("--lab", required=True)
    checking.add_argument("--submission", help="a folder or .zip (default: the lab's files in labs/)")
    checking.set_defaults(run=cmd_check)

    batch = commands.add_parser(
        "slurm", help="write (and submit) a Slurm job array that grades a class in shards",
        description="Write OUT/slurm/grade.sbatch: a job array of N tasks, each grading every N-th student into "
                    "OUT/shards/<task>/ on one GPU. Submit it (or use --submit); when all tasks are done, run "
                    "`python3 -m grader merge --out OUT`.")
    batch.add_argument("--lab", required=True)
    batch.add_argument("--submissions", required=True, help="a folder every node can read")
    batch.add_argument("--out", required=True, help="a folder every node can write")
    batch.add_argument("--shards", type=int, required=True, help="array tasks (each gets every N-th student)")
    batch.add_argument("--gres", default="gpu:1", help="GPUs per task, as Slurm's --gres (default %(default)s)")
    batch.add_argument("--cpus-per-task", type=int, default=16, help="cores per task (default %(default)s)")
    batch.add_argument("--partition")
    batch.add_argument("--account")
    batch.add_argument("--time", default="04:00:00", help="time limit per task, HH:MM:SS (default %(default)s)")
    batch.add_argument("--python", default="python3", help="the Python the tasks run the grader with")
    batch.add_argument("--profile", action="store_true",
                       help="each task profiles its students' timed kernels, as grade-class --profile: no points")
    batch.add_argument("--submit", action="store_true", help="run sbatch on the script")
    batch.set_defaults(run=cmd_slurm)

    on_cluster = commands.add_parser(
        "cluster", help="run a lab's public tests (and grade) on the course's Slurm cluster (make cluster)",
        description="Submit `make <lab>` (with --grade, then `make grade LAB=<lab>`) to the course's Slurm cluster "
                    "with the settings of cluster.toml, print its output as it comes and exit as the job did. The "
                    "checkout must be on a file system the cluster's nodes see.")
    on_cluster.add_argument("--lab", required=True)
    on_cluster.add_argument("--build", default="build", help="the build folder (default %(default)s)")
    on_cluster.add_argument("--python", default="python3", help="the Python the job runs the grader with")
    on_cluster.add_argument("--grade", action="store_true", help="then make grade LAB=<lab>")
    on_cluster.add_argument("--config", default=str(cluster.CONFIG), help="the course's settings (default %(default)s)")
    on_cluster.set_defaults(run=cmd_cluster)

    combine = commands.add_parser("merge", help="combine a Slurm grading's shards into one gradebook",
                                  description="Combine OUT/shards/*/ into OUT/<student>/, OUT/gradebook.csv and "
                                              "OUT/summary.txt; refuses students graded differently in two shards "
                                              "and reports missing shards and students.")
    combine.add_argument("--out", required=True)
    combine.set_defaults(run=cmd_merge)

    board = commands.add_parser(
        "leaderboard", help="write a static HTML leaderboard page per lab from graded classes",
        description="For each graded class folder (grade-class's --out), write OUT/<lab>.html: per timed measurement, "
                    "the correct kernels ranked by their time over the reference's, with rate and GPU. Students are "
                    "shown by the names file's shown_as; a student it does not name is added to it with a random "
                    "anonymous id. The names file says who is who: keep it private, and publish only the page.")
    board.add_argument("--graded", nargs="+", required=True, metavar="FOLDER",
                       help="graded class folders (each holds gradebook.csv and <student>/results.json)")
    board.add_argument("--names", help=f"the CSV of student,shown_as for every folder given (default: each folder's "
                       f"own {leaderboard.NAMES_FILE}); give one file to keep a student's id the same across labs")
    board.add_argument("--out", default="leaderboard", help="the folder the pages go to (default %(default)s)")
    board.set_defaults(run=cmd_leaderboard)

    skel = commands.add_parser("skeleton", help="regenerate student skeletons from the references")
    skel.add_argument("--lab")
    skel.add_argument("--check", action="store_true", help="exit 1 if a committed skeleton is out of date")
    skel.set_defaults(run=cmd_skeleton)

    hand = commands.add_parser("handouts", help="write each handout's grading section (labs/<lab>/README.md) from "
                               "its config")
    hand.add_argument("--lab")
    hand.add_argument("--check", action="store_true",
                      help="exit 1 naming the lab and the first difference if a handout does not follow its config, "
                           "or a lab's points do not sum to 100")
    hand.set_defaults(run=cmd_handouts)

    figs = commands.add_parser("figures", help="write the measured figures of the handouts and decks from the newest "
                               "GPU run records in docs/gpu-runs/")
    figs.add_argument("--check", action="store_true",
                      help="exit 1 if a figure differs from its record, a claim contradicts it, or a handout or deck "
                           "states a measured figure or a comparison without a mark")
    figs.add_argument("--list", action="store_true", help="print every mark: its value and record, or why no record "
                                                          "holds it")
    figs.set_defaults(run=cmd_figures)

    selfcheck = commands.add_parser("selfcheck", help="reference full marks, skeleton zero, wrong variants lose, right ones pass")
    selfcheck.add_argument("--lab", action="append", metavar="LAB",
                           help="the lab to check; give it again for more (default: every lab)")
    selfcheck.add_argument("--build-dir", default="build")
    selfcheck.add_argument("--keep", action="store_true")
    selfcheck.add_argument("--parallel", type=int, default=1, metavar="N",
                           help="check N labs at a time (default 1); timed tests still run one at a time")
    selfcheck.add_argument("--no-sandbox", action="store_true", help="run the self-check without the OS sandbox")
    selfcheck.set_defaults(run=cmd_selfcheck)

    trip = commands.add_parser("journey", help="time each step of a lab's optimization journey beside its peer, in "
                               "one run (hidden.toml [journey]); then `record` keeps it")
    trip.add_argument("--lab", required=True)
    trip.add_argument("--build-dir", default="build")
    trip.add_argument("--keep", action="store_true")
    trip.add_argument("--no-sandbox", action="store_true", help="run the steps without the OS sandbox")
    trip.set_defaults(run=cmd_journey)

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

    rel = commands.add_parser("release", help="write the student repository of the last commit and check it for leaks")
    rel.add_argument("--out", required=True, help="a new or empty folder for the student repository")
    rel.add_argument("--allow-dirty", action="store_true",
                     help="release the last commit even though the checkout has uncommitted or untracked changes")
    rel.add_argument("--git-init", action="store_true", help="make the release a git repository of one commit")
    rel.set_defaults(run=cmd_release)

    link = commands.add_parser("link-check", help="(used by CMake) refuse student objects that replace harness or "
                               "library functions or call what student code may not")
    link.add_argument("--student", nargs="+", required=True, help="the student's object files")
    link.add_argument("--instructor", nargs="+", required=True, help="the tests' and harness's object files")
    link.add_argument("--libraries", nargs="*", default=[], help="libraries in the link besides the system's")
    link.add_argument("--lab-libraries", nargs="*", default=[], help="library names the lab allows (cublas, cufft)")
    link.add_argument("--lab", default="", help="the lab's name, for the messages")
    link.add_argument("--forbidden", nargs="*", default=[], help="name prefixes the lab forbids (lab.toml); cub and "
                      "thrust also refuse any of those libraries' code compiled into the student's objects")
    link.add_argument("--allowed-calls", nargs="*", default=[], help="further functions the lab lets student code "
                      "call (lab.toml's allowed_calls)")
    link.add_argument("--cache-dir", required=True)
    link.set_defaults(run=cmd_link_check)

    compile_ = commands.add_parser("sandboxed-compile", help="(used by CMake) run a compiler command in the sandbox")
    compile_.add_argument("--readable", nargs="*", default=[])
    compile_.add_argument("--writable", nargs="*", default=[])
    compile_.add_argument("command", nargs=argparse.REMAINDER)
    compile_.set_defaults(run=cmd_sandboxed_compile)

    configure = commands.add_parser("configure", help="(used by CMake) write a lab's build files")
    configure.add_argument("--lab", required=True)
    configure.add_argument("--out", required=True)
    configure.add_argument("--one-process", action="store_true",
                           help="build the lab in one process (CMake's KIT_ONE_PROCESS), only to measure the split")
    configure.set_defaults(run=cmd_configure)

    generate = commands.add_parser("calls", help="(used by CMake) write the judge's proxies and the runner's table "
                                   "for a header outside labs/ (a lab's are written by configure)")
    generate.add_argument("--header", required=True, help="the header whose functions the runner holds")
    generate.add_argument("--host-buffers", required=True,
                          help="a TOML file with the call tables of lab.toml ([host_buffers], [shared_host_buffers], "
                               "[host_allocators], [objects])")
    generate.add_argument("--judge-out", required=True)
    generate.add_argument("--runner-out", required=True)
    generate.set_defaults(run=cmd_calls)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (ConfigError, skeleton.MarkerError, handouts.HandoutError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except lms.ExportError as error:
        print(f"{args.command}: the submissions folder looks like an LMS export, but {error}", file=sys.stderr)
        return 2
    except NoGpu as error:
        print(f"Grading needs a CUDA GPU, and this machine has none usable ({error}).\n"
              f"The code was built; run the grader on a machine with an NVIDIA GPU to grade it.", file=sys.stderr)
        return NO_GPU_EXIT
    except GraderError as error:
        print(f"grader problem (not the submission's fault): {error}", file=sys.stderr)
        return 4
    except sandbox.SandboxUnavailable as error:
        print(f"Refusing to grade untrusted code: the OS sandbox cannot run here ({error}).\n"
              f"Install bubblewrap (apt-get install bubblewrap) on a machine that allows user namespaces, or, "
              f"knowing that student code then runs with your rights, pass --no-sandbox.", file=sys.stderr)
        return sandbox.UNAVAILABLE_EXIT
