"""plax.scipy.spatial.transform.Rotation and Slerp against SciPy (every conversion,
all 24 Euler sequences, gimbal lock, quaternion signs, batches), as pytrees under
jit and vmap, derivatives against finite differences, bad input, and JAX (its
angles at gimbal lock, its non-orthogonal matrices, its Slerp)."""
import itertools

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy.spatial.transform import Rotation, Slerp
from plax.test_util import check_grads

sst = pytest.importorskip("scipy.spatial.transform")

RNG = np.random.default_rng(5)
SEQUENCES = ["".join(p) for p in itertools.product("xyz", repeat=3)
             if p[0] != p[1] and p[1] != p[2]]
SEQUENCES += [s.upper() for s in SEQUENCES]
# symmetric and not, intrinsic and extrinsic, each sign of axis permutation
LOCK_SEQUENCES = ["xyx", "zyz", "YXY", "ZXZ", "xyz", "zyx", "XZY", "YXZ"]


def _quats():
    """Random rotations with both signs of w, plus the identity, half turns about
    each axis and about a diagonal (w = 0, where sign conventions bite)."""
    quats = RNG.normal(size=(6, 4))
    special = [[0, 0, 0, 1], [1, 0, 0, 0], [0, -1, 0, 0], [0, 0, 1, 0], [0, 0, 0, -1],
               [-1, 1, 0, 0], [0, 0, -1e-5, 1]]
    quats = np.concatenate([quats, special])
    return quats / np.linalg.norm(quats, axis=-1, keepdims=True)


def _same_rotations(got, want, rtol=1e-10):
    """Quaternions equal up to the sign of each."""
    got, want = np.asarray(got), np.asarray(want)
    signs = np.sign(np.sum(got * want, axis=-1, keepdims=True))
    np.testing.assert_allclose(got * signs, want, rtol=rtol, atol=rtol)


@plax.jit
def _conversions(quats, vectors, weights):
    """Every conversion of `quats` in one compiled program (eager dispatch of each
    small op would cost far more)."""
    ours = Rotation.from_quat(quats)
    out = dict(matrix=ours.as_matrix(), rotvec=ours.as_rotvec(),
               rotvec_deg=ours.as_rotvec(degrees=True), mrp=ours.as_mrp(),
               magnitude=ours.magnitude(), quat=ours.as_quat(),
               canonical=ours.as_quat(canonical=True),
               canonical_first=ours.as_quat(canonical=True, scalar_first=True),
               inv=ours.inv().quat, composed=(ours * ours[::-1]).quat,
               composed_one=(ours[2] * ours).quat, mean=ours.mean(weights).quat,
               mean_even=ours.mean().quat, doubled=Rotation.from_quat(2 * quats).quat,
               batch=Rotation.from_quat(quats[:6].reshape(2, 3, 4)).as_matrix())
    matrix, rotvec = out["matrix"], out["rotvec"]
    out.update(from_matrix=Rotation.from_matrix(matrix).quat,
               from_rotvec=Rotation.from_rotvec(rotvec).quat,
               from_rotvec_deg=Rotation.from_rotvec(out["rotvec_deg"], degrees=True).quat,
               from_mrp=Rotation.from_mrp(out["mrp"]).quat)
    for inverse in (False, True):
        out[f"apply{inverse}"] = ours.apply(vectors, inverse=inverse)
        out[f"apply_one{inverse}"] = ours[3].apply(vectors, inverse=inverse)
        out[f"apply_to_one{inverse}"] = ours.apply(vectors[0], inverse=inverse)
    return out


