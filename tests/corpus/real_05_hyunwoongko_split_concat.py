# lesson: 05_multi_head_attention
# source: hyunwoongko/transformer models/layers/multi_head_attention.py 63286547b9cd174a6cfc204832271814d685181f  (https://github.com/hyunwoongko/transformer/blob/63286547b9cd174a6cfc204832271814d685181f/models/layers/multi_head_attention.py)
# bug report: none
# adapted: the methods split(self, tensor) and concat(self, tensor) -> split_heads(x, num_heads) and merge_heads(x)
#   (self.n_head = num_heads).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    """
    split tensor by number of head

    :param tensor: [batch_size, length, d_model]
    :return: [batch_size, head, length, d_tensor]
    """
    batch_size, length, d_model = x.size()

    d_tensor = d_model // num_heads
    tensor = x.view(batch_size, length, num_heads, d_tensor).transpose(1, 2)
    # it is similar with group convolution (split by number of heads)

    return tensor
# %% merge_heads
def merge_heads(x):
    """
    inverse function of self.split(tensor : torch.Tensor)

    :param tensor: [batch_size, head, length, d_tensor]
    :return: [batch_size, length, d_model]
    """
    batch_size, head, length, d_tensor = x.size()
    d_model = head * d_tensor

    tensor = x.transpose(1, 2).contiguous().view(batch_size, length, d_model)
    return tensor
