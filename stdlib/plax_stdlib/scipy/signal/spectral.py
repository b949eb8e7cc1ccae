"""Spectral analysis with SciPy's API and `jax.scipy.signal`'s semantics: detrend, the
short-time Fourier transform and its inverse (stft, istft), and Welch's estimates of
power and cross power spectral densities (welch, csd).

The arithmetic is JAX's, operation for operation, so that results are bit-identical
to JAX's under `jit` on the CPU: segments are cut with static indices, detrended,
windowed and transformed along the last axis, and the inverse sums the overlapping
frames with one reduction. The default 'hann' window is sin(pi k / n)**2 computed in
the default float type; other named windows come from `scipy.signal.get_window`
(SciPy is then needed). Where JAX 0.10.2 departs from SciPy by failing or by
detrending the wrong axis (a callable `detrend`, an odd `nperseg` or an explicit
`noverlap=0` in `istft`), plax follows SciPy.
"""
from __future__ import annotations

import operator
import warnings
from typing import Callable

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

_TRENDS = ("linear", "constant")


def _static_int(value, what: str) -> int:
    """A size parameter as a Python int (a traced one is a ConcretizationTypeError)."""
    return int(util.concrete_or_error(value, f"{what} must be static"))


def _to_complex(x):
    """`x` converted to the complex dtype wide enough for it (weak type kept)."""
    return util.convert(x, dtypes.to_complex_dtype(util.dtype_of(x)), util.is_weak(x))


# --- detrend -------------------------------------------------------------------------------

def _minus_line(segment):
    """`segment` (samples along axis 0) less its least-squares line, fitted against the
    design matrix [1, k/n] (k = 1..n) as JAX fits it."""
    n, dtype = segment.shape[0], segment.dtype
    design = jnp.vstack([jnp.ones(n, dtype=dtype),
                         jnp.arange(1, n + 1, dtype=dtype) / np.asarray(n, dtype)]).T
    coefficients = jnp.linalg.lstsq(design, segment)[0]
    return segment - jnp.matmul(design, coefficients, precision=lax.Precision.HIGHEST)


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):
    """`data` less its trend along `axis`: its mean ('constant'), or its least-squares
    line ('linear'), fitted separately between the breakpoints `bp`.

    Follows `scipy.signal.detrend` (and JAX's, which accepts no `overwrite_data`).

    Args:
        data: an array (or array-like); integers become the default float type.
        axis: the axis along which to detrend.
        type: 'linear' or 'constant'.
        bp: breakpoint indices (static): with 'linear', a line is fitted to each
            piece between consecutive breakpoints.
        overwrite_data: unsupported; must be None.

    Returns:
        The detrended array, of `data`'s shape and inexact dtype.

    Raises:
        ValueError: another `type`, or breakpoints outside `[0, data.shape[axis]]`.
        NotImplementedError: `overwrite_data` given.

    Examples:
        >>> from plax.scipy import signal
        >>> print(signal.detrend(jnp.array([1., 2., 4., 4.]), type="constant"))
        [-1.75 -0.75  1.25  1.25]
    """
    if overwrite_data is not None:
        raise NotImplementedError("detrend: the overwrite_data argument is not supported")
    if type not in _TRENDS:
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    data, = util.promote_dtypes_inexact(jnp.asarray(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    n = data.shape[axis]
    edges = np.unique(np.r_[0, bp, n])  # static: sorted, each once
    if edges[0] < 0 or edges[-1] > n:
        raise ValueError(f"detrend: breakpoints must lie in [0, {n}] (the length of axis "
                         f"{axis}), got {bp!r}")
    moved = jnp.moveaxis(data, axis, 0)
    flat = moved.reshape(n, -1)
    if len(edges) > 1:
        flat = jnp.concatenate([_minus_line(flat[lo:hi]) for lo, hi in zip(edges, edges[1:])])
    return jnp.moveaxis(flat.reshape(moved.shape), 0, axis)


# --- windows and segments ------------------------------------------------------------------

def _named_window(window, n: int, dtype):
    """The window `window` names ('hann', or anything `scipy.signal.get_window` takes)
    of length n, in `dtype`."""
    if isinstance(window, str) and window == "hann":
        win = jnp.array([1.0]) if n == 1 else jnp.sin(
            jnp.linspace(0, np.pi, n, endpoint=False)) ** 2
        return win.astype(dtype)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"the window {window!r} needs SciPy (scipy.signal.get_window); "
                          "only 'hann' and arrays work without it") from err
    return jnp.asarray(get_window(window, n), dtype=dtype)


def _window(window, nperseg: int | None, length: int, dtype):
    """The window as an array of `dtype` and the segment length: a named window is
    `nperseg` long (the signal's `length` by default, and at most); an array window
    fixes the length, which `nperseg` must then equal."""
    if isinstance(window, (str, tuple)):
        n = length if nperseg is None else nperseg
        if n > length:
            warnings.warn(f"nperseg={n} is greater than the signal's length {length}; "
                          f"using nperseg={length}", stacklevel=4)
            n = length
        return _named_window(window, n, dtype), n
    win = jnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else nperseg
    if win.ndim != 1:
        raise ValueError(f"window must be 1-D, got shape {win.shape}")
    if length < win.size:
        raise ValueError(f"window of length {win.size} is longer than the signal "
                         f"({length} samples)")
    if n != win.size:
        raise ValueError(f"nperseg={n} differs from the length of the window ({win.size})")
    return win, n


def _pad_last(mode: str, **options) -> Callable:
    """An extension of the last axis by n samples at each end, as `jnp.pad` with
    `mode` makes it."""
    def extend(x, n):
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **options)
    return extend


