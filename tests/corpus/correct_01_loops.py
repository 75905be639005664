# lesson: 01_scaled_dot_product_attention
# expect: correct
# Loops over the batch (flattened) and over queries: slow but right.
# %% softmax
def softmax(x, axis=-1):
    moved = np.moveaxis(x, axis, -1)
    out = np.empty_like(moved)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return np.moveaxis(out, -1, axis)
# %% scaled_dot_product_attention
import math
def scaled_dot_product_attention(q, k, v, mask=None):
    batch = q.shape[:-2]
    qf = q.reshape(-1, *q.shape[-2:]); kf = k.reshape(-1, *k.shape[-2:]); vf = v.reshape(-1, *v.shape[-2:])
    outs, ws = [], []
    for b in range(qf.shape[0]):
        w = np.stack([softmax(kf[b] @ qf[b][i] / math.sqrt(q.shape[-1])) for i in range(qf.shape[1])])
        ws.append(w); outs.append(w @ vf[b])
    return np.stack(outs).reshape(*batch, q.shape[-2], v.shape[-1]), np.stack(ws).reshape(*batch, q.shape[-2], k.shape[-2])
