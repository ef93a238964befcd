"""One command per state to a lock-stepped simulator, through a relay that also drives targets.

The legged demo's monitor sits between the controller and the simulator: it passes a command on
only once it has handled the state before it (so the simulator cannot run ahead of the
targets). A lock-stepped simulator that hears no command for its state re-sends the state;
a re-sent state whose command was already passed on means that command was lost on its way
(a publisher not yet matched with the simulator's subscription, right after discovery), so
the gate passes the same command again rather than waiting for one that will never come.
"""

from typing import Generic, TypeVar

Command = TypeVar('Command')


class CommandGate(Generic[Command]):
    """Counts handled states and passed commands; holds the newest command until it may go."""

    def __init__(self) -> None:
        self.states_handled = 0
        self.commands_passed = 0
        self.commands_repeated = 0
        self._held: Command | None = None
        self._last_passed: Command | None = None

    def state_handled(self) -> None:
        """A new state (a later stamp) was handled: one more command may go."""
        self.states_handled += 1

    def command(self, command: Command) -> None:
        """The controller's newest command (an older one not yet passed is dropped)."""
        self._held = command

    def take(self) -> Command | None:
        """The command to pass on now, if one is held and its state was handled."""
        if self._held is None or self.commands_passed >= self.states_handled:
            return None
        command, self._held = self._held, None
        self.commands_passed += 1
        self._last_passed = command
        return command

    def state_resent(self) -> Command | None:
        """The simulator sent the current state again: the command to send again, if any."""
        if self.commands_passed < self.states_handled or self._last_passed is None:
            return None  # none passed for this state yet: the next one will answer it
        self.commands_repeated += 1
        return self._last_passed
