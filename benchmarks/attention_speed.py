"""Time and peak memory of self-attention on the CPU: lesson 05's explicit module, a fused module
built on F.scaled_dot_product_attention, and nn.MultiheadAttention(need_weights=False).

    python benchmarks/attention_speed.py [--batch 8] [--d-model 512] [--heads 8] [--lengths 128 256 ...]

All three run the same self-attention (no mask) in eval mode under torch.no_grad(), measured side
by side in one run: the fastest of --repeat timed forward passes (the modules taking turns) after one warm-up, and the peak
resident memory a forward pass adds (Linux: the VmHWM high-water mark, reset through
/proc/self/clear_refs before each pass). Lesson 08 shows a smaller sweep of the same measurement.
"""
from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn


class ExplicitAttention(nn.Module):
    """Lesson 05's module: separate projections, the (B, h, T, T) scores and weights in memory."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = (w(x).view(B, T, self.h, self.d_k).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)      # (B, h, T, T)
        weights = torch.softmax(scores, dim=-1)                      # (B, h, T, T)
        return self.w_o((weights @ v).transpose(1, 2).reshape(B, T, D))


class FusedAttention(nn.Module):
    """One packed q/k/v projection and F.scaled_dot_product_attention, which never stores the
    whole (T, T) score matrix."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)   # each (B, h, T, d_k)
        out = F.scaled_dot_product_attention(q, k, v)                                    # (B, h, T, d_k)
        return self.w_o(out.transpose(1, 2).reshape(B, T, D))


class TorchAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


MODULES = {"lesson 05 (explicit)": ExplicitAttention, "fused (SDPA)": FusedAttention,
           "nn.MultiheadAttention": TorchAttention}


def _status(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _release_freed_memory():
    """glibc keeps freed blocks for reuse, which would hide a later allocation from the counters:
    serve large blocks with mmap (returned to the system when freed) and trim the heap."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 128 * 1024)         # M_MMAP_THRESHOLD, fixed (no dynamic raise)
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_memory(run) -> int | None:
    """Bytes of resident memory a call adds at its peak (None where Linux's counters are missing)."""
    _release_freed_memory()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                     # reset the high-water mark to the current size
    except OSError:
        return None
    before = _status("VmRSS")
    run()
    after = _status("VmHWM")
    return None if before is None or after is None else max(after - before, 0)


def measure(modules: dict, x, repeat: int) -> dict:
    """{name: (seconds, peak bytes)}: the fastest of `repeat` passes, the modules taking turns so that
    a burst of load from elsewhere on the machine hits all of them alike."""
    times = {name: [] for name in modules}
    memory = {}
    with torch.no_grad():
        for name, module in modules.items():
            module(x)                                    # warm-up
            memory[name] = peak_memory(lambda: module(x))
        for _ in range(repeat):
            for name, module in modules.items():
                start = time.perf_counter()
                module(x)
                times[name].append(time.perf_counter() - start)
    return {name: (min(times[name]), memory[name]) for name in modules}


def run(batch=8, d_model=512, heads=8, lengths=(128, 256, 512, 1024, 2048), repeat=5,
        show=lambda line: print(line, flush=True)):
    """{T: {module name: (seconds, peak bytes)}}, one row printed per length as it is measured."""
    torch.manual_seed(0)
    modules = {name: cls(d_model, heads).eval() for name, cls in MODULES.items()}
    names = list(modules)
    show(f"B = {batch}, d_model = {d_model}, h = {heads}, CPU ({torch.get_num_threads()} threads), "
         f"best of {repeat}; memory = peak added by one forward pass")
    show(f"{'T':>5} | " + " | ".join(f"{n:>24}" for n in names) + " | fused/torch  explicit/torch")
    table = {}
    for T in lengths:
        x = torch.randn(batch, T, d_model)
        row = measure(modules, x, repeat)
        table[T] = row
        cells = [f"{s * 1e3:8.1f} ms {('%7.0f MiB' % (b / 2**20)) if b is not None else '      n/a'}"
                 for s, b in row.values()]
        torch_s = row["nn.MultiheadAttention"][0]
        show(f"{T:>5} | " + " | ".join(f"{c:>24}" for c in cells)
             + f" | {row['fused (SDPA)'][0] / torch_s:10.2f}x {row['lesson 05 (explicit)'][0] / torch_s:12.2f}x")
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512, 1024, 2048])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    table = run(args.batch, args.d_model, args.heads, args.lengths, args.repeat)
    ratios = {T: row["fused (SDPA)"][0] / row["nn.MultiheadAttention"][0] for T, row in table.items()}
    slower = [str(T) for T, ratio in ratios.items() if ratio > 1]
    verdict = ("the fused module was the faster of the two at every length" if not slower
               else f"the fused module was slower at T = {', '.join(slower)}")
    print(f"\nThe fused module took {min(ratios.values()):.2f}x to {max(ratios.values()):.2f}x the time of "
          f"nn.MultiheadAttention: {verdict}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
