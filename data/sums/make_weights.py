"""Writes data/sums/tinygpt.pt: lesson 09's TinyGPT after its training cell's full run.

    python data/sums/make_weights.py

It runs the lesson's own cells from solutions/09_generating_text.ipynb (apply_rope, TinyGPT, and the
training cell with TRAIN_FULLY = True: seed 0, 2,000 steps of AdamW on one thread), then saves the
weights and the loss of every step. The notebook trains the first 400 of those steps itself and loads
the rest from this file, so that its training cell takes seconds rather than a minute; a student who
sets TRAIN_FULLY = True trains all 2,000. Another CPU may round differently and save slightly different
weights: tests/test_lesson09_weights.py checks any saved weights the way the lesson uses them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
CELLS = ("l09-03", "l09-08", "l09-10")           # apply_rope, TinyGPT, the training cell
FULLY = "TRAIN_FULLY = False"


def lesson_cells() -> dict[str, str]:
    notebook = json.loads((ROOT / "solutions" / "09_generating_text.ipynb").read_text(encoding="utf-8"))
    return {cell["id"]: "".join(cell["source"]) for cell in notebook["cells"]}


def run_training(first_steps: int | None = None) -> dict:
    """The training cell's namespace after it ran fully (or only `first_steps` steps)."""
    cells = lesson_cells()
    namespace: dict = {}
    exec("import math, time\nfrom pathlib import Path\nimport numpy as np\nimport torch\n"
         "import torch.nn.functional as F\nfrom torch import nn\n", namespace)
    for cell in CELLS[:-1]:
        exec(cells[cell], namespace)
    training = cells[CELLS[-1]]
    assert FULLY in training, f"the training cell no longer says {FULLY!r}"
    if first_steps is None:
        training = training.replace(FULLY, "TRAIN_FULLY = True")
    else:
        training = training.replace("FIRST_STEPS = 400", f"FIRST_STEPS = {first_steps}")
    cwd = os.getcwd()
    os.chdir(ROOT)                                 # the cell finds data/sums/ from the working folder
    try:
        exec(training, namespace)
    finally:
        os.chdir(cwd)
    return namespace


def main() -> None:
    trained = run_training()
    weights = {"model": trained["model"].state_dict(), "losses": torch.tensor(trained["losses"]),
               "seed": 0, "torch": str(torch.__version__)}
    torch.save(weights, ROOT / "data" / "sums" / "tinygpt.pt")
    print(f"wrote data/sums/tinygpt.pt ({len(trained['losses'])} steps)")


if __name__ == "__main__":
    main()