def _odd_extension(x, n: int):
    """The last axis extended by n samples at each end, point-reflected about the end
    samples (2 x[0] - x[k] before, 2 x[-1] - x[-1-k] after). n = nperseg // 2 is less
    than the signal's length, which bounds nperseg."""
    if n < 1:
        return x
    before = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    after = 2 * x[..., -1:] - jnp.flip(x[..., -(n + 1):-1], -1)
    return jnp.concatenate([before, x, after], axis=-1)


_EXTENSIONS = {"even": _pad_last("reflect"), "odd": _odd_extension,
               "constant": _pad_last("edge"), "zeros": _pad_last("constant", constant_values=0.0),
               None: lambda x, n: x}


def _detrender(how, axis: int) -> Callable:
    """The detrending of segments (samples along the last axis) that `how` asks for:
    a trend type, a function (which, as in SciPy, sees the samples along `axis` as
    given), or none."""
    if isinstance(how, str):
        return lambda segments: detrend(segments, axis=-1, type=how)
    if callable(how):
        if axis == -1:
            return how
        return lambda segments: jnp.moveaxis(how(jnp.moveaxis(segments, -1, axis)), axis, -1)
    if not how:
        return lambda segments: segments
    raise ValueError(f"detrend must be a trend type, a function or False, got {how!r}")


def _spectra(x, win, detrend_segments: Callable, nperseg: int, noverlap: int, nfft: int,
             twosided: bool):
    """The DFTs of the detrended, windowed segments of `x` (samples along the last
    axis): shape (..., segments, frequencies)."""
    starts = np.arange(0, x.shape[-1] - nperseg + 1, nperseg - noverlap)
    segments = detrend_segments(x[..., starts[:, None] + np.arange(nperseg)])
    if jnp.iscomplexobj(win):
        segments = _to_complex(segments)
    segments = win * segments
    return jnp.fft.fft(segments, n=nfft) if twosided else jnp.fft.rfft(segments.real, n=nfft)


# --- the short-time spectra ----------------------------------------------------------------

