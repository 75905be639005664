# lesson: 05_multi_head_attention
# source: hyunwoongko/transformer models/layers/multi_head_attention.py 434daf5ec5bcdf8ef1a58e9d030ca1ac30534b07  (https://github.com/hyunwoongko/transformer/blob/434daf5ec5bcdf8ef1a58e9d030ca1ac30534b07/models/layers/multi_head_attention.py)
# bug report: fixed upstream in hyunwoongko/transformer@391c9cd "modify transpose" (view -> view + transpose)
# adapted: the methods split(self, tensor) and concat(self, tensor) -> split_heads(x, num_heads) and merge_heads(x)
#   (self.n_head = num_heads).
# expect: wrong split_heads heads-mixed
# expect: wrong merge_heads heads-mixed
# %% split_heads
def split_heads(x, num_heads):
    """
    split tensor by number of head

    :param tensor: [batch_size, length, d_model]
    :return: [batch_size, head, length, d_tensor]
    """
    batch_size, length, d_model = x.size()

    d_tensor = d_model // num_heads
    tensor = x.view(batch_size, num_heads, length, d_tensor)
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

    tensor = x.view(batch_size, length, d_model)
    return tensor
