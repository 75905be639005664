# lesson: 09_generating_text
# expect: wrong generate -
# degenerate: the prompt followed by zeros, the model never called.
# %% generate
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    return torch.cat([prompt, torch.zeros(prompt.shape[0], max_new_tokens, dtype=torch.long)], dim=1)
