"""Report: results JSON, the terminal summary, feedback.md, and the class report.

results.py       one student's results: terminal lines, feedback markdown, JSON, atomic writes
class_report.py  class-report.html: what an instructor should teach again

May import: diagnose, course.
"""
