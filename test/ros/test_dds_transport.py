"""The controller's DDS transport: UDP alone, unless the user chose, for every discovery range."""

import os
from pathlib import Path
import subprocess
import sys

import pytest

from wbc_control.ros.dds_transport import (
    FAST_DDS,
    LOCALHOST_PROFILE,
    RANGE_VARIABLE,
    TRANSPORT_VARIABLE,
    fast_dds_version,
    use_udp_transport,
)

LIBRARY_PATH = os.environ.get('LD_LIBRARY_PATH', '')


def environment(**values: str) -> dict[str, str]:
    return {'LD_LIBRARY_PATH': LIBRARY_PATH, **values}


@pytest.mark.parametrize('discovery', [None, 'SUBNET', 'SYSTEM_DEFAULT'])
def test_subnet_discovery_gets_the_udp_transport(tmp_path, discovery):
    env = environment() if discovery is None else environment(**{RANGE_VARIABLE: discovery})
    assert use_udp_transport(env, tmp_path) is not None
    assert env[TRANSPORT_VARIABLE] == 'UDPv4'
    assert env.get(RANGE_VARIABLE) == discovery


@pytest.mark.parametrize('localhost', [{RANGE_VARIABLE: 'LOCALHOST'}, {'ROS_LOCALHOST_ONLY': '1'}])
def test_localhost_discovery_gets_the_profile_of_this_fast_dds(tmp_path, localhost):
    env = environment(**localhost)
    assert use_udp_transport(env, tmp_path) is not None
    variable = FAST_DDS[fast_dds_version(env)][1]
    assert env[variable] == str(LOCALHOST_PROFILE)
    assert env[RANGE_VARIABLE] == 'SYSTEM_DEFAULT'
    assert 'ROS_LOCALHOST_ONLY' not in env and TRANSPORT_VARIABLE not in env
    others = {name for _, name in FAST_DDS.values()} - {variable}
    assert not others & set(env)  # rmw_fastrtps would load the profile twice


@pytest.mark.parametrize(
    'chosen',
    [
        {TRANSPORT_VARIABLE: 'SHM'},
        {'FASTDDS_DEFAULT_PROFILES_FILE': '/etc/my.xml'},
        {'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/my.xml'},
        {'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'},
        {'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'},
        {RANGE_VARIABLE: 'OFF'},
        {RANGE_VARIABLE: 'LOCALHOST', 'ROS_STATIC_PEERS': '192.168.0.7'},
    ],
)
def test_what_the_user_chose_is_left_alone(tmp_path, chosen):
    env = environment(**chosen)
    assert use_udp_transport(env, tmp_path) is None
    assert env == environment(**chosen)


@pytest.mark.parametrize('name', ['DEFAULT_FASTDDS_PROFILES.xml', 'DEFAULT_FASTRTPS_PROFILES.xml'])
def test_a_profile_in_the_working_directory_is_the_users_choice(tmp_path, name):
    (tmp_path / name).write_text('<dds/>')
    env = environment()
    assert use_udp_transport(env, tmp_path) is None and TRANSPORT_VARIABLE not in env


def test_without_fast_dds_on_the_library_path_localhost_is_left_alone(tmp_path):
    env = {'LD_LIBRARY_PATH': str(tmp_path), RANGE_VARIABLE: 'LOCALHOST'}
    assert fast_dds_version(env) is None
    assert use_udp_transport(env, tmp_path) is None and env[RANGE_VARIABLE] == 'LOCALHOST'


PROBE = """
import os, rclpy
from rclpy.node import Node
from std_msgs.msg import String
rclpy.init()
node = Node('dds_transport_probe')
node.create_publisher(String, 'dds_transport_probe', 1)
with open(f'/proc/{os.getpid()}/maps') as maps:
    print(sum('/dev/shm/fast' in line for line in maps))
"""


@pytest.mark.parametrize('discovery', ['LOCALHOST', 'SUBNET'])
def test_the_participant_maps_no_shared_memory_and_fast_dds_reads_the_profile(tmp_path, discovery):
    env = dict(os.environ, **{RANGE_VARIABLE: discovery})
    for name in (TRANSPORT_VARIABLE, 'ROS_LOCALHOST_ONLY', *(v for _, v in FAST_DDS.values())):
        env.pop(name, None)
    shared = run_probe(env, tmp_path)
    assert int(shared.stdout.split()[-1]) > 0  # the default: shared-memory ports
    use_udp_transport(env, tmp_path)
    udp = run_probe(env, tmp_path)
    assert int(udp.stdout.split()[-1]) == 0, udp.stdout
    assert 'Error' not in udp.stderr, udp.stderr  # e.g. [XMLPARSER Error]


def run_probe(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, '-c', PROBE]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=True)
