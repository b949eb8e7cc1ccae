"""Bit identity with JAX: the same jitted program on the CPU gives the same bytes.

Each case is an expression over the inputs below; both libraries run it under `jit`
with the inputs as arguments (so neither constant-folds them), plax here and JAX in one
subprocess for the whole table, and the results' raw bytes are compared. Two programs
made of the same primitives in the same order compile to the same machine code, so
a difference means plax formulates the function another way than JAX (or rounds a
constant another way). `EXPECTED_DIFFERENCES` lists the cases that still differ and
why: a new difference fails, and so does a listed one that has become identical.
"""
from __future__ import annotations

import numpy as np
from jax_differential import requires_jax, run_body, start_in_jax

pytestmark = requires_jax


def _unary(module, names, arg="x", suffix=""):
    return {f"{module}.{n}{suffix}": f"{module}.{n}({arg})" for n in names.split()}


def _methods(dist, methods, args):
    """`st.<dist>.<method>(args)`; `ppf`/`isf` take the probabilities `u` first."""
    out = {}
    for m in methods.split():
        first = "u" if m in ("ppf", "isf") else args.split(",")[0]
        rest = args.split(",", 1)[1] if "," in args else ""
        out[f"st.{dist}.{m}"] = f"st.{dist}.{m}({first}{',' + rest if rest else ''})"
    return out


