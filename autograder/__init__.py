"""The course's autograder: `python -m autograder grade PATH` (see README.md)."""
__version__ = "1.0.0"
