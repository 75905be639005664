# lesson: 02_masking
# source: harvardnlp/annotated-transformer the_annotated_transformer.py debc9fd747bb2123160a98046ad1c2d4da44a567  (https://github.com/harvardnlp/annotated-transformer/blob/debc9fd747bb2123160a98046ad1c2d4da44a567/the_annotated_transformer.py)
# bug report: none (upstream the (1, size, size) shape is meant to broadcast over the batch)
# adapted: subsequent_mask(size) -> causal_mask(seq_len); torch imported in the cell and the result returned as a
#   NumPy array (.numpy()), the lesson's type. Same convention as the course (True = may attend).
# expect: wrong causal_mask wrong-shape
# %% causal_mask
import torch

def causal_mask(seq_len):
    "Mask out subsequent positions."
    attn_shape = (1, seq_len, seq_len)
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(
        torch.uint8
    )
    return (subsequent_mask == 0).numpy()
