"""Grading one submission, from submission to results.json.

intake -> build -> run -> score -> report; each stage is its own module and
this one only passes plain data between them. The build phase
(build_submission) and the run stage (grader/run/, whose scheduler a class
grading shares) are separate, so that classroom.py can schedule a class's
builds apart from its runs.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from grader import audit, build, intake, prebuilt, report
from grader.config import LabConfig
from grader.errors import GraderError
from grader.gpulock import GpuLock
from grader.run.schedule import Evaluation, evaluate, seed_for, time_reference
from grader.score import Scored, score_lab


@dataclass
class Graded:
    items: list[Scored]
    results: dict  # Gradescope's results.json
    table: str
    not_run: str = ""  # why no test ran ("was refused at intake", "did not compile"); empty when the tests ran


# A secret number shorter than this is not searched for in text: it would hit counts and sizes in ordinary
# messages (release.py draws the same line). A secret seed that small could be found by trying them all anyway.
MIN_HIDDEN_NUMBER = 1000


def secret_numbers(config: LabConfig) -> tuple[int, ...]:
    """Numbers no student may read: the grading seed, unless it is the lab's public one. With it and the
    harness's public generators, anyone could make every hidden test's inputs. The harness never prints it
    (kit::seed_text()); finish() hides it all the same from whatever text a test, a crash or a sanitizer adds."""
    seed = seed_for(config)
    if seed is None or seed == config.params.get("seed") or seed < MIN_HIDDEN_NUMBER:
        return ()
    return (seed,)


def build_reference(config: LabConfig, build_dir: Path) -> Path:
    if config.solution_dir is None:
        raise GraderError(f"no solutions/{config.name}/: the reference is needed for performance points")
    result = build.build(config, build_dir, "reference")
    if not result.ok:
        raise GraderError(f"the reference solution of {config.name} does not build:\n{result.errors()}")
    return result.binary


def build_submission(config: LabConfig, staged_folder: Path, build_dir: Path,
                     reference_build: Path | None = None) -> build.BuildResult:
    """Configure and build the student's test program in `build_dir`. With `reference_build` (a built
    reference of the same lab), the folder starts from that build's configuration and links its
    compiled tests and harness, so only the student's files are compiled."""
    if reference_build is not None:
        prebuilt.seed(build_dir, reference_build)
    configured = build.configure(config, build_dir, staged_folder)
    refused = ""
    if not configured.ok and reference_build is not None:
        # The copied configuration did not take (another CMake, say): configure afresh, linking the
        # reference's objects all the same, and say why, so that the slower builds do not go unnoticed.
        refused = next((line.strip() for line in configured.log.splitlines() if "Error" in line),
                       configured.log.strip()[-300:])
        shutil.rmtree(build_dir, ignore_errors=True)
        prebuilt.seed(build_dir, reference_build, copy_configuration=False)
        configured = build.configure(config, build_dir, staged_folder)
    check_configured(config, configured)
    return replace(build.build(config, build_dir, "student"), configured_afresh=refused)


def check_configured(config: LabConfig, configured: build.BuildResult) -> None:
    if not configured.ok:
        raise GraderError(f"CMake could not configure lab {config.name}:\n{configured.log[-4000:]}")


def compile_error_message(built: build.BuildResult, staged: intake.Staged | None = None) -> str:
    """What the compiler said, once; with `staged`, each staged copy's path replaced by the path of the student's
    own file (labs/01-vector-add/vector_add.cu, or where it was in their folder or zip), which they can open."""
    errors = built.errors()
    if staged is not None:
        for name, origin in staged.origins.items():
            errors = errors.replace(str(staged.folder / name), origin)
    return f"Your code did not compile, so no test could run. The compiler said:\n{errors}"


# What each test says of a submission that was refused or did not compile: the reason is said once, in the
# output above the tests, not under each of a dozen tests.
NOT_RUN_REFUSED = "Not run: the submission was refused at intake (see above)."
NOT_RUN_COMPILE = "Not run: your code did not compile (the compiler's message is above)."


def all_zero(config: LabConfig, message: str) -> list[Scored]:
    """Every autograded item at 0 with `message`; the questions keep theirs, since a TA grades the answers whether
    or not the code ran."""
    items = score_lab(config, {}, None)
    return [i if i.by_hand else Scored(i.name, 0.0, i.max_score, message, i.visibility, i.kind, i.hidden,
                                       i.extra_credit) for i in items]


