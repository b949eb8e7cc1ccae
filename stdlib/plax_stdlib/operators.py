"""The operators of `plax.Array` whose calls on concrete operands run their
`plax.numpy` function jitted, by dunder (without underscores) and function name.

plax-stdlib's array methods and plax-transforms' C++ fast operators both read this
table. It is a module of its own, outside `plax.numpy`, so that `plax.jit`'s modules
read it without importing `plax.numpy`, whose import makes `plax.jit` functions.
"""
JITTED_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply",
                    "truediv": "true_divide"}
