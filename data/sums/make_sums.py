"""Write train.txt and test.txt: every sum a + b = c with 0 <= a, b <= 99, one per line, split 8000 / 2000.

    python data/sums/make_sums.py

The split is drawn with a fixed seed, so running this again writes the same files.
"""
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    pairs = [(a, b) for a in range(100) for b in range(100)]
    random.Random(20261125).shuffle(pairs)
    for name, part in (("train.txt", pairs[:8000]), ("test.txt", pairs[8000:])):
        (HERE / name).write_text("".join(f"{a}+{b}={a + b}\n" for a, b in part), encoding="ascii")


if __name__ == "__main__":
    main()
