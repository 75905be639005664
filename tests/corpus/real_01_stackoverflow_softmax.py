# lesson: 01_scaled_dot_product_attention
# source: orris27/deeplearning-simple-implementation utils.py 300f299baf586ebd3c08f214a13061109320880f  (https://github.com/orris27/deeplearning-simple-implementation/blob/300f299baf586ebd3c08f214a13061109320880f/utils.py)
#   (the widely copied Stack Overflow answer "How to implement the Softmax function in Python")
# bug report: none
# adapted: softmax(x) -> softmax(x, axis=-1) (the new parameter is not used: the original has none).
# expect: wrong softmax softmax-wrong-axis softmax-ignores-axis softmax-global-max
# It subtracts the max of the whole array and always sums over axis 0 (right only for a 1-D vector).
# %% softmax
def softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x)) # Same result as np.exp(x) while avoiding overflow
    return e_x / e_x.sum(axis=0)
