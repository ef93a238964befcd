"""The control law: `prioritized_controller` solves the task levels each tick.

hierarchy/ the priority levels as hierarchical least squares; constraints/ what every level
keeps (joint and torque limits, friction, soles); contact/ rigid contacts and their forces;
switching/ task fades and contact transitions; loop/ the tick loop around the controller.
"""
