"""A joint-state publisher to kill: `python joint_state_source.py RATE_HZ JOINT=POSITION ...`.

Publishes sensor_msgs/JointState on `joint_states` (best effort, stamped with its clock) at
RATE_HZ from a steady-clock timer until it is killed, and subscribes to the command topic as a
simulator or a driver does, so that the controller has a reader to lose as well.
"""

import sys

import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray


def main(rate_hz: float, joints: dict[str, float]) -> None:
    rclpy.init()
    node = Node('joint_state_source')
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    publisher = node.create_publisher(JointState, 'joint_states', qos)
    node.create_subscription(Float64MultiArray, 'effort_controller/commands', lambda _: None, 1)
    message = JointState(name=list(joints), position=list(joints.values()))
    message.velocity = [0.0] * len(joints)

    def publish() -> None:
        message.header.stamp = node.get_clock().now().to_msg()
        publisher.publish(message)

    node.create_timer(1.0 / rate_hz, publish, clock=Clock(clock_type=ClockType.STEADY_TIME))
    rclpy.spin(node)


if __name__ == '__main__':
    pairs = (argument.split('=') for argument in sys.argv[2:])
    main(float(sys.argv[1]), {name: float(value) for name, value in pairs})
