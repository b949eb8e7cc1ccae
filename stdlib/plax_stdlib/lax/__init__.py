"""`plax.lax`: the primitive operations, with `jax.lax`'s names and signatures.

Unlike `plax.numpy`, lax does not promote dtypes or broadcast ranks: operands of
binary operations share a dtype (Python scalars adopt it) and a shape (rank-0
operands and size-1 dimensions broadcast).
"""
# Defines `name_p` (the value names of `ad_checkpoint.checkpoint_name`), so that
# loading the standard primitives loads all of them.
from plax_stdlib.lax import naming as _naming  # noqa: E402, F401
from plax_stdlib.lax.barrier import (
    optimization_barrier as optimization_barrier,
    optimization_barrier_p as optimization_barrier_p,
)
from plax_stdlib.lax.bitwise import (
    and_p as and_p,
    bitwise_and as bitwise_and,
    bitwise_not as bitwise_not,
    bitwise_or as bitwise_or,
    bitwise_xor as bitwise_xor,
    clz as clz,
    clz_p as clz_p,
    not_p as not_p,
    or_p as or_p,
    population_count as population_count,
    population_count_p as population_count_p,
    shift_left as shift_left,
    shift_left_p as shift_left_p,
    shift_right_arithmetic as shift_right_arithmetic,
    shift_right_arithmetic_p as shift_right_arithmetic_p,
    shift_right_logical as shift_right_logical,
    shift_right_logical_p as shift_right_logical_p,
    xor_p as xor_p,
)
from plax_stdlib.lax.comparison import (
    clamp as clamp,
    clamp_p as clamp_p,
    eq as eq,
    eq_p as eq_p,
    ge as ge,
    ge_p as ge_p,
    gt as gt,
    gt_p as gt_p,
    le as le,
    le_p as le_p,
    lt as lt,
    lt_p as lt_p,
    ne as ne,
    ne_p as ne_p,
    select as select,
    select_n as select_n,
    select_n_p as select_n_p,
)
from plax_stdlib.lax.compositions import (
    broadcast_like as broadcast_like,
    broadcast_shapes as broadcast_shapes,
    broadcast_to_rank as broadcast_to_rank,
    collapse as collapse,
    ConvGeneralDilatedDimensionNumbers as ConvGeneralDilatedDimensionNumbers,
    DotDimensionNumbers as DotDimensionNumbers,
    dtype as dtype,
    empty as empty,
    index_take as index_take,
    PrecisionLike as PrecisionLike,
    reciprocal as reciprocal,
    shape_as_value as shape_as_value,
)
from plax_stdlib.lax.control_flow import (
    associative_scan as associative_scan,
    cond as cond,
    cond_p as cond_p,
    custom_linear_solve as custom_linear_solve,
    custom_root as custom_root,
    fori_loop as fori_loop,
    linear_solve_p as linear_solve_p,
    map as map,
    scan as scan,
    scan_p as scan_p,
    switch as switch,
    while_loop as while_loop,
    while_p as while_p,
)
from plax_stdlib.lax.conversion import (
    bitcast_convert_type as bitcast_convert_type,
    bitcast_convert_type_p as bitcast_convert_type_p,
    convert_element_type as convert_element_type,
    convert_element_type_p as convert_element_type_p,
    copy_p as copy_p,
    stop_gradient as stop_gradient,
    stop_gradient_p as stop_gradient_p,
)
from plax_stdlib.lax.convolution import (
    ConvDimensionNumbers as ConvDimensionNumbers,
    conv as conv,
    conv_dimension_numbers as conv_dimension_numbers,
    conv_general_dilated as conv_general_dilated,
    conv_general_dilated_p as conv_general_dilated_p,
    conv_general_dilated_patches as conv_general_dilated_patches,
    conv_general_permutations as conv_general_permutations,
    conv_general_shape_tuple as conv_general_shape_tuple,
    conv_shape_tuple as conv_shape_tuple,
    conv_transpose as conv_transpose,
    conv_transpose_shape_tuple as conv_transpose_shape_tuple,
    conv_with_general_padding as conv_with_general_padding,
)
from plax_stdlib.lax.creation import (
    broadcasted_iota as broadcasted_iota,
    full as full,
    full_like as full_like,
    iota as iota,
    iota_p as iota_p,
    zeros_like_array as zeros_like_array,
)
from plax_stdlib.lax.cumulative import (
    cumlogsumexp as cumlogsumexp,
    cumlogsumexp_p as cumlogsumexp_p,
    cummax as cummax,
    cummax_p as cummax_p,
    cummin as cummin,
    cummin_p as cummin_p,
    cumprod as cumprod,
    cumprod_p as cumprod_p,
    cumsum as cumsum,
    cumsum_p as cumsum_p,
)
from plax_stdlib.lax.dot_algorithm import (
    DotAlgorithm as DotAlgorithm,
    DotAlgorithmPreset as DotAlgorithmPreset,
)
from plax_stdlib.lax.dot_general import (
    Precision as Precision,
    batch_matmul as batch_matmul,
    dot as dot,
    dot_general as dot_general,
    dot_general_p as dot_general_p,
)
from plax_stdlib.lax.elementwise import (
    RoundingMethod as RoundingMethod,
    abs as abs,
    abs_p as abs_p,
    acos as acos,
    acos_p as acos_p,
    acosh as acosh,
    acosh_p as acosh_p,
    add as add,
    add_any as add_any,
    add_any_p as add_any_p,
    add_p as add_p,
    asin as asin,
    asin_p as asin_p,
    asinh as asinh,
    asinh_p as asinh_p,
    atan as atan,
    atan2 as atan2,
    atan2_p as atan2_p,
    atan_p as atan_p,
    atanh as atanh,
    atanh_p as atanh_p,
    cbrt as cbrt,
    cbrt_p as cbrt_p,
    ceil as ceil,
    ceil_p as ceil_p,
    complex as complex,
    complex_p as complex_p,
    conj as conj,
    conj_p as conj_p,
    cos as cos,
    cos_p as cos_p,
    cosh as cosh,
    cosh_p as cosh_p,
    digamma as digamma,
    digamma_p as digamma_p,
    div as div,
    div_p as div_p,
    erf as erf,
    erf_inv as erf_inv,
    erf_inv_p as erf_inv_p,
    erf_p as erf_p,
    erfc as erfc,
    erfc_p as erfc_p,
    exp as exp,
    exp2 as exp2,
    exp2_p as exp2_p,
    exp_p as exp_p,
    expm1 as expm1,
    expm1_p as expm1_p,
    floor as floor,
    floor_p as floor_p,
    imag as imag,
    imag_p as imag_p,
    integer_pow as integer_pow,
    integer_pow_p as integer_pow_p,
    is_finite as is_finite,
    is_finite_p as is_finite_p,
    lgamma as lgamma,
    lgamma_p as lgamma_p,
    log as log,
    log1p as log1p,
    log1p_p as log1p_p,
    log_p as log_p,
    logistic as logistic,
    logistic_p as logistic_p,
    max as max,
    max_p as max_p,
    min as min,
    min_p as min_p,
    mul as mul,
    mul_p as mul_p,
    neg as neg,
    neg_p as neg_p,
    nextafter as nextafter,
    nextafter_p as nextafter_p,
    polygamma as polygamma,
    polygamma_p as polygamma_p,
    pow as pow,
    pow_p as pow_p,
    real as real,
    real_p as real_p,
    rem as rem,
    rem_p as rem_p,
    round as round,
    round_p as round_p,
    rsqrt as rsqrt,
    rsqrt_p as rsqrt_p,
    sign as sign,
    sign_p as sign_p,
    sin as sin,
    sin_p as sin_p,
    sinh as sinh,
    sinh_p as sinh_p,
    sqrt as sqrt,
    sqrt_p as sqrt_p,
    square as square,
    square_p as square_p,
    sub as sub,
    sub_p as sub_p,
    tan as tan,
    tan_p as tan_p,
    tanh as tanh,
    tanh_p as tanh_p,
)
from plax_stdlib.lax.fourier import FftType as FftType, fft_p as fft_p
from plax_stdlib.lax.general_reduce import reduce as reduce, reduce_p as reduce_p
from plax_stdlib.lax.gathers import (
    GatherDimensionNumbers as GatherDimensionNumbers,
    GatherScatterMode as GatherScatterMode,
    gather as gather,
    gather_p as gather_p,
)
from plax_stdlib.lax.dimensions import (
    dimension_as_value as dimension_as_value,
    dimension_as_value_p as dimension_as_value_p,
)
from plax_stdlib.lax.local_convolution import (
    conv_general_dilated_local as conv_general_dilated_local,
)
from plax_stdlib.lax.mulhi import mulhi as mulhi, mulhi_p as mulhi_p
from plax_stdlib.lax.parallel import (
    all_gather as all_gather,
    all_gather_invariant_p as all_gather_invariant_p,
    all_gather_p as all_gather_p,
    all_to_all as all_to_all,
    all_to_all_p as all_to_all_p,
    axis_index as axis_index,
    axis_index_p as axis_index_p,
    axis_size as axis_size,
    pbroadcast as pbroadcast,
    pcast as pcast,
    pbroadcast_p as pbroadcast_p,
    pmax as pmax,
    pmax_p as pmax_p,
    pmean as pmean,
    pmin as pmin,
    pmin_p as pmin_p,
    ppermute as ppermute,
    ppermute_p as ppermute_p,
    pshuffle as pshuffle,
    psum as psum,
    psum_invariant_p as psum_invariant_p,
    psum_p as psum_p,
    psum_scatter as psum_scatter,
    pswapaxes as pswapaxes,
    pvary as pvary,
    pvary_p as pvary_p,
    reduce_scatter_p as reduce_scatter_p,
)
from plax_stdlib.lax.reductions import (
    argmax as argmax,
    argmax_p as argmax_p,
    argmin as argmin,
    argmin_p as argmin_p,
    reduce_and as reduce_and,
    reduce_and_p as reduce_and_p,
    reduce_max as reduce_max,
    reduce_max_p as reduce_max_p,
    reduce_min as reduce_min,
    reduce_min_p as reduce_min_p,
    reduce_or as reduce_or,
    reduce_or_p as reduce_or_p,
    reduce_prod as reduce_prod,
    reduce_prod_p as reduce_prod_p,
    reduce_sum as reduce_sum,
    reduce_sum_p as reduce_sum_p,
    reduce_xor as reduce_xor,
    reduce_xor_p as reduce_xor_p,
)
from plax_stdlib.lax.platform_dependent import platform_dependent as platform_dependent
from plax_stdlib.lax.ragged_dot import (
    ragged_dot as ragged_dot,
    ragged_dot_general as ragged_dot_general,
    RaggedDotDimensionNumbers as RaggedDotDimensionNumbers,
)
from plax_stdlib.lax.ragged_all_to_all import (
    ragged_all_to_all as ragged_all_to_all,
    ragged_all_to_all_p as ragged_all_to_all_p,
)
from plax_stdlib.lax.reduce_precision import (
    reduce_precision as reduce_precision,
    reduce_precision_p as reduce_precision_p,
)
from plax_stdlib.lax.reduce_window import reduce_window_p as reduce_window_p
from plax_stdlib.lax.rng_bit_generator import (
    RandomAlgorithm as RandomAlgorithm,
    rng_bit_generator as rng_bit_generator,
    rng_bit_generator_p as rng_bit_generator_p,
)
from plax_stdlib.lax.scaled_dot import scaled_dot as scaled_dot
from plax_stdlib.lax.scatter_variants import (
    scatter_apply as scatter_apply,
    scatter_sub as scatter_sub,
    scatter_sub_p as scatter_sub_p,
)
from plax_stdlib.lax.scatters import (
    ScatterDimensionNumbers as ScatterDimensionNumbers,
    scatter as scatter,
    scatter_add as scatter_add,
    scatter_add_p as scatter_add_p,
    scatter_max as scatter_max,
    scatter_max_p as scatter_max_p,
    scatter_min as scatter_min,
    scatter_min_p as scatter_min_p,
    scatter_mul as scatter_mul,
    scatter_mul_p as scatter_mul_p,
    scatter_p as scatter_p,
)
from plax_stdlib.lax.send_recv import (
    precv as precv,
    precv_p as precv_p,
    psend as psend,
    psend_p as psend_p,
)
from plax_stdlib.lax.shape_ops import (
    broadcast as broadcast,
    broadcast_in_dim as broadcast_in_dim,
    broadcast_in_dim_p as broadcast_in_dim_p,
    concatenate as concatenate,
    concatenate_p as concatenate_p,
    expand_dims as expand_dims,
    pad as pad,
    pad_p as pad_p,
    reshape as reshape,
    reshape_p as reshape_p,
    rev as rev,
    rev_p as rev_p,
    squeeze as squeeze,
    squeeze_p as squeeze_p,
    transpose as transpose,
    transpose_p as transpose_p,
)
from plax_stdlib.lax.slicing import (
    dynamic_slice as dynamic_slice,
    dynamic_slice_in_dim as dynamic_slice_in_dim,
    dynamic_slice_p as dynamic_slice_p,
    dynamic_update_slice as dynamic_update_slice,
    dynamic_update_slice_in_dim as dynamic_update_slice_in_dim,
    dynamic_update_slice_p as dynamic_update_slice_p,
    index_in_dim as index_in_dim,
    slice as slice,
    slice_in_dim as slice_in_dim,
    slice_p as slice_p,
)
from plax_stdlib.lax.incomplete_beta import (
    betainc as betainc,
    regularized_incomplete_beta_p as regularized_incomplete_beta_p,
)
from plax_stdlib.lax.incomplete_gamma import (
    igamma as igamma,
    igamma_grad_a as igamma_grad_a,
    igamma_grad_a_p as igamma_grad_a_p,
    igamma_p as igamma_p,
    igammac as igammac,
    igammac_p as igammac_p,
    random_gamma_grad as random_gamma_grad,
)
from plax_stdlib.lax.special import (
    bessel_i0e as bessel_i0e,
    bessel_i0e_p as bessel_i0e_p,
    bessel_i1e as bessel_i1e,
    bessel_i1e_p as bessel_i1e_p,
    zeta as zeta,
    zeta_p as zeta_p,
)
from plax_stdlib.lax.sorting import sort as sort, sort_key_val as sort_key_val, sort_p as sort_p
from plax_stdlib.lax.stage import stage as stage, stage_p as stage_p
from plax_stdlib.lax.stacking import (
    split as split,
    split_p as split_p,
    stack as stack,
    stack_p as stack_p,
    tile as tile,
    tile_p as tile_p,
    unstack as unstack,
    unstack_p as unstack_p,
)
from plax_stdlib.lax.top_k import (
    approx_max_k as approx_max_k,
    approx_min_k as approx_min_k,
    approx_top_k_p as approx_top_k_p,
    top_k as top_k,
    top_k_p as top_k_p,
)
from plax_stdlib.lax.total_order import eq_to_p as eq_to_p, le_to_p as le_to_p, lt_to_p as lt_to_p
from plax_stdlib.lax.windowed_reductions import (
    reduce_window as reduce_window,
    reduce_window_max as reduce_window_max,
    reduce_window_max_p as reduce_window_max_p,
    reduce_window_min as reduce_window_min,
    reduce_window_min_p as reduce_window_min_p,
    reduce_window_sum as reduce_window_sum,
    reduce_window_sum_p as reduce_window_sum_p,
    select_and_gather_add as select_and_gather_add,
    select_and_gather_add_p as select_and_gather_add_p,
    select_and_scatter_add as select_and_scatter_add,
    select_and_scatter_add_p as select_and_scatter_add_p,
)
from plax_stdlib.lax.accuracy import AccuracyMode as AccuracyMode, Tolerance as Tolerance
from plax_stdlib.lax.composite import composite as composite, composite_p as composite_p
from plax_stdlib.lax.dce_sink import dce_sink as dce_sink, dce_sink_p as dce_sink_p
from plax_stdlib.lax.select_and_scatter import select_and_scatter_p as select_and_scatter_p
from plax_stdlib.lax.tokens import (
    after_all as after_all,
    after_all_p as after_all_p,
    create_token as create_token,
    create_token_p as create_token_p,
)
from plax_stdlib.lax.rng_uniform import rng_uniform as rng_uniform, rng_uniform_p as rng_uniform_p
from plax_stdlib.lax.windows import padtype_to_pads as padtype_to_pads
from plax_stdlib.lax.windows import reduce_window_shape_tuple as reduce_window_shape_tuple


