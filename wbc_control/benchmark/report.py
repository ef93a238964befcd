"""What `wbc_bench` reports: the speed targets (PASS / MISS), the tables and the plot.

The targets compare the controller with references measured in the same run (the Pinocchio
floor, a null rclpy node), so that they do not depend on how loaded the machine is; the call
count is a figure that noise cannot move. matplotlib is imported only to draw the
conditioning plot.
"""

from dataclasses import dataclass
import math
from pathlib import Path


@dataclass(frozen=True)
class Target:
    """A speed goal, read from the results (plus the derived figures) by `path`."""

    name: str
    path: tuple[str, ...]
    limit: float
    at_most: bool  # True: value <= limit passes; False: value >= limit passes
    unit: str


TARGETS = (
    Target('Panda calls per tick', ('tick', 'panda', 'calls_per_tick', 'total'), 40.0, True, ''),
    Target('Talos calls per tick', ('tick', 'talos', 'calls_per_tick', 'total'), 90.0, True, ''),
    Target('Panda tick / floor', ('tick', 'panda', 'ratio'), 6.0, True, '×'),
    Target('Talos tick / floor', ('tick', 'talos', 'ratio'), 9.0, True, '×'),
    Target('Panda tick p99 / p50', ('tick', 'panda', 'p99_over_p50'), 2.0, True, '×'),
    Target('Talos tick p99 / p50', ('tick', 'talos', 'p99_over_p50'), 2.0, True, '×'),
    Target(
        '1 kHz missed - null node',
        ('derived', 'dds_1000_missed_over_null'),
        0.01,
        True,
        '',
    ),
    Target(
        '1 kHz p99 - null p99 - tick p99',
        ('derived', 'dds_1000_p99_over_null_and_tick_us'),
        0.0,
        True,
        'µs',
    ),
    Target('δ cheaper than κ at n = 38', ('conditioning', 'speedup_at_38'), 20.0, False, '×'),
)


def _lookup(results: dict, path: tuple[str, ...]) -> float | None:
    value = results
    for key in path:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value)


def derived_figures(results: dict) -> dict:
    """Figures that compare the controller with the null node of the same DDS run."""
    derived = {}
    rate = ('dds', 'rates', '1000')
    null = ('dds', 'null_node_rates', '1000')
    missed = _lookup(results, (*rate, 'missed_fraction'))
    null_missed = _lookup(results, (*null, 'missed_fraction'))
    if missed is not None and null_missed is not None:
        derived['dds_1000_missed_over_null'] = missed - null_missed
    p99 = _lookup(results, (*rate, 'latency_us', 'p99'))
    null_p99 = _lookup(results, (*null, 'latency_us', 'p99'))
    robot = (results.get('dds') or {}).get('robot')
    tick_p99 = _lookup(results, ('tick', str(robot), 'tick_us', 'p99'))
    if None not in (p99, null_p99, tick_p99):
        derived['dds_1000_p99_over_null_and_tick_us'] = p99 - null_p99 - tick_p99
    return derived


def evaluate_targets(results: dict) -> list[dict]:
    """PASS / MISS per target, or SKIPPED where the run did not measure it."""
    results = {**results, 'derived': derived_figures(results)}
    rows = []
    for target in TARGETS:
        value = _lookup(results, target.path)
        if value is None:
            status = 'SKIPPED'
        else:
            passed = value <= target.limit if target.at_most else value >= target.limit
            status = 'PASS' if passed else 'MISS'
        comparison = '<=' if target.at_most else '>='
        rows.append(
            {
                'name': target.name,
                'target': f'{comparison} {target.limit:g}{target.unit}',
                'value': value,
                'status': status,
            }
        )
    return rows


def format_report(results: dict) -> str:
    """The human-readable tables."""
    lines = [
        f'wbc_bench on {results["meta"]["machine"]} '
        f'(load average {results["meta"]["load_average_start"]})',
        '',
    ]
    lines += _tick_table(results.get('tick', {}))
    lines += _dds_table(results.get('dds'))
    lines += _conditioning_table(results.get('conditioning'))
    lines += ['Targets', f'  {"target":32s} {"goal":>12s} {"value":>12s}  status']
    for row in results['targets']:
        value = '-' if row['value'] is None else f'{row["value"]:.4g}'
        lines.append(f'  {row["name"]:32s} {row["target"]:>12s} {value:>12s}  {row["status"]}')
    return '\n'.join(lines)


def _tick_table(ticks: dict) -> list[str]:
    lines = [
        'Per tick (joint state -> torque, µs; floor = Pinocchio minimum, interleaved)',
        f'  {"scenario":12s} {"nv":>3s} {"p50":>8s} {"p99":>8s} {"max":>9s} '
        f'{"floor p50":>10s} {"ratio":>6s} {"cpu ratio":>9s} {"calls":>6s}',
    ]
    for name, row in ticks.items():
        tick, floor = row['tick_us'], row['floor_us']
        lines.append(
            f'  {name:12s} {row["nv"]:3d} {tick["median"]:8.1f} {tick["p99"]:8.1f} '
            f'{tick["max"]:9.1f} {floor["median"]:10.1f} {row["ratio"]:6.1f} '
            f'{row["ratio_cpu"]:9.1f} {row["calls_per_tick"]["total"]:6.0f}'
        )
    return [*lines, '', *_calls_table(ticks)]


