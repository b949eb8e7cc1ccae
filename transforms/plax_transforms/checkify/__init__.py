"""`plax.experimental.checkify`: JAX's checkify, functional error checking.

`checkify(f, errors)(*args)` returns `(error, out)`: `error.get()` is the message of
the first failed check (None if all passed) and `error.throw()` raises it. Checks
are the user's (`check`, `debug_check`, `check_error`) and, as `errors` selects,
automatic ones: `nan_checks`, `div_checks`, `index_checks` (`float_checks`,
`automatic_checks` and `all_checks` combine them). Works under jit, vmap and grad,
and through cond, while_loop and scan.
"""
from plax_transforms.checkify.check import check, check_error, debug_check
from plax_transforms.checkify.errors import (DivisionByZeroError, Error, ErrorCategory,
                                             FailedCheckError, JaxException, JaxRuntimeError,
                                             NaNError, OOBError, all_checks, automatic_checks,
                                             div_checks, float_checks, index_checks,
                                             init_error, nan_checks, user_checks)
from plax_transforms.checkify.interpreter import checkify

__all__ = ["DivisionByZeroError", "Error", "ErrorCategory", "FailedCheckError",
           "JaxException", "JaxRuntimeError", "NaNError", "OOBError", "all_checks",
           "automatic_checks", "check", "check_error", "checkify", "debug_check", "div_checks",
           "float_checks", "index_checks", "init_error", "nan_checks", "user_checks"]
