"""A reader of the controller's commands: `python command_receiver.py`, one line per command.

Prints `<reception time, system clock, s> <largest |torque|>` for every sample of
`effort_controller/commands`, flushed: the reception time is the middleware's (the sample's
reception timestamp), not the moment a callback of a loaded process ran.
"""

import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray


def main() -> None:
    rclpy.init()
    node = Node('command_receiver')

    def on_command(message: Float64MultiArray, info: dict) -> None:  # rclpy's MessageInfo
        received_s = info['received_timestamp'] * 1e-9
        print(f'{received_s:.6f} {float(np.abs(message.data).max()):.9g}', flush=True)

    node.create_subscription(Float64MultiArray, 'effort_controller/commands', on_command, 100)
    rclpy.spin(node)


if __name__ == '__main__':
    main()
