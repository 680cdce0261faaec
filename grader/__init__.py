"""The lab kit's grader: intake -> build -> run -> score -> report.

Run it as `python3 -m grader ...` from the repository root; `--help` lists the commands.
"""
