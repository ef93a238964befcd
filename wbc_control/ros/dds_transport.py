"""The controller's DDS transport: UDP, never Fast DDS's shared memory.

Fast DDS reaches a participant on the same host through shared-memory ports, each guarded by
a mutex in shared memory. A process SIGKILLed while it held one (its own port, which it pops,
or a peer's, which it was pushing to) leaves it locked: every later send to that port waits for
the lock's timeout, about 1 s, and the writer's mutex meanwhile holds back the controller's
other sends and the callback that publishes, the watchdog's safe command included (Fast DDS's
event thread in `SharedMemManager::Port::try_push`, the publishing thread waiting for it in
`BaseWriter::send_nts`; docs/safety.md, 'A dead state publisher'). Over UDP a dead peer costs
nothing.

So the controller asks Fast DDS for its UDPv4 transport alone: `FASTDDS_BUILTIN_TRANSPORTS`,
except under `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST` (or `ROS_LOCALHOST_ONLY=1`), for which
rmw_fastrtps installs shared memory and UDP itself whatever the environment says: there the
range becomes `SYSTEM_DEFAULT` (rmw_fastrtps then leaves the participant to Fast DDS) and a
shipped profile configures what rmw_fastrtps would for LOCALHOST, on UDP alone. A transport or
profile the user chose wins, and another middleware is left alone.
"""

from collections.abc import Mapping, MutableMapping
import os
from pathlib import Path

TRANSPORT_VARIABLE = 'FASTDDS_BUILTIN_TRANSPORTS'
#: The profile for LOCALHOST discovery on UDP (the same tags for Fast DDS 2 and 3).
LOCALHOST_PROFILE = Path(__file__).resolve().parents[1] / 'config' / 'fastdds_localhost_udp.xml'
#: Fast DDS major version -> (its library's file name prefix, the variable naming its profiles
#: file): Kilted's Fast DDS 3 and Jazzy's Fast DDS 2 (rmw_fastrtps on Fast DDS 3 reads the
#: second too, as deprecated: both would load the profile twice).
FAST_DDS = {
    3: ('libfastdds.so.3', 'FASTDDS_DEFAULT_PROFILES_FILE'),
    2: ('libfastrtps.so.2', 'FASTRTPS_DEFAULT_PROFILES_FILE'),
}
PROFILE_VARIABLES = tuple(variable for _, variable in FAST_DDS.values())
#: What else configures Fast DDS: QoS from its profiles, and the files it loads from the
#: working directory.
USER_CHOICES = (TRANSPORT_VARIABLE, *PROFILE_VARIABLES, 'RMW_FASTRTPS_USE_QOS_FROM_XML')
WORKING_DIRECTORY_PROFILES = ('DEFAULT_FASTDDS_PROFILES.xml', 'DEFAULT_FASTRTPS_PROFILES.xml')
#: The middleware rclpy loads when RMW_IMPLEMENTATION is unset (Jazzy and Kilted).
DEFAULT_RMW = 'rmw_fastrtps_cpp'
RANGE_VARIABLE = 'ROS_AUTOMATIC_DISCOVERY_RANGE'


def use_udp_transport(environ: MutableMapping[str, str], cwd: Path) -> str | None:
    """Ask Fast DDS for UDP alone in `environ`, before rclpy starts; see the module docstring.

    Returns:
        The line to log, or None when the environment was left alone: another middleware, a
        transport or profile the user chose (a variable, or a profile in `cwd`), discovery
        off, or LOCALHOST discovery with static peers (which the profile does not carry) or
        without a Fast DDS library on `LD_LIBRARY_PATH` (whose version picks the variable).
    """
    rmw = environ.get('RMW_IMPLEMENTATION') or DEFAULT_RMW
    if not rmw.startswith('rmw_fastrtps'):
        return None
    if any(environ.get(name) for name in USER_CHOICES):
        return None
    if any((cwd / name).exists() for name in WORKING_DIRECTORY_PROFILES):
        return None
    localhost = environ.get('ROS_LOCALHOST_ONLY') == '1'
    discovery = 'LOCALHOST' if localhost else environ.get(RANGE_VARIABLE, '')
    if discovery in ('', 'SUBNET', 'SYSTEM_DEFAULT'):
        environ[TRANSPORT_VARIABLE] = 'UDPv4'
        return (
            f'DDS: UDPv4 alone ({TRANSPORT_VARIABLE}), so that a peer that dies cannot hold '
            'the safe command back'
        )
    version = fast_dds_version(environ)
    if discovery != 'LOCALHOST' or environ.get('ROS_STATIC_PEERS') or version is None:
        return None
    environ.pop('ROS_LOCALHOST_ONLY', None)
    environ[RANGE_VARIABLE] = 'SYSTEM_DEFAULT'
    environ[FAST_DDS[version][1]] = str(LOCALHOST_PROFILE)
    return (
        'DDS: LOCALHOST discovery on UDPv4 alone (profile '
        f'{LOCALHOST_PROFILE.name}), so that a peer that dies cannot hold the safe command back'
    )


def fast_dds_version(environ: Mapping[str, str]) -> int | None:
    """The major version of the Fast DDS library first on `LD_LIBRARY_PATH` (None: none)."""
    for directory in filter(None, environ.get('LD_LIBRARY_PATH', '').split(os.pathsep)):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for version, (prefix, _) in FAST_DDS.items():
            if any(name.startswith(prefix) for name in names):
                return version
    return None
