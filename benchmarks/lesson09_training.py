"""Lesson 09's training cell over several seeds: does TinyGPT learn to add, and what does it cost?

    python benchmarks/lesson09_training.py [--seeds 0 1 2] [--steps 2000] [--batch 32] [--window 32]
        [--lr 3e-3] [--weight-decay 0.01] [--betas 0.9 0.99] [--schedule onecycle|cosine]
        [--warmup 0.1] [--final-lr 0.1] [--d-model 64] [--heads 4] [--kv-heads 2] [--layers 2]
        [--ff-mult 4] [--init pytorch|gpt2] [--embedding-std S] [--threads 1 2] [--curve 200]

The model, the data and the loop are the lesson's own (its cells are run from
solutions/09_generating_text.ipynb): random windows of data/sums/train.txt, AdamW (betas 0.9, 0.99)
with a one-cycle schedule, one thread. Per seed it prints the mean loss of the last 100 steps, the greedy
accuracy on the 2,000 held-out sums, how often the units and the tens digit of the answer are right
(the units digit is the one the model learns last), and the training's processor and clock seconds
with the load average; the last line counts the seeds at 90 % or more. --curve N also prints the
accuracy on 400 held-out sums every N steps (not counted in the times).

Options that change the lesson's setup: --init gpt2 draws every Linear and Embedding weight from
N(0, 0.02^2) with zero biases, the residual projections (attention output, second feed-forward
layer) from N(0, (0.02 / sqrt(2 * layers))^2), as GPT-2 does; --embedding-std S draws only the token
embedding from N(0, S^2) instead of the lesson's N(0, 0.02^2) (1 gives nn.Embedding's default, the
lesson's before issue 33). --schedule cosine warms up linearly over the
first --warmup share of the steps, then decays along a cosine to --final-lr times the peak.
--threads 1 2 trains every seed once per thread count (intra-op threads, torch.set_num_threads).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

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


def build_model(ns, args):
    model = ns["TinyGPT"](d_model=args.d_model, num_heads=args.heads, num_kv_heads=args.kv_heads,
                          num_layers=args.layers)
    if args.ff_mult != 4:
        for block in model.blocks:
            block.ff = nn.Sequential(nn.Linear(args.d_model, args.ff_mult * args.d_model), nn.GELU(),
                                     nn.Linear(args.ff_mult * args.d_model, args.d_model))
    if args.init == "gpt2":
        residual = {id(m) for block in model.blocks for m in (block.attn.out, block.ff[-1])}
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * args.layers) if id(module) in residual else 0.02
                nn.init.normal_(module.weight, std=std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
    if args.embedding_std is not None:
        nn.init.normal_(model.embed.weight, std=args.embedding_std)
    return model


def lr_schedule(optimizer, args):
    if args.schedule == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps,
                                                   pct_start=args.warmup)
    warmup = max(1, round(args.warmup * args.steps))

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, args.steps - warmup)
        return args.final_lr + (1 - args.final_lr) * 0.5 * (1 + math.cos(math.pi * progress))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train(ns, train_ids, test_lines, seed, threads, args):
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = build_model(ns, args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay,
                                  betas=tuple(args.betas))
    schedule = lr_schedule(optimizer, args)
    offsets, losses, curve, cpu, wall = torch.arange(args.window + 1), [], [], 0.0, 0.0
    for step in range(args.steps):
        start, start_cpu = time.perf_counter(), time.process_time()
        windows = train_ids[torch.randint(len(train_ids) - args.window - 1, (args.batch,))[:, None] + offsets]
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
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.99])
    parser.add_argument("--schedule", choices=["onecycle", "cosine"], default="onecycle")
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--final-lr", type=float, default=0.1)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--ff-mult", type=int, default=4)
    parser.add_argument("--init", choices=["pytorch", "gpt2"], default="pytorch")
    parser.add_argument("--embedding-std", type=float, default=None)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--curve", type=int, default=0)
    args = parser.parse_args()
    ns = lesson_namespace()
    train_ids = ns["encode"]((ROOT / "data" / "sums" / "train.txt").read_text())
    test_lines = (ROOT / "data" / "sums" / "test.txt").read_text().splitlines()
    print(" ".join(f"{k}={v}" for k, v in vars(args).items() if k not in ("seeds", "curve")))
    print(f"{'seed':>4} {'thr':>3} {'loss':>6} {'greedy':>7} {'units':>6} {'tens':>6} {'cpu s':>6} {'clock s':>7} "
          f"{'load':>5}")
    results = []
    for seed in args.seeds:
        for threads in args.threads:
            model, loss, cpu, wall, curve = train(ns, train_ids, test_lines, seed, threads, args)
            whole, units, tens = digits_right(ns, model, test_lines)
            results.append((whole, cpu, wall))
            print(f"{seed:>4} {threads:>3} {loss:6.3f} {whole:7.1%} {units:6.1%} {tens:6.1%} {cpu:6.1f} {wall:7.1f} "
                  f"{os.getloadavg()[0]:5.1f}  {' '.join(curve)}", flush=True)
    accuracy, cpu, wall = np.array(results).T
    print(f"{(accuracy >= 0.9).sum()} of {len(accuracy)} runs at 90 % or more (lowest {accuracy.min():.1%}); "
          f"processor {cpu.min():.1f}-{cpu.max():.1f} s, clock {wall.min():.1f}-{wall.max():.1f} s")


if __name__ == "__main__":
    main()
