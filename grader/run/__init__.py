"""The run stage: a lab's built test program run on a submission, and what happened read back.

Where the trust boundary runs:

- judge.py starts the test program, the *judge*: the test cases, their inputs, the checks, the clock and the
  results file, and no student code. It is the instructor's, trusted, and runs unconfined.
- runner.py holds all that runs beside student code: the *runner* (harness/runner/ linked with the student's
  object), which the judge starts from the command built there, inside bubblewrap (grader/sandbox.py); and,
  for a lab whose header grader/calls.py cannot split (none of the twelve), the whole test program, in a
  sandbox of its own.
- The grader's Python never runs student code in its own process. It reads the results file the test
  program wrote (outcomes.py; the runner cannot even see it), and schedule.py decides what
  runs when.

schedule.py is the one scheduler: `grade`, `grade-class` and the self-check all run cases through it.
"""
