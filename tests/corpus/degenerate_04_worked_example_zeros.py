# lesson: 04_worked_example
# source: tests/degenerate.py (zeros): an answer that does nothing; it must score 0
# expect: wrong worked_example -
# %% worked_example
def worked_example():
    shapes = {"Q1": (3, 2), "K1": (3, 2), "V1": (3, 2), "Q2": (3, 2), "K2": (3, 2), "V2": (3, 2),
              "scores1": (3, 3), "scores2": (3, 3), "weights1": (3, 3), "weights2": (3, 3),
              "head1": (3, 2), "head2": (3, 2), "concat": (3, 4)}
    return {key: np.zeros(shape) for key, shape in shapes.items()}