def test_conversions_against_scipy():
    quats = _quats()
    theirs = sst.Rotation.from_quat(quats)
    vectors = RNG.normal(size=(len(quats), 3))
    weights = RNG.uniform(0.1, 2, size=len(quats))
    with plax.enable_x64(True):
        got = _conversions(quats, vectors, weights)
    np.testing.assert_allclose(got["matrix"], theirs.as_matrix(), atol=1e-12)
    # a half turn (w = 0) has two rotation vectors: JAX keeps the quaternion's sign,
    # SciPy makes it canonical
    turning = quats[:, 3] != 0
    np.testing.assert_allclose(got["rotvec"][turning], theirs[turning].as_rotvec(),
                               atol=1e-12)
    np.testing.assert_allclose(got["rotvec_deg"][turning],
                               theirs[turning].as_rotvec(degrees=True), atol=1e-10)
    np.testing.assert_allclose(got["magnitude"][~turning], np.pi)
    np.testing.assert_allclose(got["mrp"], theirs.as_mrp(), atol=1e-12)
    np.testing.assert_allclose(got["magnitude"], theirs.magnitude(), atol=1e-12)
    np.testing.assert_allclose(got["canonical"], theirs.as_quat(canonical=True), atol=1e-15)
    np.testing.assert_allclose(got["canonical_first"],
                               theirs.as_quat(canonical=True, scalar_first=True), atol=1e-15)
    np.testing.assert_allclose(got["quat"], quats, atol=1e-15)
    np.testing.assert_allclose(got["doubled"], quats, atol=1e-15)
    for key in ("from_matrix", "from_rotvec", "from_rotvec_deg", "from_mrp"):
        _same_rotations(got[key], quats)
    _same_rotations(got["inv"], theirs.inv().as_quat())
    _same_rotations(got["composed"], (theirs * theirs[::-1]).as_quat())
    _same_rotations(got["composed_one"], (theirs[2] * theirs).as_quat())
    for inverse in (False, True):
        np.testing.assert_allclose(got[f"apply{inverse}"],
                                   theirs.apply(vectors, inverse=inverse), atol=1e-12)
        np.testing.assert_allclose(got[f"apply_one{inverse}"],
                                   theirs[3].apply(vectors, inverse=inverse), atol=1e-12)
        np.testing.assert_allclose(got[f"apply_to_one{inverse}"],
                                   theirs.apply(vectors[0], inverse=inverse), atol=1e-12)
    _same_rotations(got["mean"], theirs.mean(weights).as_quat())
    _same_rotations(got["mean_even"], theirs.mean().as_quat())
    np.testing.assert_allclose(got["batch"], theirs[:6].as_matrix().reshape(2, 3, 3, 3),
                               atol=1e-12)


@plax.jit
def _euler(angles, quats):
    """Per sequence, the quaternions of `angles` and the angles of `quats`, and the
    angles recovered at gimbal lock, in one compiled program."""
    out = {}
    for seq in SEQUENCES:
        out["from" + seq] = Rotation.from_euler(seq, angles).quat
        out["to" + seq] = Rotation.from_quat(quats).as_euler(seq)
    for seq in LOCK_SEQUENCES:
        locked = Rotation.from_euler(seq, _locked_angles(seq))
        out["locked" + seq] = locked.quat
        out["unlocked" + seq] = Rotation.from_euler(seq, locked.as_euler(seq)).quat
        out["recovered" + seq] = locked.as_euler(seq)
    for seq in ("x", "Z", "xy", "ZX"):
        out["from" + seq] = Rotation.from_euler(seq, angles[:, :len(seq)]).quat
    out["scalar"] = Rotation.from_euler("y", angles[0, 0]).quat
    degrees = angles * (180 / np.pi)
    out["from_degrees"] = Rotation.from_euler("zxy", degrees, degrees=True).quat
    out["to_degrees"] = Rotation.from_quat(quats).as_euler("YZX", degrees=True)
    return out


def _locked_angles(seq):
    middles = [0.0, np.pi] if seq[0] == seq[2] else [-np.pi / 2, np.pi / 2]
    return np.array([[0.3, m, -1.1] for m in middles])