CASES = {
    # jnp: elementwise functions of one float array (x spans signs, zeros, infinities,
    # NaN and extremes; p is positive; u lies in (0, 1); c is complex)
    **_unary("jnp", "abs negative sign floor ceil trunc rint round fix sqrt cbrt square "
             "reciprocal exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos "
             "arctan sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg sinc i0 "
             "signbit nan_to_num isfinite isnan spacing frexp modf"),
    **_unary("jnp", "sqrt exp log sin cos tan tanh abs angle log1p expm1 arctan arcsinh", "c",
             ".c"),
    "jnp.round.2": "jnp.round(x, 2)",
    # complex to bool: a conversion reads the real part, astype and the truth of all/any
    # as JAX's (1j converts to False, is True as astype, and is False to jnp.any)
    "lax.convert.c_to_bool": "lax.convert_element_type(c * 1j, bool)",
    "jnp.astype.c_to_bool": "(c * 1j).astype(bool)",
    "jnp.any.c": "(jnp.any(c.imag * 1j), jnp.all(c), jnp.any(x, axis=0))",
    "jnp.astype.None": "i.astype(None)",
    "jnp.nan_to_num.nan_inf": "jnp.nan_to_num(x, nan=jnp.inf, posinf=7.0)",
    "jnp.round.-1": "jnp.round(x * 1000, -1)",
    **{f"jnp.{n}": f"jnp.{n}(x, y)" for n in
       "add subtract multiply divide true_divide floor_divide remainder mod fmod power "
       "float_power arctan2 hypot logaddexp logaddexp2 copysign nextafter heaviside "
       "maximum minimum fmax fmin divmod".split()},
    "jnp.ldexp": "jnp.ldexp(x, i)",
    "jnp.power.int": "jnp.power(x, 3)",
    "jnp.power.c": "jnp.power(c, c[::-1])",
    "jnp.divide.c": "jnp.divide(c, c[::-1])",
    "jnp.floor_divide.int": "jnp.floor_divide(i, i[::-1] + 5)",
    "jnp.remainder.int": "jnp.remainder(i, 3)",
    # jnp: reductions and statistics
    **{f"jnp.{n}": f"jnp.{n}(m, axis=1)" for n in
       "sum mean var std prod max min nansum nanmean nanvar nanstd nanprod median "
       "nanmedian ptp cumsum cumprod argmax argmin average".split()},
    "jnp.var.ddof": "jnp.var(m, ddof=1)",
    "jnp.percentile": "jnp.percentile(m, 37.0, axis=0)",
    "jnp.quantile.methods": "[jnp.quantile(m, 0.3, axis=1, method=k) for k in "
                            "('linear', 'lower', 'higher', 'midpoint', 'nearest')]",
    "jnp.linalg.norm": "[jnp.linalg.norm(m), jnp.linalg.norm(m, axis=1), "
                       "jnp.linalg.norm(m, 1, axis=0), jnp.linalg.norm(m, -jnp.inf, axis=1)]",
    "jnp.corrcoef": "jnp.corrcoef(m)",
    "jnp.cov": "jnp.cov(m)",
    # jnp: creation, interpolation, polynomials, products
    "jnp.linspace": "jnp.linspace(s0, s1, 7)",
    "jnp.linspace.open": "jnp.linspace(s0, s1, 7, endpoint=False)",
    "jnp.linspace.retstep": "jnp.linspace(s0, s1, 5, retstep=True)",
    "jnp.logspace": "jnp.logspace(s0, s1, 6)",
    "jnp.geomspace": "jnp.geomspace(s1, s1 * 40, 6)",
    "jnp.arange.float": "jnp.arange(0.1, 2.0, 0.3)",
    "jnp.interp": "jnp.interp(y, jnp.sort(x[8:20]), p[8:20])",
    "jnp.polyval": "jnp.polyval(p[:5], y)",
    "jnp.polyfit": "jnp.polyfit(p[:8], u[:8], 2)",
    "jnp.roots": "jnp.sort_complex(jnp.roots(p[:4]))",
    "jnp.convolve": "jnp.convolve(p[:9], u[:4])",
    "jnp.correlate": "jnp.correlate(p[:9], u[:4], mode='full')",
    "jnp.cross": "jnp.cross(m[:, :3], m[:, 3:])",
    "jnp.dot": "jnp.dot(m, m.T)",
    "jnp.matmul": "m @ m.T",
    "jnp.einsum": "jnp.einsum('ij,kj->ik', m, m)",
    "jnp.outer": "jnp.outer(p[:5], u[:5])",
    "jnp.kron": "jnp.kron(m[:2, :2], m[2:, :2])",
    "jnp.trapezoid": "jnp.trapezoid(p, u)",
    "jnp.diff": "jnp.diff(p, n=2)",
    "jnp.gradient": "jnp.gradient(p)",
    "jnp.ediff1d": "jnp.ediff1d(p)",
    "jnp.histogram": "jnp.histogram(p, bins=5)",
    "jnp.clip": "jnp.clip(x, -1.5, 2.5)",
    "jnp.unwrap": "jnp.unwrap(p * 3)",
    "jnp.sort": "jnp.sort(x)",
    "jnp.vander": "jnp.vander(u[:5], 4)",
    "jnp.fft.fft": "jnp.fft.fft(p[:16])",
    "jnp.fft.rfft": "jnp.fft.rfft(p[:16])",
    "jnp.linalg.det": "jnp.linalg.det(m[:, :4])",
    # determinants: closed forms up to 3x3 (slogdet: 2x2), LU logarithms beyond, and the
    # adjugate in det's derivative (finite at rank n - 1, 0 below)
    **{f"jnp.linalg.det.{n}": f"jnp.linalg.det(w[:, :{n}, :{n}])" for n in range(1, 6)},
    "jnp.linalg.det.c": "jnp.linalg.det(cw)",
    "jnp.linalg.det.c3": "jnp.linalg.det(cw[:, :3, :3])",
    "jnp.linalg.det.singular": "jnp.linalg.det(w[:, :4, :4].at[:, 3].set(w[:, 1, :4] * 2))",
    **{f"jnp.linalg.slogdet.{n}": f"jnp.linalg.slogdet(w[:, :{n}, :{n}])" for n in (1, 2, 3, 5)},
    "jnp.linalg.slogdet.c": "[jnp.linalg.slogdet(cw[:, :k, :k]) for k in (1, 2, 4)]",
    "jnp.linalg.slogdet.qr": "jnp.linalg.slogdet(w, method='qr')",
    "la.det": "la.det(w[:, :4, :4])",
    "grad.det": "[lib.vmap(lib.grad(jnp.linalg.det))(w[:, :k, :k]) for k in (1, 2, 3, 5)]",
    "grad.det.singular": "[lib.grad(jnp.linalg.det)(w[0, :4, :4].at[3].set(w[0, 1, :4] * k)) "
                         "for k in (2.0, 0.0)] + [lib.grad(jnp.linalg.det)(jnp.ones((4, 4)))]",
    "grad.slogdet": "[lib.grad(lambda a: jnp.linalg.slogdet(a)[1])(w[0, :k, :k]) "
                    "for k in (1, 2, 5)]",
    # polynomials and complex convolutions (three real convolutions on the CPU, as JAX)
    "jnp.poly": "jnp.poly(u[:6])",
    "jnp.poly.c": "jnp.poly(c[:5])",
    "jnp.poly.matrix": "jnp.poly(m[:, :4])",
    "jnp.convolve.c": "jnp.convolve(c, c[:5])",
    "lax.conv.c": "lax.conv((m + 1j * m[::-1])[None, None], "
                  "(m[:2, :3] - 2j * m[2:, 3:])[None, None], (1, 1), 'SAME')",
    # Hermitian FFTs under every norm, and the norms' factors over sizes (√n, then 1/√n)
    "jnp.fft.hfft": "[jnp.fft.hfft(c, n=k, norm=s) for k in (None, 7, 30) for s in "
                    "(None, 'backward', 'ortho', 'forward')]",
    "jnp.fft.ihfft": "[jnp.fft.ihfft(p[:k], norm=s) for k in (13, 16) for s in "
                     "(None, 'backward', 'ortho', 'forward')] + [jnp.fft.ihfft(m, n=5, axis=0)]",
    "jnp.fft.norms": "[jnp.fft.fft(p[:k], norm=s) for k in (3, 5, 6, 7, 10, 11, 12, 13, 17, "
                     "20, 24, 31, 45) for s in ('ortho', 'forward')] + "
                     "[jnp.fft.irfft(c[:k], norm='ortho') for k in (5, 6, 7, 12)]",
    "la.dft": "[la.dft(k, s) for k in (1, 4, 7, 12) for s in (None, 'sqrtn', 'n')]",
    # matrix functions: Padé degrees by the norm (squared past it), QDWH and SVD polar
    # decompositions, Schur forms, Sylvester equations
    "la.expm": "[la.expm(w[0] * s) for s in (0.01, 0.3, 1.0, 4.0)] + [la.expm(cw)]",
    "la.expm.grad": "lib.grad(lambda a: la.expm(a).sum())(w[0])",
    "la.expm_frechet": "la.expm_frechet(w[0], w[1])",
    "la.polar": "[la.polar(w[0]), la.polar(q), la.polar(q.T, side='left'), la.polar(cw), "
                "la.polar(w[:, :3], method='svd'), la.polar(q, 'left', method='svd')]",
    "lax.linalg.qdwh": "lax.linalg.qdwh(q)",
    "la.rsf2csf": "la.rsf2csf(*la.schur(w[0]))",
    "la.solve_sylvester": "[la.solve_sylvester(w[0], w[1, :3, :3], w[2, :, :3]), "
                          "la.solve_sylvester(cw[0], cw[1], cw[2])]",
    # tridiagonal eigenproblems: bisection, and inverse iteration from random vectors
    "la.eigh_tridiagonal": "[la.eigh_tridiagonal(y[:12], y[12:23], eigvals_only=True), "
                           "la.eigh_tridiagonal(y[:12], y[12:23]), la.eigh_tridiagonal("
                           "p[:6], u[:5], select='i', select_range=(1, 3)), la.eigh_tridiagonal("
                           "y[:5], y[5:9], eigvals_only=True, tol=0.01)]",
    "la.eigh_tridiagonal.key": "la.eigh_tridiagonal(y[:7], y[7:13], key=key)",
    "la.eigh_tridiagonal.c": "la.eigh_tridiagonal(c[:6].real + 0j, c[6:11])",
    "la.eigh_tridiagonal.clustered": "la.eigh_tridiagonal(jnp.array([2.0, 2, 2, 2, 5]), "
                                     "jnp.array([0.0, 0, 1e-8, 0]))",
    # rotations (quaternions q, rotation vectors v; some near the identity) and Slerp
    "tr.Rotation.from_quat": "R.from_quat(q).as_quat()",
    "tr.Rotation.mul": "(R.from_quat(q) * R.from_quat(q[::-1])).as_quat()",
    "tr.Rotation.rotvec": "[R.from_quat(q).as_rotvec(), R.from_rotvec(v).as_quat(), "
                          "R.from_rotvec(v * 40, degrees=True).as_quat()]",
    "tr.Rotation.euler": "[R.from_quat(q).as_euler(s) for s in ('xyz', 'ZXZ', 'zxy', 'YXZ')]",
    "tr.Rotation.from_euler": "[R.from_euler(s, v).as_quat() for s in ('zxy', 'XYZ', 'zx')]",
    "tr.Rotation.matrix": "[R.from_quat(q).as_matrix(), "
                          "R.from_matrix(R.from_quat(q).as_matrix()).as_quat()]",
    "tr.Rotation.mrp": "[R.from_quat(q).as_mrp(), R.from_mrp(v).as_quat()]",
    "tr.Rotation.more": "[R.from_quat(q).magnitude(), R.from_quat(q).apply(v), "
                        "R.from_quat(q).apply(v, inverse=True), R.from_quat(q).mean().as_quat(), "
                        "R.from_quat(q).as_quat(canonical=True)]",
    "tr.Slerp": "Slerp.init(jnp.arange(4.0), R.from_quat(q[:4]))(u[:9] * 3).as_quat()",
    "jnp.linalg.inv": "jnp.linalg.inv(m[:, :4])",
    "jnp.linalg.solve": "jnp.linalg.solve(m[:, :4], p[:4])",
    "jnp.linalg.solve.batched": "jnp.linalg.solve(w, w[:, :, :2])",
    "grad.solve": "lib.grad(lambda a, b: jnp.linalg.solve(a, b).sum(), (0, 1))(m[:, :4], p[:4])",
    "grad.inv": "lib.grad(lambda a: jnp.linalg.inv(a)[0].sum())(w[0])",
    "la.lu": "[la.lu(w[0]), la.lu(m, permute_l=True)]",
    "la.lu_solve": "[la.lu_solve(la.lu_factor(w[1]), w[2], trans=t) for t in (0, 1)]",
    "la.hessenberg": "la.hessenberg(w[0], calc_q=True)",
    "la.block_diag": "la.block_diag(m, x[:3], s0)",
    "la.sized": "[la.hilbert(5), la.invhilbert(5), la.pascal(6), la.invpascal(6, 'upper'), "
                "la.helmert(5, full=True), la.hadamard(8)]",
    "la.from_values": "[la.toeplitz(m, x[:5]), la.toeplitz(c[:4]), la.hankel(m, x[:3]), "
                      "la.circulant(m), la.leslie(x[:4], u[:3]), la.companion(m), "
                      "la.fiedler_companion(p[:6]), la.fiedler(x[:4])]",
    "la.convolution_matrix": "[la.convolution_matrix(m, 3), la.convolution_matrix(x[:5], 7, "
                             "'same'), la.convolution_matrix(c[:4], 2, 'valid')]",
    "jnp.vectorize": "jnp.vectorize(lambda a, b: jnp.dot(a, b) * a, signature='(n),(n)->(n)')"
                     "(w[:, :1], m[:, :5])",
    "jnp.linalg.solve.size_1_loops": "jnp.linalg.solve(w[:, None], m[None, :, :5, None])",
    "jnp.select": "jnp.select([x < 0, x > 1], [x, -x], 0.5)",
    "jnp.polyadd": "jnp.polyadd(m, -x[:2, None])",
    "jnp.polysub": "jnp.polysub(m[:1], m)",
    "jnp.repeat.traced": "jnp.repeat(m, k[:6].astype(jnp.int32), axis=1, total_repeat_length=20)",
    "jnp.piecewise": "jnp.piecewise(x, [x < 0, x > 1], [jnp.sin, 0.5, jnp.expm1])",
    # scipy.signal
    "signal.detrend": "signal.detrend(y.reshape(6, 8), bp=[3])",
    "signal.detrend.constant": "signal.detrend(m, axis=0, type='constant')",
    "signal.stft": "signal.stft(y, nperseg=16)",
    "signal.stft.odd": "signal.stft(m, nperseg=5, boundary='odd', detrend='linear')",
    "signal.istft": "signal.istft(signal.stft(y, nperseg=16)[2])",
    "signal.istft.window": "signal.istft(c.reshape(4, 3), window=u[:6], nperseg=6)",
    "signal.welch": "signal.welch(y, nperseg=16, average='median')",
    "signal.csd": "signal.csd(y, p, nperseg=12, noverlap=8, nfft=16)",
    # lax: one primitive each (plus lax's composite functions)
    **_unary("lax", "neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh "
             "logistic sin cos tan asin acos atan sinh cosh asinh acosh atanh sqrt rsqrt "
             "cbrt abs square erf erfc lgamma digamma bessel_i0e bessel_i1e"),
    "lax.erf_inv": "lax.erf_inv(u * 2 - 1)",
    **{f"lax.{n}": f"lax.{n}(x, y)" for n in
       "add sub mul div rem pow atan2 max min nextafter".split()},
    **{f"lax.{n}": f"lax.{n}(p, u)" for n in
       "igamma igammac igamma_grad_a random_gamma_grad polygamma zeta".split()},
    "lax.betainc": "lax.betainc(p, p[::-1], u)",
    "lax.integer_pow": "[lax.integer_pow(x, 3), lax.integer_pow(x, -2)]",
    "lax.round.even": "lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)",
    "lax.clamp": "lax.clamp(-1.0, x, 2.0)",
    "lax.cumsum": "lax.cumsum(p)",
    "lax.cumprod": "lax.cumprod(u)",
    "lax.cumlogsumexp": "lax.cumlogsumexp(x[4:-4])",
    "lax.reduce_precision": "lax.reduce_precision(x, 5, 10)",
    "lax.convert.bf16": "lax.convert_element_type(x, jnp.bfloat16)",
    "lax.convert.i32": "lax.convert_element_type(p * 100, jnp.int32)",
    # half precisions: JAX computes some functions in float32 and rounds back
    "jnp.exp.bf16": "jnp.exp(x.astype(jnp.bfloat16))",
    "jnp.tanh.f16": "jnp.tanh(y.astype(jnp.float16))",
    "jnp.mean.bf16": "jnp.mean(m.astype(jnp.bfloat16), axis=1)",
    "jnp.sum.f16": "jnp.sum(m.astype(jnp.float16))",
    "nn.gelu.bf16": "nn.gelu(y.astype(jnp.bfloat16))",
    "nn.softmax.bf16": "nn.softmax(m.astype(jnp.bfloat16))",
    "lax.erf.bf16": "lax.erf(y.astype(jnp.bfloat16))",
    "lax.dot_general": "lax.dot_general(m, m, (((1,), (1,)), ((), ())))",
    "lax.conv": "lax.conv(m[None, None], m[None, None, :2, :3], (1, 1), 'SAME')",
    "lax.reduce_window": "lax.reduce_window(m, 0.0, lax.add, (2, 2), (1, 1), 'VALID')",
    # scipy.special
    **_unary("sp", "erf erfc erfinv ndtr log_ndtr expit logit i0 i0e i1 i1e gammaln "
             "digamma gamma gammasgn loggamma entr dawsn erfcx spence factorial wofz", "x"),
    **_unary("sp", "expi exp1", "y", ".y"),  # JAX's series never end at x's infinities
    "sp.i0e.wide": "[sp.i0e(y * 6), sp.i0(y * 6), jnp.i0(y.astype(jnp.bfloat16) * 6)]",
    "sp.entr.p": "sp.entr(p)",
    "grad.sp.entr": "lib.vmap(lib.grad(sp.entr))(x)",
    "grad.jnp.i0": "lib.vmap(lib.grad(jnp.i0))(y * 6)",
    "sp.ndtri": "sp.ndtri(u)",
    "sp.erfinv.u": "sp.erfinv(u)",
    "sp.logit.u": "sp.logit(u)",
    "sp.spence.p": "sp.spence(p)",
    "sp.zeta": "sp.zeta(p + 1, u)",
    "sp.polygamma": "sp.polygamma(2, p)",
    "sp.betaln": "sp.betaln(p, p[::-1])",
    "sp.beta": "sp.beta(p, p[::-1])",
    "sp.betainc": "sp.betainc(p, p[::-1], u)",
    "sp.gammainc": "sp.gammainc(p, p[::-1])",
    "sp.gammaincc": "sp.gammaincc(p, p[::-1])",
    "sp.xlogy": "sp.xlogy(x, p)",
    "sp.xlog1py": "sp.xlog1py(x, u)",
    "sp.rel_entr": "sp.rel_entr(p, p[::-1])",
    "sp.kl_div": "sp.kl_div(p, p[::-1])",
    "sp.logsumexp": "sp.logsumexp(m, axis=1)",
    "sp.logsumexp.b": "sp.logsumexp(m, axis=1, b=m[::-1], return_sign=True)",
    "sp.softmax": "sp.softmax(m, axis=1)",
    "sp.log_softmax": "sp.log_softmax(m, axis=1)",
    "sp.multigammaln": "sp.multigammaln(p + 2, 3)",
    "sp.poch": "sp.poch(p, u * 3)",
    "sp.hyp1f1": "sp.hyp1f1(u, p, u * 2)",
    "sp.hyp2f1": "sp.hyp2f1(u, u[::-1], p + 1, u * 0.9)",
    "sp.expn": "sp.expn(2, p)",
    "sp.owens_t": "sp.owens_t(x, u)",
    "sp.boxcox": "sp.boxcox(p, 0.5)",
    "sp.boxcox1p": "sp.boxcox1p(p, 0.5)",
    "sp.bernoulli": "sp.bernoulli(8)",
    "sp.comb": "sp.comb(p * 4, u * 3)",
    "sp.sici": "sp.sici(p)",
    "sp.fresnel": "sp.fresnel(x)",
    "sp.bessel_jn": "sp.bessel_jn(p, v=3)",
    "sp.sph_harm_y": "sp.sph_harm_y(jnp.array([2, 3]), jnp.array([1, -2]), u[:2], p[:2], "
                     "n_max=3)",
    # scipy.stats
    **_methods("norm", "logpdf pdf cdf logcdf sf logsf ppf isf", "x, 0.5, 2.0"),
    **_methods("cauchy", "logpdf pdf cdf logcdf sf logsf ppf isf", "x, 0.5, 2.0"),
    **_methods("laplace", "logpdf pdf cdf", "x, 0.5, 2.0"),
    **_methods("logistic", "logpdf pdf cdf sf ppf isf", "x, 0.5, 2.0"),
    **_methods("expon", "logpdf pdf cdf logcdf sf logsf ppf", "x, 0.5, 2.0"),
    **_methods("uniform", "logpdf pdf cdf ppf", "x, -1.0, 3.0"),
    **_methods("gumbel_l", "logpdf pdf cdf logcdf sf logsf ppf", "x, 0.5, 2.0"),
    **_methods("gumbel_r", "logpdf pdf cdf logcdf sf logsf ppf", "x, 0.5, 2.0"),
    **_methods("gamma", "logpdf pdf cdf logcdf sf logsf", "p, 1.5, 0.5, 2.0"),
    **_methods("chi2", "logpdf pdf cdf logcdf sf logsf", "p, 3.0, 0.5, 2.0"),
    **_methods("beta", "logpdf pdf cdf logcdf sf logsf", "u, 1.5, 2.5"),
    **_methods("pareto", "logpdf pdf cdf logcdf sf logsf ppf", "p, 2.5, 0.0, 0.5"),
    **_methods("t", "logpdf pdf", "x, 3.0, 0.5, 2.0"),
    **_methods("gennorm", "logpdf pdf cdf ppf", "x, 1.5"),
    **_methods("truncnorm", "logpdf pdf cdf logcdf sf logsf", "x, -1.0, 2.0, 0.5, 2.0"),
    **_methods("vonmises", "logpdf pdf", "x, 2.0"),
    **_methods("wrapcauchy", "logpdf pdf", "p, 0.4"),
    **_methods("poisson", "logpmf pmf cdf", "k, 2.5"),
    **_methods("geom", "logpmf pmf", "k, 0.3"),
    **_methods("bernoulli", "logpmf pmf cdf ppf", "k, 0.3"),
    **_methods("binom", "logpmf pmf", "k, 6.0, 0.3"),
    **_methods("nbinom", "logpmf pmf", "k, 4.0, 0.3"),
    **_methods("betabinom", "logpmf pmf", "k, 6.0, 1.5, 2.5"),
    "st.poisson.entropy": "st.poisson.entropy(p)",
    "st.poisson.entropy.regimes": "st.poisson.entropy(jnp.concatenate([p * 20, p * 200, x]))",
    "st.multivariate_normal.logpdf": "st.multivariate_normal.logpdf(m[:, :3], u[:3], "
                                     "jnp.eye(3) + 0.1)",
    "st.dirichlet.logpdf": "st.dirichlet.logpdf(u[:3] / u[:3].sum(), p[:3])",
    "st.multinomial.logpmf": "st.multinomial.logpmf(k[:3], k[:3].sum(), u[:3] / u[:3].sum())",
    "st.sem": "st.sem(m, axis=1)",
    "st.rankdata": "st.rankdata(x)",
    "st.mode": "st.mode(k)",
    # nn
    **_unary("nn", "relu relu6 sigmoid softplus sparse_plus sparse_sigmoid soft_sign "
             "silu log_sigmoid elu leaky_relu hard_tanh celu selu gelu glu "
             "hard_sigmoid hard_silu mish squareplus log1mexp tanh identity"),
    "nn.gelu.exact": "nn.gelu(x, approximate=False)",
    "nn.gelu.int": "[nn.gelu(i), nn.gelu(i, approximate=False)]",
    "nn.softmax": "nn.softmax(m, axis=1)",
    "nn.log_softmax": "nn.log_softmax(m, axis=1)",
    "nn.logsumexp": "nn.logsumexp(m, axis=1)",
    "nn.logmeanexp": "nn.logmeanexp(m, axis=1)",
    "nn.standardize": "nn.standardize(m, axis=1)",
    "nn.one_hot": "nn.one_hot(k, 6)",
    "nn.dot_product_attention": "nn.dot_product_attention(m.reshape(1, 4, 2, 3), "
                                "m.reshape(1, 4, 2, 3), m.reshape(1, 4, 2, 3))",
    "nn.initializers.glorot_normal": "nn.initializers.glorot_normal()(key, (4, 5))",
    "nn.initializers.orthogonal": "nn.initializers.orthogonal()(key, (4, 4))",
    # random (keys from the seed argument, so the key derivation runs too)
    "random.key_data": "random.key_data(random.split(key, 3))",
    "random.fold_in": "random.key_data(random.fold_in(key, 7))",
    "random.bits": "random.bits(key, (8,))",
    **{f"random.{n}": f"random.{n}(key, (16,))" for n in
       "normal uniform exponential gumbel laplace logistic cauchy rademacher "
       "double_sided_maxwell maxwell rayleigh".split()},
    "random.uniform.range": "random.uniform(key, (16,), minval=-2.0, maxval=3.0)",
    "random.randint": "random.randint(key, (16,), -5, 50)",
    "random.bernoulli": "random.bernoulli(key, 0.3, (16,))",
    "random.truncated_normal": "random.truncated_normal(key, -1.0, 2.0, (16,))",
    "random.beta": "random.beta(key, 1.5, 2.5, (8,))",
    "random.gamma": "random.gamma(key, p[:8])",
    "random.loggamma": "random.loggamma(key, p[:8])",
    "random.dirichlet": "random.dirichlet(key, p[:3], (4,))",
    "random.chisquare": "random.chisquare(key, 3.0, (8,))",
    "random.f": "random.f(key, 3.0, 5.0, (8,))",
    "random.t": "random.t(key, 3.0, (8,))",
    "random.poisson": "random.poisson(key, 3.5, (8,))",
    "random.binomial": "random.binomial(key, 10.0, 0.3, (8,))",
    "random.geometric": "random.geometric(key, 0.3, (8,))",
    "random.categorical": "random.categorical(key, m, axis=1)",
    "random.choice": "random.choice(key, 10, (4,), replace=False)",
    "random.choice.p": "random.choice(key, 6, (8,), p=u[:6] / u[:6].sum())",
    "random.permutation": "random.permutation(key, 10)",
    "random.multivariate_normal": "random.multivariate_normal(key, u[:3], "
                                  "jnp.eye(3) + 0.1, (4,))",
    "random.orthogonal": "random.orthogonal(key, 3)",
    "random.lognormal": "random.lognormal(key, 0.5, (8,))",
    "random.pareto": "random.pareto(key, 2.0, (8,))",
    "random.weibull_min": "random.weibull_min(key, 1.5, 2.0, (8,))",
    "random.wald": "random.wald(key, 1.5, (8,))",
    "random.triangular": "random.triangular(key, 0.0, 1.0, 3.0, (8,))",
    "random.generalized_normal": "random.generalized_normal(key, 1.5, (8,))",
    "random.ball": "random.ball(key, 3, 2.0, (4,))",
    "random.multinomial": "random.multinomial(key, 10.0, u[:4] / u[:4].sum())",
    # derivatives: each primitive's jvp rule (and mul's transpose) in JAX's formulation
    **{f"grad.{f}": f"lib.vmap(lib.grad({f}))(u)" for f in (
        "jnp.sqrt jnp.cbrt jnp.square jnp.exp2 jnp.expm1 jnp.tan jnp.arcsin jnp.arccos "
        "jnp.arctan jnp.arcsinh jnp.arctanh jnp.tanh jnp.log1p lax.rsqrt lax.logistic "
        "lax.erf lax.erfc lax.erf_inv nn.relu nn.gelu nn.silu nn.softplus").split()},
    "grad.jnp.arccosh": "lib.vmap(lib.grad(jnp.arccosh))(p + 1)",
    "grad.divide": "lib.vmap(lib.grad(jnp.divide, (0, 1)))(x, p)",
    "grad.arctan2": "lib.vmap(lib.grad(jnp.arctan2, (0, 1)))(x, y)",
    "grad.maximum": "lib.vmap(lib.grad(jnp.maximum, (0, 1)))(x, y)",
    "grad.power": "lib.vmap(lib.grad(jnp.power, (0, 1)))(p, y)",
    "grad.multiply": "lib.grad(lambda a, b: (a * b * 1.5).sum(), (0, 1))(x, y)",
    "grad.softmax": "lib.grad(lambda a: (nn.softmax(a) * m).sum())(m)",
    "grad.log_softmax": "lib.grad(lambda a: (nn.log_softmax(a) * m).sum())(m)",
}

