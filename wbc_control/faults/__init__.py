"""`wbc_faults`: inject faults into a real `wbc_controller` and check what it does.

A tool on top of the nodes, like :mod:`wbc_control.benchmark`: it starts the controller as a
subprocess and probes it over DDS (:mod:`.injection`).
"""