def test_euler_against_scipy_and_at_gimbal_lock():
    angles = RNG.uniform(-np.pi, np.pi, size=(5, 3))
    angles[:, 1] = angles[:, 1] / 2 + np.pi / 4   # away from gimbal lock
    rotations = sst.Rotation.from_quat(RNG.normal(size=(5, 4)))
    with plax.enable_x64(True):
        got = _euler(angles, rotations.as_quat())
    for seq in SEQUENCES:
        want = sst.Rotation.from_euler(seq, angles).as_quat()
        _same_rotations(got["from" + seq], want)
        np.testing.assert_allclose(got["to" + seq], rotations.as_euler(seq), atol=1e-10,
                                   err_msg=seq)
    for seq in LOCK_SEQUENCES:
        # at gimbal lock the angles still give the rotation, with the third one 0
        _same_rotations(got["unlocked" + seq], got["locked" + seq])
        np.testing.assert_array_equal(got["recovered" + seq][:, 2], 0.0)
    for seq in ("x", "Z", "xy", "ZX"):
        _same_rotations(got["from" + seq],
                        sst.Rotation.from_euler(seq, angles[:, :len(seq)]).as_quat())
    _same_rotations(got["scalar"], sst.Rotation.from_euler("y", angles[0, 0]).as_quat())
    _same_rotations(got["from_degrees"], sst.Rotation.from_euler(
        "zxy", np.rad2deg(angles), degrees=True).as_quat())
    np.testing.assert_allclose(got["to_degrees"], rotations.as_euler("YZX", degrees=True),
                               atol=1e-8)


def test_constructors_and_sequences():
    with plax.enable_x64(True):
        np.testing.assert_array_equal(Rotation.identity().quat, [0, 0, 0, 1])
        np.testing.assert_array_equal(Rotation.identity(3).as_matrix(), np.tile(np.eye(3),
                                                                                 (3, 1, 1)))
        assert Rotation.identity(dtype=np.float32).quat.dtype == np.float32
        drawn = Rotation.random(plax.random.key(0), 2000)
        np.testing.assert_allclose(np.linalg.norm(drawn.quat, axis=-1), 1, rtol=1e-12)
        # Haar measure: E[R] = 0 and the angle's density is (1 - cos t) / pi
        assert np.abs(np.mean(drawn.as_matrix(), axis=0)).max() < 0.05
        assert abs(np.mean(drawn.magnitude()) - (np.pi / 2 + 2 / np.pi)) < 0.05
        assert Rotation.random(plax.random.key(1)).single
        both = Rotation.concatenate([Rotation.identity(), Rotation.from_quat(_quats()[:2])])
        assert both.quat.shape == (3, 4)
        picked = Rotation.from_quat(_quats())[np.array([1, 0])]
        assert picked.quat.shape == (2, 4)
        assert Rotation.from_quat([0, 0, 0, 1]).quat.dtype == np.float64


@plax.jit
def _slerps(times, quats, at):
    """Both constructors' interpolations, at `at` and at one time, and a two-key
    Slerp beyond its key times, in one compiled program."""
    out = {}
    for name, slerp in (("init", Slerp.init(times, Rotation.from_quat(quats))),
                        ("scipy", Slerp(times, Rotation.from_quat(quats)))):
        out[name] = slerp(at).quat
        out[name + "_one"] = slerp(at[3]).quat
    two = Slerp(times[:2], Rotation.from_quat(quats[:2]))
    step = two(times[1]) * two(times[0]).inv()
    out.update(before=two(2 * times[0] - times[1]).quat, after=two(2 * times[1]).quat,
               want_before=(step.inv() * two(times[0])).quat,
               want_after=(step * two(times[1])).quat)
    return out


def test_slerp_against_scipy():
    times = np.array([0.0, 1.0, 3.0, 3.5])
    keys = sst.Rotation.from_quat(_quats()[:4])
    at = np.array([0.0, 0.2, 1.0, 2.5, 3.0, 3.25, 3.5])
    with plax.enable_x64(True):
        got = _slerps(times, keys.as_quat(), at)
    assert got["init_one"].shape == got["scipy_one"].shape == (4,)
    want = sst.Slerp(times, keys)
    for name in ("init", "scipy"):
        _same_rotations(got[name], want(at).as_quat())
        _same_rotations(got[name + "_one"], want(at[3]).as_quat())
    # outside the key times, the end intervals are extrapolated
    _same_rotations(got["before"], got["want_before"])
    _same_rotations(got["after"], got["want_after"])