# Cases whose bits still differ from JAX's, and why (the same reason shared by many).
_OWN_ALGORITHM = ("plax's own algorithm or series (Cephes-style approximations, other "
                  "coefficients or iteration), not JAX's sequence of primitives")
_OWN_FORMULA = ("written with other primitives or in another order than JAX's, or built "
                "on a special function above that differs")
# Kept on purpose where JAX's formula departs from SciPy (test_scipy_stats.py checks):
_SCIPY_TAILS = ("JAX's 1/2 + atan(z)/pi and tan(pi q - pi/2) lose the far tails in "
                "float32 and give finite values at q = 0, 1; plax keeps atan2 and SciPy's "
                "infinities")
_SCIPY_NAN = ("JAX's comparisons give a density (and cdf) at a NaN x; plax gives NaN, as "
              "SciPy")
_SCIPY_LIMIT = ("JAX's formula is inf - inf (NaN) at the infinite tail; plax gives the "
                "limit (-inf, density 0)")
EXPECTED_DIFFERENCES: dict[str, str] = {
    "jnp.fix": "JAX 0.10.2 removed jnp.fix (AttributeError); plax still defines it",
    "jnp.geomspace": ("plax's own formulation (JAX's: logspace of the logs, then the sign and "
                      "the endpoints set)"),
    **dict.fromkeys((
        "sp.spence sp.wofz sp.expi.y sp.exp1.y sp.spence.p sp.hyp2f1 sp.expn "
        "sp.owens_t sp.bernoulli sp.sici sp.fresnel sp.sph_harm_y"
    ).split(), _OWN_ALGORITHM),
    **dict.fromkeys((
        "st.pareto.cdf "
        "st.pareto.logcdf st.pareto.logsf st.pareto.ppf st.t.logpdf st.t.pdf "
        "st.gennorm.cdf st.truncnorm.logpdf st.truncnorm.pdf st.truncnorm.cdf "
        "st.truncnorm.logcdf st.truncnorm.sf st.truncnorm.logsf "
        "st.multivariate_normal.logpdf "
        "st.multinomial.logpmf"
    ).split(), _OWN_FORMULA),
    "st.cauchy.logcdf": _SCIPY_TAILS,
    "st.cauchy.logsf": _SCIPY_TAILS,
    "st.cauchy.ppf": _SCIPY_TAILS,
    "st.cauchy.isf": _SCIPY_TAILS,
    **dict.fromkeys(("tr.Rotation.euler", "tr.Slerp"), (
        "jitted, XLA fuses JAX's vectorized formulation (entries gathered at traced axes, "
        "angles scattered in place) otherwise than plax's, and its fused atan2, sin and "
        "cos round otherwise; op by op the values are JAX's (test_eager_calls...)")),
    "st.uniform.logpdf": _SCIPY_NAN,
    "st.uniform.pdf": _SCIPY_NAN,
    "st.uniform.cdf": _SCIPY_NAN,
    "st.gumbel_l.logpdf": _SCIPY_LIMIT,
    "st.gumbel_l.pdf": _SCIPY_LIMIT,
    "st.gumbel_r.logpdf": _SCIPY_LIMIT,
    "st.gumbel_r.pdf": _SCIPY_LIMIT,
}


