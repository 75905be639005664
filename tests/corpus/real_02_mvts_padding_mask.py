# lesson: 02_masking
# source: gzerveas/mvts_transformer src/datasets/dataset.py 812be5e727196ce31d35691778609bd40647c639  (https://github.com/gzerveas/mvts_transformer/blob/812be5e727196ce31d35691778609bd40647c639/src/datasets/dataset.py)
# bug report: none (upstream the (batch, max_len) mask is unsqueezed where it is used)
# adapted: padding_mask(lengths, max_len=None) -> padding_mask(lengths, max_len); torch imported in the cell,
#   `lengths` taken through torch.as_tensor (the original receives a tensor) and the result returned as a NumPy
#   array (.numpy()). Same convention as the course (1 = keep).
# expect: wrong padding_mask wrong-shape
# %% padding_mask
import torch

def padding_mask(lengths, max_len):
    """
    Used to mask padded positions: creates a (batch_size, max_len) boolean mask from a tensor of sequence lengths,
    where 1 means keep element at this position (time step)
    """
    lengths = torch.as_tensor(lengths)
    batch_size = lengths.numel()
    max_len = max_len or lengths.max_val()  # trick works because of overloading of 'or' operator for non-boolean types
    return (torch.arange(0, max_len, device=lengths.device)
            .type_as(lengths)
            .repeat(batch_size, 1)
            .lt(lengths.unsqueeze(1))).numpy()
