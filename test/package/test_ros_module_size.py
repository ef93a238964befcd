"""Nodes stay wiring: no file under wbc_control/ros/ is longer than MAX_LINES."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROS = REPO / 'wbc_control' / 'ros'
MAX_LINES = 250


def long_files(folder: Path, max_lines: int) -> dict[str, int]:
    """{path: line count} of the Python files under `folder` longer than `max_lines`."""
    counts = {
        str(path.relative_to(REPO)): len(path.read_text(encoding='utf-8').splitlines())
        for path in sorted(folder.rglob('*.py'))
    }
    return {path: count for path, count in counts.items() if count > max_lines}


def test_no_file_under_ros_exceeds_the_limit() -> None:
    too_long = long_files(ROS, MAX_LINES)
    assert too_long == {}, (
        f'split these by concept into modules of at most {MAX_LINES} lines: {too_long}'
    )


def test_the_check_flags_a_file_one_line_over_and_passes_one_at_the_limit() -> None:
    sizes = long_files(ROS, 0)
    assert sizes, 'the check found no file under wbc_control/ros/'
    longest = max(sizes.values())
    assert long_files(ROS, longest) == {}
    assert set(long_files(ROS, longest - 1).values()) == {longest}