def _signals(x, y, axis, mode: str):
    """The signals checked and promoted to inexact, with the time axis as given (for a
    `detrend` function, as SciPy) and canonical, and the broadcast other axes."""
    util.check_arraylike("spectral_helper", *([x] if y is None else [x, y]))
    given_axis = operator.index(util.concrete_or_error(axis, "axis must be static"))
    axis = util.canonicalize_axis(given_axis, len(util.shape_of(x)))
    if y is None:
        x, = util.promote_dtypes_inexact(x)
        return x, None, given_axis, axis, tuple(d for i, d in enumerate(x.shape) if i != axis)
    if mode != "psd":
        raise ValueError("a second signal y is only taken with mode 'psd'")
    x, y = util.promote_dtypes_inexact(x, y)
    if x.ndim != y.ndim:
        raise ValueError(f"x and y must have the same rank, got shapes {x.shape} and {y.shape}")
    try:
        outer_shape = util.broadcast_shapes(*(
            tuple(d for i, d in enumerate(a.shape) if i != axis) for a in (x, y)))
    except ValueError as err:
        raise ValueError(f"x and y cannot be broadcast together: shapes {x.shape} and "
                         f"{y.shape} along axis {axis}") from err
    return x, y, given_axis, axis, outer_shape


def _extended(signal, boundary, padded: bool, nperseg: int, step: int):
    """`signal` (samples along the last axis) extended at both ends by `boundary`, then
    (`padded`) followed by zeros up to a whole number of segments."""
    signal = _EXTENSIONS[boundary](signal, nperseg // 2)
    if not padded:
        return signal
    extra = (-(signal.shape[-1] - nperseg) % step) % nperseg
    return jnp.concatenate([signal, jnp.zeros_like(signal, shape=(*signal.shape[:-1], extra))],
                           -1)


def _scale(win, fs, scaling: str, mode: str):
    """The factor of the spectra (complex): per unit frequency ('density') or per
    frequency bin ('spectrum'), its square root for the STFT."""
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"scaling must be 'density' or 'spectrum', got {scaling!r}")
    return _to_complex(jnp.sqrt(scale) if mode == "stft" else scale)