# The linear-algebra primitives live in their own public module, `plax.lax.linalg`.
from plax_stdlib.lax import linalg as linalg  # noqa: E402
from plax.extend.registry import contributed as _contributed  # noqa: E402
from plax.extend.registry import contributed_names as _contributed_names  # noqa: E402
from plax_stdlib import jax_jits as _jax_jits  # noqa: E402
from plax_stdlib.lax import fourier as _fourier, slicing as _slicing  # noqa: E402

# The functions JAX jits (jax_jits.py), made on first use: `plax.jit` is a layer above.
_JITTED_ON_USE = {fun.__name__: fun for fun in (_fourier.fft, _slicing.dynamic_index_in_dim,
                                                _slicing.dynamic_update_index_in_dim)}


def __getattr__(name: str):
    if name in _JITTED_ON_USE:
        jitted = globals()[name] = _jax_jits.jitted(_JITTED_ON_USE[name], "lax")
        return jitted
    # Names other packages contribute to `plax.lax` (`with_sharding_constraint` and
    # `sharding_constraint_p` from plax-sharding), through `plax.names` entry points `lax.<name>`.
    if name.startswith("__"):
        raise AttributeError(name)
    return _contributed("lax", name)


def __dir__():
    return sorted(set(globals()) | set(_JITTED_ON_USE) | set(_contributed_names("lax")))



# Errors raised below a public function are shown from the caller (plax.errors).
from plax.extend.traceback_util import api_boundaries as _api_boundaries  # noqa: E402

_api_boundaries(globals())
