"""rclpy nodes: thin translators between ROS messages / parameters and the core."""
