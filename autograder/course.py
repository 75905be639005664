"""What the course is made of: lessons, their graded exercises, and where files live.

The lesson ids and grade_ids are fixed by ../shared/COURSE_SPEC.md; other tools depend on them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"
CHECKS = Path(__file__).resolve().parent / "checks"
TRANSLATIONS = ("zh_CN",)   # the languages `release` also writes, into lessons/<lang>/ (deliver/translations.py)


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    exercises: tuple[str, ...]

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS / f"{self.id}.ipynb"

    @property
    def released_path(self) -> Path:
        return LESSONS / f"{self.id}.ipynb"

    @property
    def released_editions(self) -> tuple[Path, ...]:
        """The released notebook, then its translations that exist (lessons/<lang>/, same name)."""
        translated = (LESSONS / lang / f"{self.id}.ipynb" for lang in TRANSLATIONS)
        return (self.released_path, *(p for p in translated if p.exists()))


COURSE: dict[str, Lesson] = {lesson.id: lesson for lesson in [
    Lesson("01_scaled_dot_product_attention", "Scaled dot-product attention",
           ("softmax", "scaled_dot_product_attention")),
    Lesson("02_masking", "Masking", ("causal_mask", "padding_mask", "scaled_dot_product_attention")),
    Lesson("03_self_attention_head", "A learned self-attention head", ("SelfAttentionHead",)),
    Lesson("04_worked_example", "A worked example, checked", ("worked_example", "published_errors")),
    Lesson("05_multi_head_attention", "Multi-head attention", ("split_heads", "merge_heads", "MultiHeadAttention")),
    Lesson("06_debugging_projection_reuse", "Debugging: the projection-reuse bug",
           ("test_projections", "FixedMultiHeadAttention")),
    Lesson("07_transformer_block", "Attention inside a transformer block", ("positional_encoding", "TransformerBlock")),
    Lesson("08_fast_attention", "Decoding fast: KV cache and grouped-query attention",
           ("repeat_kv", "CausalSelfAttention")),
    Lesson("09_generating_text", "Generating text: RoPE, sampling and the decoding loop",
           ("apply_rope", "next_token_probs", "generate")),
    Lesson("10_flash_attention", "FlashAttention from scratch: exact attention in tiles",
           ("combine_attention", "flash_attention")),
]}


def available_lessons() -> list[Lesson]:
    """The lessons whose source notebook exists in this checkout."""
    return [lesson for lesson in COURSE.values() if lesson.solution_path.exists()]