def _inputs():
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-38, -1e-30, 3e38, 1.0, -1.0,
                        0.5, -0.5, 2.0, 1e-7, 88.5, -88.5], np.float32)
    x = np.concatenate([special, rng.normal(0, 3, 32).astype(np.float32)])
    p = rng.uniform(0.05, 6.0, 48).astype(np.float32)
    return {"x": x, "y": rng.normal(0, 2, 48).astype(np.float32), "p": p,
            "u": rng.uniform(0.02, 0.98, 48).astype(np.float32),
            "c": (rng.normal(0, 1.5, 12) + 1j * rng.normal(0, 1.5, 12)).astype(np.complex64),
            "m": rng.normal(0, 1, (4, 6)).astype(np.float32),
            "i": rng.integers(-8, 9, 48).astype(np.int32),
            "k": rng.integers(0, 6, 12).astype(np.float32),
            "s0": np.float32(0.1), "s1": np.float32(2.3), "seed": np.uint32(1234),
            "w": rng.normal(0, 1, (3, 5, 5)).astype(np.float32),
            "cw": (rng.normal(0, 1, (3, 4, 4)) + 1j * rng.normal(0, 1, (3, 4, 4))).astype(
                np.complex64),
            "q": rng.normal(0, 1, (12, 4)).astype(np.float32),
            "v": rng.normal(0, 1.5, (12, 3)).astype(np.float32)
            * np.float32([[1e-4]] * 3 + [[1]] * 9)}  # three near the identity


