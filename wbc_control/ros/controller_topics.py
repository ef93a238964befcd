"""The controller node's name, topics, QoS and timing constants, shared by its modules."""

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

NODE_NAME = 'wbc_controller'
COMMAND_TOPIC = 'effort_controller/commands'
JOINT_STATE_TOPIC = 'joint_states'
ODOM_TOPIC = 'odom'
# Keep-last depth 1 throughout: the newest sample wins. Reliable commands, as ros2_control's
# forward_command_controller expects.
COMMAND_QOS = QoSProfile(
    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE
)
STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
WATCHDOG_MAX_PERIOD_S = 0.05
# Under use_sim_time a simulator slower than real time is no fault: the wall-clock watchdog
# only catches a stopped clock, so its limit is at least this (s).
SIM_WALL_TIMEOUT_S = 1.0
LOG_THROTTLE_S = 1.0
