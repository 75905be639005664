"""Lesson 09 trains its first 400 steps and loads the rest of the run from data/sums/tinygpt.pt
(issue 33: a training cell well under a minute on a busy machine). The file must be that run: the
lesson's model, trained by the lesson's own cell, and good enough for what the lesson says of it."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from conftest import ROOT

WEIGHTS = ROOT / "data" / "sums" / "tinygpt.pt"


def load_script(relative: str):
    spec = importlib.util.spec_from_file_location(relative.rsplit("/", 1)[-1][:-3], ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def shipped():
    return torch.load(WEIGHTS, weights_only=True)


@pytest.fixture(scope="module")
def lesson():
    """apply_rope, TinyGPT, generate and accuracy, as the solution notebook defines them."""
    return load_script("benchmarks/lesson09_training.py").lesson_namespace()


def test_the_weights_are_the_lessons_model_and_it_adds(shipped, lesson):
    """They load into the lesson's TinyGPT key for key, and complete the held-out sums as the
    lesson says a full run does (above 90 %), through the lesson's own generate."""
    torch.set_num_threads(1)
    model = lesson["TinyGPT"]()
    model.load_state_dict(shipped["model"])                      # strict: every weight, same shapes
    model.eval()
    test_lines = (ROOT / "data" / "sums" / "test.txt").read_text().splitlines()
    assert lesson["accuracy"](model, test_lines, temperature=0) > 0.9
    assert len(shipped["losses"]) == 2000 and shipped["seed"] == 0
    assert np.mean(shipped["losses"][-100:].numpy()) < 1.2      # the lesson: "ends a little above 1"


def test_the_weights_come_from_the_lessons_training_cell(shipped):
    """The notebook's own training cell, run for its first 30 steps, starts the run the file holds:
    the same initial weights, batches, optimiser and schedule give the same losses (up to the
    rounding another CPU may do). A change to the cell or the model shows here until the weights are
    made again (`python data/sums/make_weights.py`)."""
    torch.set_num_threads(1)
    first = load_script("data/sums/make_weights.py").run_training(first_steps=30)["losses"]
    assert len(first) == 30
    np.testing.assert_allclose(first, shipped["losses"][:30].numpy(), rtol=0, atol=2e-3)


def test_the_data_readme_says_what_the_weights_are():
    readme = (ROOT / "data" / "sums" / "README.md").read_text()
    assert "`tinygpt.pt`" in readme and "python data/sums/make_weights.py" in readme
