"""The references of lessons 07-08 agree with independent oracles: numbers worked out by hand,
nn.TransformerEncoderLayer and nn.MultiheadAttention with copied weights, and an explicit loop over
batch, head and absolute position for the KV cache and grouped-query attention. The mutants'
correct defaults equal the references, and each mutant switch changes the answer."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from autograder.diagnose import fingerprints
from autograder.grading.checking import causal_pattern, padding_pattern
from autograder.grading.reference import load_reference

L07, L08 = "07_transformer_block", "08_fast_attention"


# ------------------------------------------------------------------------ lesson 07

def test_positional_encoding_by_hand():
    pe = load_reference(L07).positional_encoding(3, 4)
    assert pe.dtype == torch.float32 and pe.shape == (3, 4)
    # d_model = 4: pair 0 has angle p / 10000^0 = p, pair 1 has angle p / 10000^(2/4) = p / 100
    expected = [[0.0, 1.0, 0.0, 1.0],
                [0.8414709848078965, 0.5403023058681398, 0.009999833334166664, 0.9999500004166653],   # sin 1, cos 1, sin .01, cos .01
                [0.9092974268256817, -0.4161468365471424, 0.01999866669333308, 0.9998000066665778]]  # sin 2, cos 2, sin .02, cos .02
    torch.testing.assert_close(pe, torch.tensor(expected), rtol=0, atol=1e-7)
    # d_model = 6, position 5, feature 3 (pair 1, cosine): angle 5 / 10000^(2/6) = 5 / 21.544346900318832
    pe6 = load_reference(L07).positional_encoding(6, 6)
    assert abs(pe6[5, 3].item() - math.cos(5 / 21.544346900318832)) < 1e-7
    assert abs(pe6[5, 4].item() - math.sin(5 / 464.15888336127773)) < 1e-7      # 10000^(4/6)
    with pytest.raises(ValueError):
        load_reference(L07).positional_encoding(4, 7)


def test_positional_mutant_defaults_and_switches():
    """A fingerprint with no switch on is the reference's answer; each switch changes it."""
    ref = load_reference(L07).positional_encoding(20, 16)
    torch.testing.assert_close(fingerprints.positional(load_reference(L07).positional_encoding, 20, 16), ref, rtol=0, atol=1e-7)
    for kw in [dict(swap=True), dict(freq="i"), dict(freq="feature"), dict(freq="inverse")]:
        assert (fingerprints.positional(load_reference(L07).positional_encoding, 20, 16, **kw) - ref).abs().max() > 1e-2, kw


RENAME = {"self_attn.": "attn.", "linear1.": "ff.0.", "linear2.": "ff.2."}


