"""The course's autograder: `python -m autograder grade PATH` (see README.md)."""
__version__ = "1.0.0"
EDITION = "course"   # "student kit" in the kit's copy (deliver/kit/assemble.py): the self-check says which runs
