"""Lesson 09's training cell over several seeds: does TinyGPT learn to add, and what does it cost?

    python benchmarks/lesson09_training.py [--seeds 0 1 2] [--steps 2000] [--batch 32] [--lr 3e-3]
        [--weight-decay 0.01] [--d-model 64] [--embedding-std S] [--curve 200]

The model, the data and the loop are the lesson's own (its cells are run from
solutions/09_generating_text.ipynb): random 32-character windows of data/sums/train.txt, AdamW with
a one-cycle schedule, one thread. Per seed it prints the mean loss of the last 100 steps, the greedy
accuracy on the 2,000 held-out sums, how often the units and the tens digit of the answer are right
(the units digit is the one the model learns last), and the training's processor and clock seconds
with the load average. --curve N also prints the accuracy on 400 held-out sums every N steps (not
counted in the times). --embedding-std S draws the token embedding from N(0, S^2) instead of
PyTorch's N(0, 1).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]


def lesson_namespace() -> dict:
    """apply_rope, TinyGPT, next_token_probs, generate and complete, as the solution defines them."""
    cells = {c["id"]: "".join(c["source"])
             for c in json.loads((ROOT / "solutions" / "09_generating_text.ipynb").read_text())["cells"]}
    ns: dict = {}
    exec("import math, time\nfrom pathlib import Path\nimport numpy as np\nimport torch\n"
         "import torch.nn.functional as F\nfrom torch import nn\n", ns)
    for cell in ("l09-03", "l09-08", "l09-12", "l09-17"):
        exec(cells[cell], ns)
    exec(cells["l09-20"].split("if model is None")[0], ns)          # complete() and accuracy()
    return ns


def digits_right(ns, model, lines):
    """(whole answers, units digits, tens digits) right, as shares of `lines`."""
    pairs = [(c, line.split("=")[1]) for (_, c), line in zip(ns["complete"](model, lines, temperature=0), lines)]
    return tuple(np.mean([test(c, want) for c, want in pairs]) for test in
                 (lambda c, w: c == w, lambda c, w: c[-1:] == w[-1:], lambda c, w: c[-2:-1] == w[-2:-1]))


def train(ns, train_ids, test_lines, seed, args):
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = ns["TinyGPT"](d_model=args.d_model)
    if args.embedding_std is not None:
        torch.nn.init.normal_(model.embed.weight, std=args.embedding_std)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    offsets, losses, curve, cpu, wall = torch.arange(33), [], [], 0.0, 0.0
    for step in range(args.steps):
        start, start_cpu = time.perf_counter(), time.process_time()
        windows = train_ids[torch.randint(len(train_ids) - 33, (args.batch,))[:, None] + offsets]
        logits, _ = model(windows[:, :-1], use_cache=False)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        cpu, wall = cpu + time.process_time() - start_cpu, wall + time.perf_counter() - start
        if args.curve and (step + 1) % args.curve == 0:
            curve.append(f"{digits_right(ns, model.eval(), test_lines[:400])[0]:.0%}")
            model.train()
    return model.eval(), float(np.mean(losses[-100:])), cpu, wall, curve


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--embedding-std", type=float, default=None)
    parser.add_argument("--curve", type=int, default=0)
    args = parser.parse_args()
    ns = lesson_namespace()
    train_ids = ns["encode"]((ROOT / "data" / "sums" / "train.txt").read_text())
    test_lines = (ROOT / "data" / "sums" / "test.txt").read_text().splitlines()
    print(f"{'seed':>4} {'loss':>6} {'greedy':>7} {'units':>6} {'tens':>6} {'cpu s':>6} {'clock s':>7} {'load':>5}")
    for seed in args.seeds:
        model, loss, cpu, wall, curve = train(ns, train_ids, test_lines, seed, args)
        whole, units, tens = digits_right(ns, model, test_lines)
        print(f"{seed:>4} {loss:6.3f} {whole:7.1%} {units:6.1%} {tens:6.1%} {cpu:6.1f} {wall:7.1f} "
              f"{os.getloadavg()[0]:5.1f}  {' '.join(curve)}", flush=True)


if __name__ == "__main__":
    main()