def test_pytrees_under_jit_and_vmap():
    quats = _quats()[:4].astype(np.float32)
    vectors = RNG.normal(size=(4, 3)).astype(np.float32)
    theirs = sst.Rotation.from_quat(quats)
    rotations = Rotation.from_quat(quats)
    got = plax.jit(lambda r, s: (r * s).inv())(rotations, rotations[0])
    assert isinstance(got, Rotation)
    _same_rotations(got.quat, (theirs * theirs[0]).inv().as_quat(), rtol=1e-6)
    euler = plax.vmap(lambda q: Rotation.from_quat(q).as_euler("ZXZ"))(quats)
    np.testing.assert_allclose(euler, theirs.as_euler("ZXZ"), atol=1e-5)
    applied = plax.vmap(lambda r, v: r.apply(v))(rotations, vectors)
    np.testing.assert_allclose(applied, theirs.apply(vectors), atol=1e-5)
    slerp = Slerp.init(np.array([0.0, 1.0, 2.0], np.float32), rotations[:3])
    assert len(plax.tree_util.tree_leaves(slerp)) == 4
    halfway = plax.jit(lambda s, t: s(t).as_quat())(slerp, np.float32(0.5))
    _same_rotations(halfway, sst.Slerp([0, 1, 2], theirs[:3])(0.5).as_quat(), rtol=1e-6)


def test_derivatives():
    with plax.enable_x64(True):
        quat = _quats()[0]
        vectors = RNG.normal(size=(2, 3))
        check_grads(lambda q, v: Rotation.from_quat(q).apply(v), (quat, vectors), order=1)
        check_grads(lambda q: Rotation.from_quat(q).as_rotvec(), (quat,), order=1)
        check_grads(lambda r: Rotation.from_rotvec(r).as_matrix(),
                    (np.array([0.3, -0.2, 0.5]),), order=1)
        # at and near the identity, where the series take over, derivatives stay finite
        for rotvec in (np.zeros(3), np.array([2e-4, -1e-4, 3e-4])):
            jac = plax.jacfwd(lambda r: Rotation.from_rotvec(r).quat)(rotvec)
            np.testing.assert_allclose(jac[:3], 0.5 * np.eye(3), atol=1e-7)
            back = plax.jacrev(lambda q: Rotation(q).as_rotvec())(
                np.asarray(Rotation.from_rotvec(rotvec).quat))
            np.testing.assert_allclose(back[:, :3], 2 * np.eye(3), atol=1e-6)


def test_bad_input():
    single = Rotation.identity()
    with pytest.raises(ValueError, match=r"`quat` of shape \(4,\) or \(..., 4\), got shape "
                                         r"\(3,\)"):
        Rotation.from_quat(np.ones(3))
    with pytest.raises(ValueError, match=r"`matrix` of shape \(3, 3\).*got shape \(4, 4\)"):
        Rotation.from_matrix(np.eye(4))
    with pytest.raises(ValueError, match=r"`rotvec` of shape \(3,\).*got shape \(4,\)"):
        Rotation.from_rotvec(np.ones(4))
    with pytest.raises(ValueError, match=r"`mrp` of shape \(3,\).*got shape \(2,\)"):
        Rotation.from_mrp(np.ones(2))
    for seq, message in [("xYz", "Expected axes from `seq`"), ("abc", "Expected axes"),
                         ("xxz", "consecutive axes to be different"),
                         ("xyzx", "non-empty string of upto 3"), ("", "non-empty string")]:
        with pytest.raises(ValueError, match=message):
            Rotation.from_euler(seq, np.ones(3))
    with pytest.raises(ValueError, match=r"angles of shape \(..., 3\) for the axis sequence "
                                         r"'xyz', got shape \(2,\)"):
        Rotation.from_euler("xyz", np.ones(2))
    with pytest.raises(ValueError, match="Expected 3 axes, got xy"):
        single.as_euler("xy")
    with pytest.raises(ValueError, match="consecutive axes"):
        single.as_euler("XXY")
    with pytest.raises(ValueError, match=r"`vectors` of shape \(3,\).*got shape \(2, 4\)"):
        single.apply(np.ones((2, 4)))
    several = Rotation.from_quat(_quats()[:2])
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\) do not broadcast"):
        several.apply(np.ones((3, 3)))
    with pytest.raises(ValueError, match="do not broadcast"):
        several * Rotation.from_quat(_quats()[:3])
    with pytest.raises(TypeError, match="composes only with a Rotation"):
        several * np.ones(4)
    with pytest.raises(TypeError, match="Single rotation is not subscriptable"):
        single[0]
    with pytest.raises(TypeError, match="Single rotation has no len"):
        len(single)
    with pytest.raises(ValueError, match="`weights` to be 1 dimensional"):
        several.mean(np.ones((1, 2)))
    with pytest.raises(ValueError, match="got 3 values and 2 rotations"):
        several.mean(np.ones(3))
    with pytest.raises(TypeError, match="must be a `Rotation` instance"):
        Slerp.init(np.arange(2.0), several.quat)
    with pytest.raises(ValueError, match="at least 2 rotations"):
        Slerp.init(np.arange(1.0), several[:1])
    with pytest.raises(ValueError, match="got 2 rotations and 3 timestamps"):
        Slerp.init(np.arange(3.0), several)
    with pytest.raises(ValueError, match="1 dimensional array, got 2 dimensions"):
        Slerp.init(np.ones((1, 2)), several)
    with pytest.raises(ValueError, match="strictly increasing"):
        Slerp.init(np.array([1.0, 0.0]), several)
    with pytest.raises(ValueError, match="at most 1-dimensional"):
        Slerp.init(np.arange(2.0), several)(np.ones((2, 2)))