_BODY = """
import importlib
sp = importlib.import_module(lib.__name__ + ".scipy.special")
st = importlib.import_module(lib.__name__ + ".scipy.stats")
nn = importlib.import_module(lib.__name__ + ".nn")
random = importlib.import_module(lib.__name__ + ".random")
signal = importlib.import_module(lib.__name__ + ".scipy.signal")
la = importlib.import_module(lib.__name__ + ".scipy.linalg")
transform = importlib.import_module(lib.__name__ + ".scipy.spatial.transform")
names = sorted(inputs)

def leaves(value):
    out = []
    for leaf in lib.tree_util.tree_leaves(value):
        if jnp.issubdtype(leaf.dtype, lib.dtypes.prng_key):
            leaf = random.key_data(leaf)
        leaf = np.asarray(leaf)
        if leaf.dtype.kind == "V":  # bfloat16 & co. (ml_dtypes): their bits, through .npz
            leaf = leaf.view(f"u{leaf.dtype.itemsize}")
        out.append(leaf)
    return out

for case, source in CASES.items():
    def fn(*args, source=source):
        scope = dict(zip(names, args), lib=lib, jnp=jnp, lax=lax, sp=sp, st=st, nn=nn,
                     random=random, signal=signal, la=la, R=transform.Rotation,
                     Slerp=transform.Slerp)
        scope["key"] = random.key(scope["seed"])
        return eval(source, scope)
    try:
        for n, leaf in enumerate(leaves(lib.jit(fn)(*[inputs[k] for k in names]))):
            results[f"{case}#{n}"] = leaf
    except Exception as err:
        results[f"{case}#error"] = np.array(type(err).__name__)
"""