def _calls_table(ticks: dict) -> list[str]:
    """Calls per tick by the module making them, one column per scenario."""
    names = list(ticks)
    modules: list[str] = []
    for row in ticks.values():
        modules += [m for m in row['calls_per_tick'].get('by_module', {}) if m not in modules]
    if not modules:
        return []
    header = ''.join(f'{name:>10s}' for name in names)
    lines = [
        'Calls per tick by the module making them (sys.setprofile)',
        f'  {"module":46s}{header}',
    ]
    for module in modules:
        counts = [
            ticks[name]['calls_per_tick'].get('by_module', {}).get(module, 0.0) for name in names
        ]
        lines.append(f'  {module:46s}' + ''.join(f'{count:10.1f}' for count in counts))
    return [*lines, '']


def _dds_table(dds: dict | None) -> list[str]:
    if dds is None:
        return ['DDS: skipped (--skip-dds)', '']
    if dds['status'] != 'ok':
        return [f'DDS: {dds["status"]}', '']
    lines = [
        'End to end over DDS (stamp -> command receipt, µs; null node = rclpy + DDS alone)',
        f'  {"node":10s} {"rate":>6s} {"sent":>7s} {"missed":>7s} {"late":>6s} {"p50":>8s} '
        f'{"p99":>8s} {"max":>9s} {"node CPU":>8s} {"probe CPU":>9s}',
    ]
    for node, key in (('null node', 'null_node_rates'), ('controller', 'rates')):
        for row in dds.get(key, {}).values():
            lines.append(f'  {node:10s} {_dds_row(row)}')
    return [*lines, '']


def _dds_row(row: dict) -> str:
    latency = row['latency_us'] or {'median': math.nan, 'p99': math.nan, 'max': math.nan}
    return (
        f'{row["rate_hz"]:6.0f} {row["sent"]:7d} {row["missed"]:7d} {row["late"]:6d} '
        f'{latency["median"]:8.1f} {latency["p99"]:8.1f} {latency["max"]:9.1f} '
        f'{100 * row["controller_cpu_share"]:7.1f}% {100 * row["probe_cpu_share"]:8.1f}%'
    )


def _conditioning_table(conditioning: dict | None) -> list[str]:
    if conditioning is None:
        return []
    lines = [
        'Conditioning diagnostics: cost per call (µs, median)',
        f'  {"model":18s} {"n":>4s} {"kappa":>9s} {"delta":>7s} {"delta_s":>8s} '
        f'{"kappa/delta":>11s}',
    ]
    for row in conditioning['cost']:
        lines.append(
            f'  {row["model"]:18s} {row["n"]:4d} {row["condition_number_us"]:9.1f} '
            f'{row["diagonal_ratio_us"]:7.1f} {row["scaled_diagonal_ratio_us"]:8.1f} '
            f'{row["speedup_diagonal_ratio"]:11.1f}'
        )
    lines += [
        '',
        'Rod-chain swing: |delta_s - kappa| / kappa (anchored at t = 0 / re-anchored)',
        f'  {"start":15s} {"n":>3s} {"corr":>6s} {"median":>8s} {"max":>8s} '
        f'{"median re":>10s} {"max re":>8s}',
    ]
    for row in conditioning['swing']:
        lines.append(
            f'  {row["start"]:15s} {row["n"]:3d} '
            f'{_number(row["correlation_log_kappa_log_delta"])} '
            f'{_number(row["median_relative_error"], 8)} '
            f'{_number(row["max_relative_error"], 8)} '
            f'{_number(row["median_relative_error_reanchored"], 10)} '
            f'{_number(row["max_relative_error_reanchored"], 8)}'
        )
    if conditioning.get('plot'):
        lines.append(f'  plot: {conditioning["plot"]}')
    return [*lines, '']


def _number(value: float | None, width: int = 6) -> str:
    return f'{"-":>{width}s}' if value is None else f'{value:{width}.3f}'


def plot_conditioning(costs: list[dict], swings: list[dict], path: Path) -> None:
    """Three panels as a PNG: cost against n; κ₂ and δₛ along the swings; δₛ's error."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    _plot_costs(axes[0], costs)
    _plot_swings(axes[1], axes[2], swings)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _plot_costs(axes: object, costs: list[dict]) -> None:
    chains = sorted(
        (row for row in costs if row['model'].startswith('serial_chain')), key=lambda row: row['n']
    )
    sizes = [row['n'] for row in chains]
    for key, label in (
        ('condition_number_us', 'exact κ₂ (eigvalsh)'),
        ('diagonal_ratio_us', 'diagonal ratio δ'),
        ('scaled_diagonal_ratio_us', 'scaled diagonal ratio δₛ'),
    ):
        axes.loglog(sizes, [row[key] for row in chains], 'o-', label=label)
    axes.set(xlabel='links n', ylabel='µs per call (median)', title='Cost per sample, chains')
    axes.legend()


def _plot_swings(values_axes: object, error_axes: object, swings: list[dict]) -> None:
    for record in swings:
        series, label = record['series'], f'n={record["n"]}, {record["start"]}'
        (line,) = values_axes.semilogy(series['time_s'], series['condition_number'], label=label)
        values_axes.semilogy(
            series['time_s'], series['scaled_diagonal_ratio'], '--', color=line.get_color()
        )
        error_axes.semilogy(
            series['time_s'][1:], series['relative_error'][1:], color=line.get_color(), label=label
        )
    values_axes.set(xlabel='t (s)', ylabel='κ₂ (solid), δₛ (dashed)', title='Rod-chain swing')
    values_axes.legend(fontsize='small')
    error_axes.set(
        xlabel='t (s)', ylabel='|δₛ − κ₂| / κ₂', title='Estimator error (anchored at t = 0)'
    )
    error_axes.legend(fontsize='small')