def _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend_how,
                     return_onesided: bool, scaling: str, axis: int, mode: str,
                     boundary=None, padded: bool = False):
    """(frequencies, segment times, spectra) of `x`, as SciPy's helper of the same name
    computes them: the STFT (mode 'stft'), or the periodograms of `x` (y None) or the
    cross periodograms of `x` and `y` (mode 'psd'), segments along the last axis of
    the spectra and frequencies along `axis`."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"mode must be 'psd' or 'stft', got {mode!r}")
    if boundary not in _EXTENSIONS:
        raise ValueError(f"boundary must be one of {list(_EXTENSIONS)}, got {boundary!r}")
    x, y, given_axis, axis, outer_shape = _signals(x, y, axis, mode)
    result_dtype = dtypes.to_complex_dtype(x.dtype)
    freq_dtype = dtypes.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg")
        if nperseg < 1:
            raise ValueError(f"nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _window(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft")
    if x.size == 0 or (y is not None and y.size == 0):
        length = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
        shape = outer_shape[:axis] + (length,) + outer_shape[axis:]
        return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
                jnp.zeros(shape, result_dtype))
    signals = [jnp.moveaxis(x, axis, -1)]
    if y is not None:
        signals = list(_zero_padded_to_one_length(signals[0], jnp.moveaxis(y, axis, -1)))
    if nfft < nperseg:
        raise ValueError(f"nfft ({nfft}) must be at least nperseg ({nperseg})")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap ({noverlap}) must be less than nperseg ({nperseg})")
    signals = [_extended(s, boundary, padded, nperseg, nperseg - noverlap) for s in signals]
    scale = _scale(win, fs, scaling, mode)
    twosided = not return_onesided
    if return_onesided and any(jnp.iscomplexobj(s) for s in signals):
        twosided = True
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
    freqs = (jnp.fft.fftfreq if twosided else jnp.fft.rfftfreq)(nfft, 1 / fs, dtype=freq_dtype)
    spectra = [_spectra(s, win, _detrender(detrend_how, given_axis), nperseg, noverlap, nfft,
                        twosided) for s in signals]
    if mode == "psd":  # the (cross) periodograms
        spectra[0] = jnp.conjugate(spectra[0]) * spectra[-1]
    result = spectra[0] * scale
    if mode == "psd" and not twosided:  # the folded negative frequencies count twice
        result = result.at[..., 1:None if nfft % 2 else -1].multiply(2)
    time = jnp.arange(nperseg / 2, signals[0].shape[-1] - nperseg / 2 + 1, nperseg - noverlap,
                      dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    return freqs, time, jnp.moveaxis(result, -1, axis)


def _zero_padded_to_one_length(x, y):
    """`x` and `y` (samples along the last axis) with zeros appended to the shorter."""
    def padded(a, length):
        extra = length - a.shape[-1]
        return jnp.concatenate([a, jnp.zeros_like(x, shape=(*a.shape[:-1], extra))], -1)
    length = max(x.shape[-1], y.shape[-1])
    return (padded(x, length) if x.shape[-1] < length else x,
            padded(y, length) if y.shape[-1] < length else y)


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend=False, return_onesided: bool = True,
         boundary: str | None = "zeros", padded: bool = True, axis: int = -1):
    """The short-time Fourier transform of `x` along `axis`.

    Follows `scipy.signal.stft` (JAX's): the signal is extended at both ends by
    `boundary`, zero-padded to whole segments (`padded`), cut into segments of
    `nperseg` samples overlapping by `noverlap`, each detrended, windowed and
    transformed, scaled so that a constant signal's spectrum is its value.

    Args:
        x: the signal (integers become the default float type).
        fs: the sampling frequency.
        window: a window name ('hann'; others need SciPy), a `(name, parameter...)`
            tuple, or an array (which sets `nperseg`).
        nperseg: samples per segment (at most the signal's length).
        noverlap: samples shared by consecutive segments (`nperseg // 2`).
        nfft: the DFT length (`nperseg`; longer zero-pads each segment).
        detrend: False, 'constant', 'linear', or a function of the segments.
        return_onesided: for real signals, only the non-negative frequencies.
        boundary: 'zeros', 'even', 'odd', 'constant' or None.
        padded: zero-pad the end so that the segments cover the signal.
        axis: the time axis.

    Returns:
        `(f, t, Zxx)`: the frequencies, the segment times and the STFT (frequencies
        along `axis`, segments last).

    Raises:
        ValueError: bad sizes, a bad window, boundary or detrend.

    Examples:
        >>> from plax.scipy import signal
        >>> f, t, Zxx = signal.stft(jnp.ones(8), nperseg=4)
        >>> Zxx.shape, Zxx.dtype
        ((3, 5), dtype('complex64'))
    """
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, "spectrum", axis, "stft", boundary, padded)


def _median_bias(n: int):
    """The bias of the median of n periodograms relative to their mean (Allen et al.,
    FINDCHIRP, Phys. Rev. D 85 (2012), appendix B), in the default float type."""
    even = jnp.arange(2., n, 2)
    return 1 + jnp.sum(1. / (even + 1) - 1. / even)


def _averaged(pxy, average: str):
    """The periodograms `pxy` (segments along the last axis) averaged over segments."""
    if pxy.ndim < 2 or pxy.size == 0:
        return pxy
    if pxy.shape[-1] == 1:
        return pxy.reshape(pxy.shape[:-1])
    if average == "mean":
        return pxy.mean(axis=-1)
    if average != "median":
        raise ValueError(f'average must be "median" or "mean", got {average!r}')
    bias = _median_bias(pxy.shape[-1]).astype(pxy.dtype)
    if jnp.iscomplexobj(pxy):
        median = (jnp.median(jnp.real(pxy), axis=-1)
                  + 1j * jnp.median(jnp.imag(pxy), axis=-1))
    else:
        median = jnp.median(pxy, axis=-1)
    return median / bias


def csd(x, y, fs=1.0, window="hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend="constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean"):
    """The cross power spectral density of `x` and `y` by Welch's method: the average
    of the cross periodograms of their overlapping, windowed segments.

    Follows `scipy.signal.csd` (JAX's): `y=None` means `y = x` (JAX's way of asking
    for the real power spectral density, as `welch`); the result is complex
    otherwise.

    Args:
        x: the first signal.
        y: the second signal (of `x`'s rank; other axes broadcast), or None.
        fs: the sampling frequency.
        window: a window name, a `(name, parameter...)` tuple or an array.
        nperseg: samples per segment (the signal's length at most, and by default).
        noverlap: samples shared by consecutive segments (`nperseg // 2`).
        nfft: the DFT length (`nperseg`).
        detrend: 'constant', 'linear', False, or a function of the segments.
        return_onesided: for real signals, fold the negative frequencies in.
        scaling: 'density' (per unit frequency) or 'spectrum'.
        axis: the time axis.
        average: 'mean' or 'median' over the segments.

    Returns:
        `(f, Pxy)`: the frequencies and the cross spectral density.

    Raises:
        ValueError: bad sizes, window, scaling, detrend or average.

    Examples:
        >>> from plax.scipy import signal
        >>> f, Pxy = signal.csd(jnp.arange(8.0), jnp.ones(8), nperseg=4)
        >>> f
        Array([0.  , 0.25, 0.5 ], dtype=float32)
    """
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy + 0j
    return freqs, _averaged(pxy, average)


def welch(x, fs=1.0, window="hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend="constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean"):
    """The power spectral density of `x` by Welch's method: `csd(x, None, ...)`, real.

    Follows `scipy.signal.welch` (JAX's); the arguments are `csd`'s.

    Returns:
        `(f, Pxx)`: the frequencies and the power spectral density.

    Examples:
        >>> from plax.scipy import signal
        >>> f, Pxx = signal.welch(jnp.array([1., -1.] * 8), nperseg=8)
        >>> int(jnp.argmax(Pxx)), float(f[4])
        (4, 0.5)
    """
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, pxx.real


# --- the inverse ---------------------------------------------------------------------------

def _overlap_add(frames, step: int):
    """The frames (..., n, length) summed at offsets `step` apart, into (..., total).

    Each frame is cut into `chunks` pieces of `step` samples; piece c of every frame
    belongs at offset c * step. With the pieces grouped by c, each group followed by n
    zero pieces, and the whole read back in rows one piece shorter, row c comes out
    shifted by c pieces: one reduction over the rows sums them (JAX's sequence of
    operations, which its bits depend on)."""
    *batch, n, length = frames.shape
    chunks = -(-length // step)
    frames = jnp.pad(frames.reshape(-1, n, length), ((0, 0), (0, 0), (0, chunks * step - length)))
    groups = jnp.transpose(frames.reshape(-1, n, chunks, step), (0, 2, 1, 3))
    groups = jnp.pad(groups, ((0, 0), (0, 0), (0, n), (0, 0)))
    width = (2 * n - 1) * step
    rows = groups.reshape(groups.shape[0], -1)[:, :chunks * width].reshape(-1, chunks, width)
    total = step * (n - 1) + length
    return rows.sum(axis=1)[:, :total].reshape(*batch, total)


def _inverse_window(window, nperseg: int, dtype):
    """istft's window: named ones in the frames' dtype, arrays as given."""
    if isinstance(window, (str, tuple)):
        return _named_window(window, nperseg, dtype)
    win = jnp.asarray(window)
    if win.ndim != 1:
        raise ValueError(f"window must be 1-D, got shape {win.shape}")
    if win.shape[0] != nperseg:
        raise ValueError(f"window must have length {nperseg} (nperseg), got {win.shape[0]}")
    return win


def istft(Zxx, fs=1.0, window="hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2):
    """The inverse short-time Fourier transform: the signal whose `stft` is `Zxx`, by
    windowed overlap-add of the inverse DFTs of its segments.

    Follows `scipy.signal.istft` (JAX's, but as SciPy's where JAX 0.10.2 differs: an
    odd `nperseg` of a one-sided STFT works, and an explicit `noverlap=0` or
    `nperseg=0` is taken as given, not replaced by the default).

    Args:
        Zxx: the STFT, with frequencies along `freq_axis` and segments along
            `time_axis`.
        fs: the sampling frequency.
        window: the window `stft` used: a name, a tuple or an array.
        nperseg: samples per segment (from the number of frequencies by default).
        noverlap: samples shared by consecutive segments (`nperseg // 2`).
        nfft: the DFT length `stft` used (from the number of frequencies).
        input_onesided: `Zxx` holds only the non-negative frequencies.
        boundary: `stft` extended the signal at both ends (cut them off again).
        time_axis: the segments' axis.
        freq_axis: the frequencies' axis.

    Returns:
        `(t, x)`: the sample times and the signal (along `time_axis`, less the
        frequency axis).

    Raises:
        ValueError: `Zxx` of fewer than 2 dimensions, equal axes, bad sizes or window.

    Examples:
        >>> from plax.scipy import signal
        >>> x = jnp.array([1., 2., 3., 2., 1., 0., 1., 2.])
        >>> t, y = signal.istft(signal.stft(x, nperseg=4)[2])
        >>> bool(jnp.allclose(x, y, atol=1e-6))
        True
    """
    Zxx = util.ensure_arraylike("istft", Zxx)
    ndim = len(util.shape_of(Zxx))
    if ndim < 2:
        raise ValueError(f"istft: Zxx must have at least 2 dimensions, got shape "
                         f"{util.shape_of(Zxx)}")
    freq_axis = util.canonicalize_axis(freq_axis, ndim)
    time_axis = util.canonicalize_axis(time_axis, ndim)
    if freq_axis == time_axis:
        raise ValueError(f"istft: time_axis and freq_axis must differ, got {time_axis} for both")
    Zxx = jnp.asarray(Zxx, dtype=dtypes.to_complex_dtype(util.dtype_of(Zxx)))
    bins = Zxx.shape[freq_axis]
    default = 2 * (bins - 1) if input_onesided else bins
    nperseg = default if nperseg is None else _static_int(nperseg, "nperseg")
    if nperseg < 1:
        raise ValueError(f"nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = default + 1 if input_onesided and nperseg == default + 1 else default
    else:
        nfft = _static_int(nfft, "nfft")
    if nfft < nperseg:
        raise ValueError(f"nfft ({nfft}) must be at least nperseg ({nperseg})")
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap ({noverlap}) must be less than nperseg ({nperseg})")
    outer = tuple(i for i in range(ndim) if i not in (freq_axis, time_axis))
    Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    frames = inverse(Zxx, axis=-2, n=nfft)[..., :nperseg, :]  # (..., nperseg, segments)
    win = _inverse_window(window, nperseg, frames.dtype)
    frames = frames * win.sum()  # undoes stft's 'spectrum' scaling
    win = lax.expand_dims(win, (*range(frames.ndim - 2), frames.ndim - 1))
    step = nperseg - noverlap
    x = _overlap_add((frames * win).swapaxes(-2, -1), step)
    norm = _overlap_add(jnp.repeat(win * win, frames.shape[-1], axis=-1).swapaxes(-2, -1), step)
    if boundary:  # SciPy's cut, which leaves nothing for nperseg = 1
        x, norm = (a[..., nperseg // 2:-(nperseg // 2)] for a in (x, norm))
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = jnp.arange(x.shape[0], dtype=dtypes.finfo(x.dtype).dtype) / fs
    return time, x