def _bits(a: np.ndarray) -> bytes:
    return a.dtype.str.encode() + repr(a.shape).encode() + np.ascontiguousarray(a).view(
        np.uint8).tobytes()


def differing_cases(cases: dict) -> dict:
    """{case: what differs} for the cases whose results are not bit-identical."""
    body = f"CASES = {cases!r}\n" + _BODY
    inputs = _inputs()
    jax_results = start_in_jax(body, inputs)
    mine, theirs = run_body(body, inputs), jax_results()
    differ = {}
    for case in cases:
        m = {k.split("#")[1]: v for k, v in mine.items() if k.split("#")[0] == case}
        t = {k.split("#")[1]: v for k, v in theirs.items() if k.split("#")[0] == case}
        if sorted(m) != sorted(t):
            differ[case] = f"plax gives {sorted(m)}, JAX {sorted(t)}"
        elif any(_bits(m[n]) != _bits(t[n]) for n in m):
            differ[case] = "bits differ"
    return differ


def test_numerics_are_bit_identical_to_jax():
    differ = differing_cases(CASES)
    new = {c: why for c, why in differ.items() if c not in EXPECTED_DIFFERENCES}
    fixed = sorted(set(EXPECTED_DIFFERENCES) - set(differ))
    assert not new and not fixed, (f"newly different from JAX: {new}\n"
                                   f"listed as different but now identical: {fixed}")


