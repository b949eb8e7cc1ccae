"""`plax.scipy.signal`: SciPy's signal processing on plax arrays, with
`jax.scipy.signal`'s names and semantics: convolution and correlation
(`convolution`), detrending, short-time Fourier transforms and spectral density
estimates (`spectral`)."""
from plax_stdlib.scipy.signal.convolution import (
    convolve as convolve,
    convolve2d as convolve2d,
    correlate as correlate,
    correlate2d as correlate2d,
    fftconvolve as fftconvolve,
)
from plax_stdlib.scipy.signal.spectral import (
    csd as csd,
    detrend as detrend,
    istft as istft,
    stft as stft,
    welch as welch,
)