def paired_blocks(d_model, h, d_ff, dropout=0.0, seed=0):
    torch.manual_seed(seed)
    theirs = nn.TransformerEncoderLayer(d_model, h, d_ff, dropout, batch_first=True, norm_first=True).double().eval()
    with torch.no_grad():   # non-trivial LayerNorm parameters
        for norm in (theirs.norm1, theirs.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_()
    ours = load_reference(L07).TransformerBlock(d_model, h, d_ff, dropout).double().eval()
    state = {}
    for name, value in theirs.state_dict().items():
        for old, new in RENAME.items():
            name = name.replace(old, new)
        state[name] = value
    ours.load_state_dict(state)                   # strict: every name and shape matches
    return ours, theirs, state


@pytest.mark.parametrize("b,t,d_model,h,d_ff", [(2, 5, 8, 2, 16), (3, 7, 12, 3, 20), (1, 4, 16, 4, 8)])
def test_block_equals_transformer_encoder_layer(b, t, d_model, h, d_ff):
    ours, theirs, _ = paired_blocks(d_model, h, d_ff, dropout=0.1)
    x = torch.randn(b, t, d_model, dtype=torch.float64)
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    lengths = torch.tensor([t, max(t - 2, 1), 1])[:b]
    keep = torch.arange(t)[None, :] < lengths[:, None]                   # (B, T)
    per_sequence = causal & keep[:, None, :]                              # (B, T, T)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(ours(x, causal), theirs(x, src_mask=~causal), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(ours(x, keep[:, None, :]), theirs(x, src_key_padding_mask=~keep),
                                   rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(ours(x, per_sequence.int()),
                                   theirs(x, src_mask=(~per_sequence).repeat_interleave(h, dim=0)),
                                   rtol=1e-10, atol=1e-12)


def test_block_mutant_defaults_and_switches():
    ours, _, state = paired_blocks(12, 3, 20)
    x = torch.randn(3, 6, 12, dtype=torch.float64)
    mask = torch.from_numpy(padding_pattern([6, 4, 5], 6))                 # (3, 1, 6)
    with torch.no_grad():
        for m in (None, mask, torch.from_numpy(causal_pattern(6))):
            torch.testing.assert_close(fingerprints.torch_block(load_reference(L07).TransformerBlock, state, x, m, h=3), ours(x, m), rtol=1e-10, atol=1e-12)
        ref = ours(x, mask)
    for kw in [dict(residual="attn"), dict(residual="ff"), dict(residual="none"), dict(norm="post"),
               dict(invert=True), dict(mask_misbroadcast=True)]:
        got = fingerprints.torch_block(load_reference(L07).TransformerBlock, state, x, mask, h=3, **kw)
        assert not torch.allclose(got, ref, atol=1e-3, equal_nan=True), kw


def test_block_dropout_only_in_training():
    ours, _, _ = paired_blocks(8, 2, 16, dropout=0.5)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    with torch.no_grad():
        evaluated = ours(x)
        ours.train()
        assert not torch.allclose(ours(x), evaluated)


# ------------------------------------------------------------------------ lesson 08

def test_repeat_kv_against_a_loop():
    ref = load_reference(L08)
    x = torch.randn(2, 3, 4, 5)
    for n_rep in (1, 2, 4):
        got = ref.repeat_kv(x, n_rep)
        assert got.shape == (2, 3 * n_rep, 4, 5)
        for j in range(3 * n_rep):
            assert torch.equal(got[:, j], x[:, j // n_rep])
        assert torch.equal(fingerprints.repeat_heads(ref.repeat_kv, x, n_rep), got)
    assert not torch.equal(fingerprints.repeat_heads(ref.repeat_kv, x, 2, order="tile"), ref.repeat_kv(x, 2))


def loop_attention(module, x):
    """Causal GQA by explicit loops: batch, query head, absolute position; keys 0..t of kv head j // n_rep."""
    B, T, D = x.shape
    h, h_kv = module.num_heads, module.num_kv_heads
    d_k = D // h
    q = module.w_q(x).view(B, T, h, d_k)
    k = module.w_k(x).view(B, T, h_kv, d_k)
    v = module.w_v(x).view(B, T, h_kv, d_k)
    out = torch.zeros(B, T, h, d_k, dtype=x.dtype)
    for b in range(B):
        for head in range(h):
            g = head // (h // h_kv)
            for t in range(T):
                scores = torch.stack([q[b, t, head] @ k[b, j, g] for j in range(t + 1)]) / math.sqrt(d_k)
                w = torch.exp(scores - scores.max())
                w = w / w.sum()
                out[b, t, head] = sum(w[j] * v[b, j, g] for j in range(t + 1))
    return module.w_o(out.reshape(B, T, D))


@pytest.mark.parametrize("h,h_kv", [(4, 4), (4, 2), (6, 3), (4, 1)])
def test_cache_at_once_tokens_chunks_equal_the_loop(h, h_kv):
    torch.manual_seed(h * 10 + h_kv)
    module = load_reference(L08).CausalSelfAttention(24, h, h_kv).double().eval()
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    with torch.no_grad():
        expected = loop_attention(module, x)
        whole, (k, v) = module(x)
        assert k.shape == v.shape == (2, h_kv, 7, 24 // h)
        torch.testing.assert_close(whole, expected, rtol=1e-10, atol=1e-12)
        for chunks in ([1] * 7, [3, 1, 3], [2, 5]):
            outputs, cache, start = [], None, 0
            for n in chunks:
                out, cache = module(x[:, start:start + n], cache)
                outputs.append(out)
                start += n
            torch.testing.assert_close(torch.cat(outputs, 1), expected, rtol=1e-10, atol=1e-12)
            torch.testing.assert_close(cache[0], k, rtol=0, atol=1e-12)
            torch.testing.assert_close(cache[1], v, rtol=0, atol=1e-12)
        p = dict(module.state_dict())
        got, last = fingerprints.causal_chunks(load_reference(L08).CausalSelfAttention, p, x, [3, 1, 3], h=h, h_kv=h_kv)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(last[0], k, rtol=0, atol=1e-12)


def test_causal_self_attention_equals_multihead_attention():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(16, 4, batch_first=True).double().eval()
    ours = load_reference(L08).CausalSelfAttention(16, 4).double().eval()
    with torch.no_grad():
        for layer, w, b in zip((ours.w_q, ours.w_k, ours.w_v), theirs.in_proj_weight.chunk(3),
                               theirs.in_proj_bias.chunk(3)):
            layer.weight.copy_(w)
            layer.bias.copy_(b)
        ours.w_o.load_state_dict(theirs.out_proj.state_dict())
        x = torch.randn(3, 9, 16, dtype=torch.float64)
        causal = torch.tril(torch.ones(9, 9, dtype=torch.bool))
        torch.testing.assert_close(ours(x)[0], theirs(x, x, x, attn_mask=~causal)[0], rtol=1e-10, atol=1e-12)
        # and with a cache: the last 4 tokens after 5 cached ones
        _, cache = ours(x[:, :5])
        torch.testing.assert_close(ours(x[:, 5:], cache)[0], theirs(x, x, x, attn_mask=~causal)[0][:, 5:],
                                   rtol=1e-10, atol=1e-12)


def test_causal_mutant_switches_change_the_answer():
    torch.manual_seed(1)
    module = load_reference(L08).CausalSelfAttention(16, 4, 2).double().eval()
    p = dict(module.state_dict())
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    with torch.no_grad():
        ref = module(x)[0]
    switches = [dict(order="tile"), dict(offset="ignore"), dict(offset="none"), dict(append="old"),
                dict(append="new"), dict(append="none"), dict(scale="none"), dict(heads_mixed=True),
                dict(causal="diag"), dict(causal="next"), dict(causal="upper")]
    for kw in switches:
        got, _ = fingerprints.causal_chunks(load_reference(L08).CausalSelfAttention, p, x, [2, 1, 3], h=4, h_kv=2, **kw)
        assert not torch.allclose(got, ref, atol=1e-3, equal_nan=True), kw
