"""The tick loop: soft start and stop, command output, statistics, checks, payload ramp."""
