"""M⁻¹ by the tree's sparse LᵀDL (Featherstone 2005) against a dense inverse, every joint type.

`tree_inverse` reads M only on its branch-induced pattern, so it is checked on trees whose
joints have several DoFs (a free flyer, spherical, planar and translation joints: dense blocks
within a joint), branch at a multi-DoF joint, and hang from a fixed joint (a joint with no DoF
between a DoF and its parent).
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest

from wbc_control.model.mass_inverse import dof_parents, tree_inverse


def random_inertia(rng: np.random.Generator) -> pin.Inertia:
    """A physically valid rigid-body inertia (positive mass, principal moments > 0)."""
    moments = rng.uniform(0.01, 0.2, 3)
    moments[2] = min(moments[2], moments[0] + moments[1] - 1e-3)  # triangle inequality
    rotation = pin.Quaternion(*rng.standard_normal(4)).normalized().matrix()
    inertia = rotation @ np.diag(moments) @ rotation.T
    return pin.Inertia(rng.uniform(0.2, 3.0), rng.uniform(-0.2, 0.2, 3), inertia)


def add_link(model: pin.Model, parent: int, joint: object, name: str, rng) -> int:
    placement = pin.SE3(pin.Quaternion(*rng.standard_normal(4)).normalized().matrix(),
                        rng.uniform(-0.3, 0.3, 3))  # fmt: skip
    index = model.addJoint(parent, joint, placement, name)
    model.appendBodyToJoint(index, random_inertia(rng), pin.SE3.Identity())
    return index


def every_joint_tree(seed: int) -> pin.Model:
    """A floating tree: two branches from a spherical joint, a chain of every other type."""
    rng = np.random.default_rng(seed)
    model = pin.Model()
    base = add_link(model, 0, pin.JointModelFreeFlyer(), 'base', rng)
    ball = add_link(model, base, pin.JointModelSpherical(), 'ball', rng)
    left = add_link(model, ball, pin.JointModelRX(), 'left', rng)
    add_link(model, left, pin.JointModelPlanar(), 'planar', rng)
    right = add_link(model, ball, pin.JointModelRUBZ(), 'continuous', rng)
    slide = add_link(model, right, pin.JointModelPY(), 'slide', rng)
    add_link(model, slide, pin.JointModelTranslation(), 'translation', rng)
    add_link(model, base, pin.JointModelRevoluteUnaligned(np.array([1.0, 1.0, 0.0]) / 2**0.5),
             'unaligned', rng)  # fmt: skip
    return model


def inverse_of(model: pin.Model, mass: np.ndarray) -> tuple[bool, np.ndarray]:
    inverse = np.full_like(mass, np.nan)
    work = np.empty((3, *mass.shape))
    done = tree_inverse(np.ascontiguousarray(mass), dof_parents(model), work, inverse)
    return done, inverse


def test_every_dof_hangs_from_an_earlier_one():
    model = every_joint_tree(0)
    parents = dof_parents(model)
    assert parents[0] == -1 and list(parents[1:6]) == [0, 1, 2, 3, 4]  # the free flyer's chain
    ball, left, continuous = (model.joints[model.getJointId(name)].idx_v
                              for name in ('ball', 'left', 'continuous'))  # fmt: skip
    assert parents[ball] == 5 and parents[ball + 1] == ball  # the ball's own chain
    assert parents[left] == ball + 2 and parents[continuous] == ball + 2  # both branches
    assert parents[model.joints[model.getJointId('unaligned')].idx_v] == 5
    assert np.all(parents < np.arange(model.nv))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_inverse_of_a_tree_of_every_joint_type_is_the_dense_inverse(seed):
    model = every_joint_tree(seed % 7)
    data = model.createData()
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    done, inverse = inverse_of(model, mass)
    assert done
    dense = np.linalg.inv(mass)
    np.testing.assert_allclose(inverse, dense, rtol=0.0, atol=1e-10 * np.abs(dense).max())
    np.testing.assert_array_equal(inverse, inverse.T)


def test_a_joint_without_dofs_between_a_dof_and_its_parent():
    # Pinocchio's URDF parser folds fixed joints into frames; a model built by hand may hold a
    # joint with no DoF (an empty composite): the elbow's parent DoF is then the shoulder's.
    model = pin.Model()
    shoulder = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), 'shoulder')
    model.addJoint(shoulder, pin.JointModelRX(), pin.SE3.Identity(), 'sibling')  # DoF 1
    bracket = model.addJoint(shoulder, pin.JointModelComposite(), pin.SE3.Identity(), 'bracket')
    model.addJoint(bracket, pin.JointModelRY(), pin.SE3.Identity(), 'elbow')
    assert list(dof_parents(model)) == [-1, 0, 0]  # the elbow's is the shoulder's, not DoF 1


@pytest.mark.parametrize('entry', [0.0, -1.0, np.nan])
def test_a_matrix_that_is_not_positive_definite_is_refused(entry):
    model = every_joint_tree(1)
    mass = pin.crba(model, model.createData(), pin.neutral(model))
    mass = np.triu(mass) + np.triu(mass, 1).T
    singular = mass.copy()
    singular[-1, -1] = entry  # a leaf DoF with no inertia of its own, or worse
    singular[-1, :-1] = singular[:-1, -1] = 0.0
    done, _ = inverse_of(model, singular)
    assert not done
    # Indefinite with every diagonal entry positive: only a pivot of the factorisation tells.
    shifted = mass - 1.5 * np.linalg.eigvalsh(mass)[0] * np.eye(model.nv)
    assert np.all(np.diag(shifted) > 0.0) and np.linalg.eigvalsh(shifted)[0] < 0.0
    assert not inverse_of(model, shifted)[0]


def test_any_memory_order_gives_the_same_inverse():
    """Pinocchio's M is column-major; a row-major copy or a strided view reads the same."""
    model = every_joint_tree(2)
    mass = pin.crba(model, model.createData(), pin.neutral(model))
    mass = np.triu(mass) + np.triu(mass, 1).T
    parents, work = dof_parents(model), np.empty((3, model.nv, model.nv))
    results = []
    padded = np.zeros((2 * model.nv, 2 * model.nv))
    padded[::2, ::2] = mass
    for layout in (np.ascontiguousarray(mass), np.asfortranarray(mass), padded[::2, ::2]):
        inverse = np.empty_like(mass)
        assert tree_inverse(layout, parents, work, inverse)
        results.append(inverse)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


@pytest.mark.parametrize('root', [0.0, -1.0, 1.0])
def test_the_root_pivot_which_comes_last_decides_too(root):
    """The root's pivot, the last one (leaves to root), is checked like the others.

    M = Lᵀ D L of a chain with integer L and D: the factorisation is exact, so the root's pivot
    is exactly D₀; 0 and −1 are refused, 1 inverted.
    """
    parents = np.array([-1, 0, 1], dtype=np.int64)
    lower = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [1.0, 3.0, 1.0]])
    mass = lower.T @ np.diag([root, 2.0, 5.0]) @ lower
    inverse = np.full((3, 3), np.nan)
    done = tree_inverse(mass, parents, np.empty((3, 3, 3)), inverse)
    assert done == (root > 0.0)
    if done:
        np.testing.assert_allclose(inverse, np.linalg.inv(mass), rtol=1e-12, atol=1e-12)
