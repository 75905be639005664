# lesson: 09_generating_text
# expect: wrong generate -
# degenerate: calls the model exactly as the contract says, in eval mode without gradients, and
# returns the prompt followed by zeros.
# %% generate
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits, cache = model(prompt, cache=None)
        for i in range(max_new_tokens - 1):
            logits, cache = model(torch.zeros(prompt.shape[0], 1, dtype=torch.long), cache=cache)
    model.train(was_training)
    return torch.cat([prompt, torch.zeros(prompt.shape[0], max_new_tokens, dtype=torch.long)], dim=1)
