"""`plax.nn`: activation functions, the softmax family, attention, `one_hot`,
`standardize`, block-scaled matmuls and parameter initializers, with `jax.nn`'s names
and semantics."""
from plax_stdlib.nn import initializers as initializers
from plax_stdlib.nn.activations import (
    celu as celu,
    elu as elu,
    gelu as gelu,
    glu as glu,
    hard_sigmoid as hard_sigmoid,
    hard_silu as hard_silu,
    hard_swish as hard_swish,
    hard_tanh as hard_tanh,
    identity as identity,
    leaky_relu as leaky_relu,
    log1mexp as log1mexp,
    log_sigmoid as log_sigmoid,
    mish as mish,
    relu as relu,
    relu6 as relu6,
    selu as selu,
    sigmoid as sigmoid,
    silu as silu,
    soft_sign as soft_sign,
    softplus as softplus,
    sparse_plus as sparse_plus,
    sparse_sigmoid as sparse_sigmoid,
    squareplus as squareplus,
    swish as swish,
    tanh as tanh,
)
from plax_stdlib.nn.attention import dot_product_attention as dot_product_attention
from plax_stdlib.nn.normalization import one_hot as one_hot, standardize as standardize
from plax_stdlib.nn.scaled_matmul import (
    get_scaled_dot_general_config as get_scaled_dot_general_config,
    scaled_dot_general as scaled_dot_general,
    scaled_matmul as scaled_matmul,
)
from plax_stdlib.nn.softmax_family import (
    log_softmax as log_softmax,
    logmeanexp as logmeanexp,
    logsumexp as logsumexp,
    softmax as softmax,
)


# Errors raised below a public function are shown from the caller (plax.errors).
from plax.extend.traceback_util import api_boundaries as _api_boundaries  # noqa: E402

_api_boundaries(globals())