def _extra(config: LabConfig, evaluation: Evaluation | None, reference: Evaluation | None) -> dict:
    # The audit trail, in results.json's extra_data: Gradescope stores it for the course staff and shows a
    # student only the output fields (report.student_visible), so the secret seed may stay here for a
    # regrade. It also reaches the next run of the same student's submission, in Gradescope's
    # /autograder/submission_metadata.json (previous_submissions), which the OS sandbox keeps from student
    # code when it runs (grader/sandbox.py shows it none of /autograder). Give students their results through
    # Gradescope, never graded/<student>/results.json itself.
    # max_points is what "score" is out of: the autograder's points; the questions a TA grades by hand are apart.
    extra: dict = {"lab": config.name, "max_points": config.autograded_points,
                   "question_points": config.question_points,
                   "seed": seed_for(config) if seed_for(config) is not None else config.params.get("seed"),
                   "grader_commit": audit.grader_commit()}
    # Each case's status beside its timings: a timing record is written before the case's last checks (a wrong
    # output on a timed call, a rate beyond the hardware), so only the status says whether the time was earned
    # (the class leaderboard ranks no other).
    if evaluation is not None:
        extra.update(gpu=evaluation.info.gpu, driver=evaluation.info.driver)
        extra["case_status"] = {case: o.status for case, o in evaluation.outcomes.items()}
        extra["timings"] = {case: o.timings for case, o in evaluation.outcomes.items() if o.timings}
        extra["lock_wait_s"] = round(evaluation.lock_wait_s, 3)
    if reference is not None:
        extra["reference_case_status"] = {case: o.status for case, o in reference.outcomes.items()}
        extra["reference_timings"] = {case: o.timings for case, o in reference.outcomes.items() if o.timings}
    return extra


def finish(config: LabConfig, items: list[Scored], output: str, started: float,
           evaluation: Evaluation | None = None, reference: Evaluation | None = None) -> Graded:
    title = f"{config.name}: {config.title}"
    items, output = report.without_secrets(items, output, secret_numbers(config))
    results = report.gradescope_results(items, output, time.monotonic() - started,
                                        _extra(config, evaluation, reference))
    return Graded(items=items, results=results, table=report.table(title, items))


def refused(config: LabConfig, why: str, started: float) -> Graded:
    """The result of a submission intake refused: the reason once, as the submission's output and atop the table
    (not repeated under each of a dozen tests, which only say they did not run)."""
    graded = finish(config, all_zero(config, NOT_RUN_REFUSED), f"Not graded: {why}", started)
    graded.table = f"{graded.results['output']}\n\n{graded.table}"
    graded.not_run = "was refused at intake"
    return graded


def not_compiled(config: LabConfig, message: str, started: float) -> Graded:
    """The result of a submission that did not compile: the compiler's message once, as the output and atop the
    table; each test says only that it did not run."""
    graded = finish(config, all_zero(config, NOT_RUN_COMPILE), message, started)
    graded.table = f"{graded.results['output']}\n\n{graded.table}"
    graded.not_run = "did not compile"
    return graded


def grade_submission(config: LabConfig, submission: Path, workroot: Path,
                     reference: Evaluation | None = None, with_reference: bool = True,
                     lock: GpuLock | None = None) -> Graded:
    """Grade one submission in a fresh folder under `workroot`, under the GPU lock when one is given.

    `reference` is the reference solution's timing, when the caller already has
    one from this grading run; otherwise it is built and timed here, unless
    with_reference is False (a student's local grade without solutions/).
    """
    started = time.monotonic()
    try:
        staged = intake.stage(submission, config, workroot / "submission")
    except intake.IntakeError as error:
        return refused(config, str(error), started)

    build_dir = workroot / "build"
    built = build_submission(config, staged.folder, build_dir)
    if not built.ok:
        return not_compiled(config, compile_error_message(built, staged), started)

    if reference is None and with_reference and config.solution_dir is not None:
        reference = time_reference(config, build_reference(config, build_dir), workroot / "reference-run", lock)
    evaluation = evaluate(config, built.binary, workroot / "run", lock=lock)
    items = score_lab(config, evaluation.outcomes, reference.outcomes if reference else None)
    output = f"Graded on {evaluation.info.gpu} (driver {evaluation.info.driver})."
    return finish(config, items, output, started, evaluation, reference)


def add_feedback(graded: Graded, text: str) -> None:
    """Text for the student after the tests (a profile): in the output Gradescope shows and in the printed report.
    The score is settled already; nothing added here changes it."""
    graded.results["output"] = f"{graded.results.get('output', '')}\n\n{text}".lstrip("\n")
    graded.table = f"{graded.table}\n\n{text}"


def fresh_workroot() -> Path:
    return Path(tempfile.mkdtemp(prefix="kit-grade-"))


def remove_workroot(path: Path, keep: bool) -> None:
    if keep:
        print(f"(work files kept in {path})")
    else:
        shutil.rmtree(path, ignore_errors=True)