_EAGER_BODY = """
import importlib
st = importlib.import_module(lib.__name__ + ".scipy.stats")
la = importlib.import_module(lib.__name__ + ".scipy.linalg")
transform = importlib.import_module(lib.__name__ + ".scipy.spatial.transform")
R = transform.Rotation
x, s0, s1, c, q = inputs["x"], inputs["s0"], inputs["s1"], inputs["c"], inputs["q"]
results["linspace"] = jnp.linspace(s0, s1, 7)
results["linspace.float"] = jnp.linspace(0.1, 2.3, 50)
results["norm.logpdf"] = st.norm.logpdf(x, np.float32(0.3), np.float32(1.7))
results["divmod"] = jnp.stack(jnp.divmod(x, np.float32(0.7)))
# JAX's docstring examples (jitted in JAX: mean divides by the reciprocal of its count)
ints = np.array([[1, 3, 4, 2], [5, 2, 6, 3], [8, 1, 2, 9]], np.int32)
results["mean.int"] = jnp.mean(ints)
results["det.int"] = jnp.linalg.det(ints[:2, :2])
results["det.5"] = jnp.linalg.det(inputs["w"])
results["poly.int"] = jnp.poly(ints[:, :3])
results["i0.int"] = jnp.i0(np.arange(-2, 3))
results["dft"] = la.dft(4)
results["entropy"] = st.poisson.entropy(np.array([1, 10, 100]))
results["eigh_tridiagonal"] = la.eigh_tridiagonal(np.arange(1.0, 5.0, dtype=np.float32),
                                                  np.ones(3, np.float32), eigvals_only=True)
# op by op, JAX's Hermitian FFTs round their norms' factors apart from the transform
for norm in (None, "ortho", "forward"):
    results[f"hfft.{norm}"] = jnp.fft.hfft(c, norm=norm)
    results[f"ihfft.{norm}"] = jnp.fft.ihfft(inputs["p"][:13], norm=norm)
# (JAX's cross is a jitted call, which rounds its products with fused multiply-adds)
results["cross"] = jnp.cross(q[:, :3], q[::-1, :3])
results["rotation.mul"] = (R.from_quat(q) * R.from_quat(q[::-1])).as_rotvec()
results["slerp"] = transform.Slerp.init(np.arange(4.0), R.from_quat(q[:4]))(
    inputs["u"][:9] * 3).as_euler("zxy")
# Eager transformations of jitted jnp functions (JAX's autodiff cookbook): the jits run
# transformed and compiled (each tanh's jvp fused), the linearized tangents op by op.
W, b, rows = q[0, :3], s0, q[:, :3]
predict = lambda W: 0.5 * (jnp.tanh((jnp.dot(rows, W) + b) / 2) + 1)
results["hessian"] = lib.jacfwd(lib.jacrev(predict))(W)
results["jacfwd"] = lib.jacfwd(predict)(W)
results["grad"] = lib.grad(lambda W: jnp.sum(predict(W)))(W)
results["vmap"] = lib.vmap(lambda w: predict(w * W))(q[:5, 0])
"""


def test_eager_calls_are_bit_identical_too():
    """Examples called eagerly (JAX's linspace runs as one compiled function, so plax's
    must too: op by op, XLA would round the fused `a * b + c` otherwise; and JAX's mean,
    det, poly, cross and dft are jitted too), and eager jacfwd, jacrev, grad and vmap of
    jitted jnp functions."""
    inputs = _inputs()
    jax_results = start_in_jax(_EAGER_BODY, inputs)
    mine, theirs = run_body(_EAGER_BODY, inputs), jax_results()
    assert sorted(mine) == sorted(theirs)
    assert [k for k in mine if _bits(mine[k]) != _bits(theirs[k])] == []
