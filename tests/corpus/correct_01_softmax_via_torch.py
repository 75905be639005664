# lesson: 01_scaled_dot_product_attention
# expect: correct
# Delegates the softmax to PyTorch and converts back to NumPy.
# %% softmax
import torch

def softmax(x, axis=-1):
    return torch.softmax(torch.from_numpy(np.array(x)), dim=axis).numpy()
