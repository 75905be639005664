# nbgrader reads this file when Jupyter (or an nbgrader command) runs from this folder. The course
# needs no settings here: it exists so that students and instructors do not see nbgrader's
# "No nbgrader_config.py file found" warning. Instructors grading with nbgrader keep their own
# nbgrader_config.py in their course directory (see the README).
c = get_config()  # noqa: F821
