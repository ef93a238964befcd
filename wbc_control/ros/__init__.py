"""The rclpy nodes: the only package that imports rclpy; nodes only wire topics to the core."""
