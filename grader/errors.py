"""The two ways grading stops for a reason that is not the submission's: any stage may raise them, and the
command line turns each into one message and its exit code."""


class NoGpu(Exception):
    """Grading needs a CUDA GPU and this machine has none usable."""


class GraderError(Exception):
    """Something is wrong with the instructor's side (config, reference, build files), not the submission."""
