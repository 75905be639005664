"""The student kit: `python -m autograder release --student-kit OUT` (a folder, or a .zip).

What an instructor hands out (see ../shared/COURSE_SPEC.md, "Student kit"): README.md,
requirements.txt, the released lessons/ and the self-check machinery, and nothing from which a
reference answer can be computed. The self-checks in the kit run the course's own checks, but
`reference`, `reference_output` and the mutant engine (the fingerprints diagnosis compares
with) are answered from recordings (recorded.py) made here, on the public inputs:

  1. record: every lesson's checks run against the reference solution, and against the corpus
     of known mistakes (tests/corpus/, so the diagnosis paths that only a wrong answer reaches
     are recorded too), with the reference namespace, `checking.reference_output` and the
     `mutants` module wrapped by a recorder that keeps each answer under a digest of the
     question (any attribute: a mutant function added later is covered). Every fingerprint a
     check offers is evaluated, matched or not, so the kit can name what the full grader names;
  2. assemble: the grader's modules the self-check imports (found by following the imports),
     with reference.py, diagnose/fingerprints/ and checks/projection_subjects.py replaced: by the replayer,
     by nothing, and by lesson 06 subjects built on torch's own attention (kit_subjects.py);
  3. write: deterministic bytes (sorted records, fixed zip timestamps), built in a temporary
     folder and renamed into place.

Grading keeps its own inputs: with a course secret (plugin.course_secret) the grader's `rng`
differs from the public one the recordings were made with.

record.py    step 1: the checks run against the reference (and the corpus), every answer kept
assemble.py  step 2: the self-check's modules, with the reference and fingerprints replaced
write.py     step 3: the kit's files, its README and requirements, written atomically
"""
from autograder.deliver.kit.write import ensure_secret, kit_files, write_kit  # noqa: F401
