"""MuJoCo's warnings handed to a handler (`wbc_control.sim.mujoco_warnings`), keyed by kind."""

import mujoco

from wbc_control.sim.mujoco_warnings import route_warnings, warning_key

#: One hinge, so that a huge applied force makes MuJoCo's accelerations blow up.
HINGE = """<mujoco><worldbody><body><joint type="hinge"/><geom size="0.1" mass="1"/></body>
  </worldbody></mujoco>"""


def test_an_unstable_simulation_is_reported_to_the_handler_once_per_kind_and_reset() -> None:
    seen: list[str] = []
    previous = route_warnings(seen.append)
    try:
        model = mujoco.MjModel.from_xml_string(HINGE)
        data = mujoco.MjData(model)
        for start_s in (0.0, 2.5):
            mujoco.mj_resetData(model, data)
            data.time = start_s
            data.qfrc_applied[0] = 1e300
            for _ in range(3):
                mujoco.mj_step(model, data)
    finally:
        assert route_warnings(previous) == seen.append
    assert len(seen) == 2, seen  # MuJoCo warns once per kind until the data are reset
    assert seen[0].endswith('Time = 0.0000.') and seen[1].endswith('Time = 2.5000.'), seen
    # The throttle key leaves the time out: the two are the same kind of warning.
    assert warning_key(seen[0]) == warning_key(seen[1])
    assert warning_key(seen[0]).startswith('Nan, Inf or huge value in QACC at DOF 0.')
