"""The operators of `plax.Array` whose calls on concrete operands run their
`plax.numpy` function jitted, by dunder (without underscores) and function name:
binary ones (with their reflected forms) and unary ones.

plax-stdlib's array methods and plax-transforms' C++ fast operators both read this
table. It is a module of its own, outside `plax.numpy`, so that `plax.jit`'s modules
read it without importing `plax.numpy`, whose import makes `plax.jit` functions.
"""
JITTED_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply",
                    "truediv": "true_divide"}
JITTED_UNARY_OPERATORS = {"neg": "negative", "pos": "positive", "abs": "absolute",
                          "invert": "invert"}
