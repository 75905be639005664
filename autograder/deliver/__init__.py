"""Deliver: what leaves the instructor's repository.

release.py       lessons/ from solutions/ with nbgrader's preprocessors
kit.py           the student kit (released lessons + a self-check answered from recordings)
kit_subjects.py  lesson 06's subjects as the kit ships them
gradescope.py    the Gradescope bundle and its grading entry point
book.py          the course site's generated pages

May import anything below it (classroom, pipeline, ...). Nothing imports it but __main__.
"""
