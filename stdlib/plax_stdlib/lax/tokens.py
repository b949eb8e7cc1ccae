"""Tokens: values that order side effects and carry no data.

`create_token()` makes one and `after_all(*tokens)` one that comes after all its
operands (StableHLO's `create_token` and `after_all`); their aval is the kernel's
`abstract_token` (`Tok` in Jaxprs), lowered as `!stablehlo.token`. Tokens may be
`jit` arguments and results; eagerly a token is a `plax.extend.core.Token`. They
have no tangent and no batch dimension: under differentiation and vmap they pass
through as they are.
"""
from __future__ import annotations

from plax.extend.constructors import describe
from plax.extend.core import AbstractToken, Primitive, abstract_token
from plax.extend.mlir import hlo

create_token_p = Primitive("lax.create_token")
create_token_p.def_abstract_eval(lambda: abstract_token)
create_token_p.def_lowering(lambda ctx: hlo.create_token())
create_token_p.define_rule("jvp", lambda primals, tangents: (create_token_p.bind(), None))
create_token_p.define_rule("batching", lambda axis_data, args, dims: (create_token_p.bind(),
                                                                       None))


def create_token(_=None):
    """Makes a new token: a value without data that orders side-effecting
    operations (`psend`, `precv`, `after_all`) that take and return tokens.

    Args:
        _: ignored (older code passed a value to order the token after it).

    Returns:
        A token.

    Examples:
        >>> from plax import lax
        >>> token = lax.create_token()
        >>> lax.after_all(token, lax.create_token()) is not None
        True
    """
    return create_token_p.bind()


def _after_all_abstract_eval(*avals):
    for i, aval in enumerate(avals):
        if not isinstance(aval, AbstractToken):
            raise TypeError(f"Arguments to after_all must be tokens; operand {i} is "
                            f"{describe(aval)}")
    return abstract_token


after_all_p = Primitive("lax.after_all")
after_all_p.def_abstract_eval(_after_all_abstract_eval)
after_all_p.def_lowering(lambda ctx, *tokens: hlo.after_all(list(tokens)))
after_all_p.define_rule("jvp", lambda primals, tangents: (after_all_p.bind(*primals), None))
after_all_p.define_rule("batching", lambda axis_data, args, dims: (after_all_p.bind(*args),
                                                                    None))


def after_all(*operands):
    """Makes a token ordered after every token given: joins several chains of
    ordered operations.

    Args:
        *operands: tokens.

    Returns:
        A token.

    Raises:
        TypeError: an operand is not a token.

    Examples:
        >>> from plax import lax
        >>> joined = lax.after_all(lax.create_token(), lax.create_token())
        >>> type(joined).__name__
        'Token'
    """
    return after_all_p.bind(*operands)
