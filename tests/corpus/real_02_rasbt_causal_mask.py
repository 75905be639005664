# lesson: 02_masking
# source: rasbt/LLMs-from-scratch pkg/llms_from_scratch/ch03.py 28c65cdfbc3338e2e040016eea4b7fdf556e4d57  (https://github.com/rasbt/LLMs-from-scratch/blob/28c65cdfbc3338e2e040016eea4b7fdf556e4d57/pkg/llms_from_scratch/ch03.py)
# bug report: none
# adapted: the causal buffer of CausalAttention, torch.triu(torch.ones(context_length, context_length), diagonal=1)
#   with 1 = blocked, and its use `self.mask.bool()[:num_tokens, :num_tokens]`, as causal_mask(seq_len): torch
#   imported in the cell, the result turned into the course's convention (~, True = may attend) and returned as a
#   NumPy array.
# expect: correct
# %% causal_mask
import torch

def causal_mask(seq_len):
    mask = torch.triu(torch.ones(seq_len, seq_len), diagonal=1)
    return (~mask.bool()[:seq_len, :seq_len]).numpy()