_JAX_BODY = """
import importlib
transform = importlib.import_module(lib.__name__ + ".scipy.spatial.transform")
R, Slerp = transform.Rotation, transform.Slerp


def compute(quats, skewed, vectors):
    out = {}
    rotations = R.from_quat(quats)
    for seq in ("xyz", "ZXZ", "yxy", "XZY"):
        out["euler_" + seq] = rotations.as_euler(seq, degrees=True)
        symmetric = seq[0] == seq[2]
        locked = np.array([[0.3, 0.0 if symmetric else np.pi / 2, -1.1],
                           [0.4, np.pi if symmetric else -np.pi / 2, 0.5]], np.float32)
        out["locked_" + seq] = R.from_euler(seq, locked).as_euler(seq)
        out["from_" + seq] = R.from_euler(seq, locked[:, ::-1] * 2).as_quat()
    out["matrix"] = rotations.as_matrix()
    out["skewed"] = R.from_matrix(skewed).as_quat()
    out["rotvec"] = rotations.as_rotvec()
    out["mrp"] = rotations.as_mrp()
    out["magnitude"] = rotations.magnitude()
    out["canonical"] = rotations.as_quat(canonical=True, scalar_first=True)
    out["composed"] = (rotations * rotations[::-1]).as_quat()
    out["applied"] = rotations.apply(vectors, inverse=True)
    weights = jnp.arange(1.0, 1.0 + quats.shape[0])
    out["mean"] = rotations.mean(weights).as_quat(canonical=True)
    out["from_rotvec"] = R.from_rotvec(np.array([[0.0, 0.0, 0.0], [1e-4, 0, 2e-4],
                                                 [1.0, -2.0, 0.5]], np.float32)).as_quat()
    out["from_mrp"] = R.from_mrp(np.array([0.2, -0.4, 0.1], np.float32)).as_quat()
    slerp = Slerp.init(np.array([0.0, 1.0, 3.0], np.float32), rotations[:3])
    out["slerp"] = slerp(np.array([-0.5, 0.0, 0.25, 1.0, 2.0, 3.0], np.float32)).as_quat()
    out["slerp_single"] = slerp(0.5).as_quat()
    out["grad_apply"] = lib.grad(lambda q: R.from_quat(q).apply(vectors[0]).sum())(quats[0])
    return out


results.update(lib.jit(compute)(inputs["quats"], inputs["skewed"], inputs["vectors"]))
results["identity"] = R.identity().as_quat()
results["euler_eager"] = R.from_quat(inputs["quats"][:3]).as_euler("zyz")
"""


@requires_jax
def test_matches_jax():
    quats = _quats().astype(np.float32)
    skewed = (np.linalg.qr(RNG.normal(size=(3, 3, 3)))[0] + 0.05 * RNG.normal(size=(3, 3, 3)))
    inputs = dict(quats=quats, skewed=skewed.astype(np.float32),
                  vectors=RNG.normal(size=(len(quats), 3)).astype(np.float32))
    assert_same_as_jax(_JAX_BODY, inputs, rtol=1e-5, atol=2e-5,
                       tolerances={k: (1e-4, 2e-3) for k in
                                   ("euler_xyz", "euler_ZXZ", "euler_yxy", "euler_XZY")})
