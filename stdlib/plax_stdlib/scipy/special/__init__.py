"""`plax.scipy.special`: SciPy's special functions on plax arrays, with
`jax.scipy.special`'s names, dtypes and edge conventions."""
from plax_stdlib.scipy.special.bessel import (
    bessel_jn as bessel_jn,
    i0 as i0,
    i0e as i0e,
    i1 as i1,
    i1e as i1e,
)
from plax_stdlib.scipy.special.error_functions import (
    dawsn as dawsn,
    erf as erf,
    erfc as erfc,
    erfcx as erfcx,
    erfinv as erfinv,
)
from plax_stdlib.scipy.special.faddeeva import wofz as wofz
from plax_stdlib.scipy.special.gamma_functions import (
    bernoulli as bernoulli,
    beta as beta,
    betainc as betainc,
    betaln as betaln,
    comb as comb,
    digamma as digamma,
    factorial as factorial,
    gamma as gamma,
    gammainc as gammainc,
    gammaincc as gammaincc,
    gammaln as gammaln,
    gammasgn as gammasgn,
    loggamma as loggamma,
    multigammaln as multigammaln,
    poch as poch,
    polygamma as polygamma,
    zeta as zeta,
)
from plax_stdlib.scipy.special.confluent_hypergeometric import hyp1f1 as hyp1f1
from plax_stdlib.scipy.special.gauss_hypergeometric import hyp2f1 as hyp2f1
from plax_stdlib.scipy.special.integrals import (
    exp1 as exp1,
    expi as expi,
    expn as expn,
    fresnel as fresnel,
    sici as sici,
    spence as spence,
)
from plax_stdlib.scipy.special.logarithms import (
    boxcox as boxcox,
    boxcox1p as boxcox1p,
    entr as entr,
    expit as expit,
    kl_div as kl_div,
    log_softmax as log_softmax,
    logit as logit,
    logsumexp as logsumexp,
    rel_entr as rel_entr,
    softmax as softmax,
    xlog1py as xlog1py,
    xlogy as xlogy,
)
from plax_stdlib.scipy.special.normal_distribution import (
    log_ndtr as log_ndtr,
    ndtr as ndtr,
    ndtri as ndtri,
)
from plax_stdlib.scipy.special.owens import owens_t as owens_t
from plax_stdlib.scipy.special.spherical_harmonics import sph_harm_y as sph_harm_y
