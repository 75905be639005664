# lesson: 08_fast_attention
# source: mcrl/tt-metal models/demos/qwen3/reference/qwen3_moe/sdpa_attention.py 98d9beedda36407a1b496a9b0740d407c16a6ecb
# adapted: repeat_kv taken as it is (hidden_states -> x).
# expect: correct
# %% repeat_kv
def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, seq_len, head_dim = x.shape
    if n_rep == 1:
        return x
    x = x[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, seq_len, head_dim)
    return x.reshape(batch, num_key_value_heads * n_rep, seq_len, head_dim)
