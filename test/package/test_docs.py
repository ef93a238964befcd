"""The documentation agrees with the code: generated pages, links, example commands, citations.

README.md and docs/*.md are checked against what they describe: docs/parameters.md must be what
dev/generate_parameter_docs.py renders from the schemas now; every relative link must reach a
file (and heading); every example command must name real executables, options, launch
arguments, parameters (checked against the node's schema) and topics (checked against the
names the nodes' source declares); every Python example must run. No file may cite a document
its reader does not have.
"""

from collections.abc import Callable, Iterator
import configparser
import importlib
import importlib.util
from pathlib import Path
import re
import shlex

import pytest
from rclpy.lifecycle import LifecycleNode
import yaml

from wbc_control.config.schema import SchemaError, load_schema

REPO = Path(__file__).resolve().parents[2]
README = REPO / 'README.md'
DOC_PAGES = sorted((REPO / 'docs').glob('*.md'))
PAGES = [README, REPO / 'CHANGELOG.md', *DOC_PAGES]
README_MAX_LINES = 220
NODES = ('wbc_controller', 'wbc_diagnostics', 'wbc_sim')
#: Managed (lifecycle) nodes, by the module and class that implement them.
MANAGED_NODES = {'wbc_controller': ('wbc_control.ros.controller_node', 'ControllerNode')}
#: The ROS 2 lifecycle's transitions, as `ros2 lifecycle set` names them.
LIFECYCLE_TRANSITIONS = ('configure', 'activate', 'deactivate', 'cleanup', 'shutdown')
#: Commands of installation pages that need a network, a ROS installation or root, so they are
#: documented but not checked here. README.md may not use them: each of its commands is checked.
UNCHECKED_PROGRAMS = ('git', 'mkdir', 'cd', 'rosdep', 'colcon', 'source', 'pip', '.')
SHELL_KEYWORDS = ('for', 'do', 'done', 'while', 'if', 'then', 'fi')
MUTMUT_COMMANDS = ('run', 'results', 'show', 'browse', 'apply')
#: Pages whose ```python blocks are complete programs, run by the tests.
RUNNABLE_EXAMPLES = [README, REPO / 'docs' / 'controller.md']


def page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def load_generator():
    path = REPO / 'dev' / 'generate_parameter_docs.py'
    spec = importlib.util.spec_from_file_location('generate_parameter_docs', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parameters_page_is_generated_from_the_schemas() -> None:
    generator = load_generator()
    current = generator.OUTPUT.read_text(encoding='utf-8')
    if current != generator.render():
        pytest.fail(
            f'docs/parameters.md differs from the schemas: run `{generator.COMMAND}`',
            pytrace=False,
        )


def test_parameter_tables_in_the_pages_are_generated_from_the_schemas() -> None:
    """docs/controller.md's tables of the payload and integral action, and any other page's."""
    generator = load_generator()
    texts = {page: page.read_text(encoding='utf-8') for page in DOC_PAGES}
    tables = {page for page, text in texts.items() if generator.BLOCK.search(text)}
    assert REPO / 'docs' / 'controller.md' in tables
    stale = [
        page_id(page) for page in tables if texts[page] != generator.render_tables(texts[page])
    ]
    if stale:
        pytest.fail(
            f'parameter tables of {", ".join(stale)} differ from the schemas: run '
            f'`{generator.COMMAND}`',
            pytrace=False,
        )


def test_readme_reads_in_ten_minutes() -> None:
    lines = README.read_text(encoding='utf-8').count('\n')
    assert lines <= README_MAX_LINES, f'README.md has {lines} lines (at most {README_MAX_LINES})'


# --- links -------------------------------------------------------------------------------------

FENCE = re.compile(r'^```.*?^```', re.S | re.M)
CODE_SPAN = re.compile(r'`[^`\n]*`')
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans (their brackets are not links)."""
    return CODE_SPAN.sub('', FENCE.sub('', text))


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file."""
    seen: dict[str, int] = {}
    result = set()
    for line in FENCE.sub('', path.read_text(encoding='utf-8')).splitlines():
        match = re.match(r'#{1,6}\s+(.*?)\s*#*$', line)
        if not match:
            continue
        slug = re.sub(r'[^\w\- ]', '', match.group(1).lower()).replace(' ', '-')
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f'{slug}-{count}')
    return result


def relative_links(path: Path) -> Iterator[str]:
    for target in LINK.findall(prose(path.read_text(encoding='utf-8'))):
        if not re.match(r'[a-z][a-z0-9+.-]*:', target):
            yield target


@pytest.mark.parametrize('page', PAGES, ids=page_id)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition('#')
        destination = (page.parent / file_part).resolve() if file_part else page
        if not destination.exists():
            broken.append(f'{target} (no file {destination.relative_to(REPO)})')
        elif anchor and destination.suffix == '.md' and anchor not in anchors(destination):
            broken.append(f'{target} (no heading #{anchor} in {destination.name})')
    assert not broken, f'{page_id(page)}: broken links:\n  ' + '\n  '.join(broken)


# --- example commands --------------------------------------------------------------------------


def code_blocks(path: Path, language: str) -> list[str]:
    pattern = re.compile(rf'^```{language}\n(.*?)^```', re.S | re.M)
    return pattern.findall(path.read_text(encoding='utf-8'))


def commands(path: Path) -> list[str]:
    """Every command line of the page's bash blocks (continuations joined, comments dropped)."""
    lines = []
    for block in code_blocks(path, 'bash'):
        text = block.replace('\\\n', ' ')
        for line in text.splitlines():
            line = line.split(' #', 1)[0].strip()
            if line and not line.startswith('#'):
                lines += [part.strip() for part in line.split('&&')]
    return lines


def source_text() -> str:
    return '\n'.join(
        path.read_text(encoding='utf-8') for path in sorted((REPO / 'wbc_control').rglob('*.py'))
    )


def check_topic(topic: str) -> None:
    """The topic is one the nodes declare (absolute, or private as ``~/...``)."""
    source = source_text()
    parts = topic.strip('/').split('/')
    if parts[0] in NODES and len(parts) > 1:
        private = '/'.join(parts[1:])
        if len(parts) == 3 and parts[2] in ('target', 'trajectory'):
            pattern = r"'~/\{[^}]+\}/" + parts[2] + "'"
            assert re.search(pattern, source), f'{topic}: no task {parts[2]} topic'
        else:
            assert f"'~/{private}'" in source, f'{topic}: no node publishes ~/{private}'
    else:
        assert f"'{topic}'" in source, f'{topic}: no node declares this topic'


def check_message(type_name: str, fields: object) -> None:
    package, _, name = type_name.replace('/msg/', '/').partition('/')
    message_class = getattr(importlib.import_module(f'{package}.msg'), name)
    _check_fields(message_class(), fields, type_name)


def _check_fields(message: object, fields: object, where: str) -> None:
    if not isinstance(fields, dict):
        return
    declared = message.get_fields_and_field_types()
    for key, value in fields.items():
        assert key in declared, f'{where}: no field {key!r}'
        _check_fields(getattr(message, key), value, f'{where}.{key}')


def node_schema(node: str):
    try:
        return load_schema(node)
    except SchemaError:
        return load_schema('robot_model')  # no schema yet: only the shared parameters are known


#: Parameters rclpy declares on every node.
ROS_PARAMETERS = {'use_sim_time': (True, False)}


def check_parameter(node: str, name: str, value: str | None = None, live: bool = False) -> None:
    """`name` is declared by `node`, `value` passes its rules, and it is live if set live."""
    if name in ROS_PARAMETERS:
        assert yaml.safe_load(value or 'true') in ROS_PARAMETERS[name], f'{name}:={value}'
        return
    schema = node_schema(node)
    spec = schema.lookup(name)
    if spec is None and schema.node != node:
        return
    assert spec is not None, f'{node} declares no parameter {name!r}'
    assert spec.live or not live, f'{node}: {name} is read-only, `ros2 param set` fails'
    if value is not None and not value.startswith('$('):
        spec.check(yaml.safe_load(value), name)


def check_ros_args(node: str, args: list[str]) -> None:
    if not args:
        return
    assert args[0] == '--ros-args', f'{node}: expected --ros-args, got {args}'
    tokens = iter(args[1:])
    for token in tokens:
        if token == '--params-file':
            params = next(tokens)
            if params.startswith('config/'):
                assert (REPO / params).exists(), f'no file {params}'
        elif token == '-p':
            name, _, value = next(tokens).partition(':=')
            check_parameter(node, name, value)
        elif token == '-r':
            assert ':=' in next(tokens)
        else:
            pytest.fail(f'{node}: unexpected ROS argument {token!r}')


def console_scripts() -> list[str]:
    text = (REPO / 'setup.py').read_text(encoding='utf-8')
    return re.findall(r"'(\w+) = [\w.]+:\w+'", text)


def parse_with(module: str, args: list[str]) -> None:
    parse = importlib.import_module(module).parse_arguments
    try:
        parse(args)
    except SystemExit as exit_:
        assert exit_.code == 0, f'{module} refuses {args}'


def check_run_sh(args: list[str]) -> None:
    distros = re.search(r"DISTROS='([^']*)'", (REPO / 'run.sh').read_text()).group(1).split()
    command, rest = args[0], args[1:]
    assert command in ('demo', 'test'), f'./run.sh has no command {command!r}'
    if rest[:1] == ['--distro']:
        assert rest[1] in distros, f'./run.sh: unknown distribution {rest[1]}'
        rest = rest[2:]
    if command == 'demo':
        parse_with('wbc_control.demo.main', rest)
    else:
        for argument in rest:
            assert argument.startswith('-') or (REPO / argument.split('::')[0]).exists()


def check_ros2(args: list[str]) -> None:
    verb = args[:2]
    if verb == ['run', 'wbc_control']:
        assert args[2] in console_scripts(), f'no executable {args[2]}'
        check_ros_args(args[2], args[3:])
    elif verb == ['launch', 'wbc_control']:
        launch_file = REPO / 'launch' / args[2]
        declared = re.findall(r"DeclareLaunchArgument\(\s*'(\w+)'", launch_file.read_text())
        for argument in args[3:]:
            assert argument.partition(':=')[0] in declared, f'{args[2]}: no argument {argument}'
    elif verb[0] == 'param' and verb[1] in ('get', 'set'):
        node = args[2].strip('/')
        assert node in NODES, f'no node {args[2]}'
        setting = verb[1] == 'set'
        check_parameter(node, args[3], args[4] if setting else None, live=setting)
    elif verb[0] == 'lifecycle' and verb[1] in ('get', 'set'):
        check_lifecycle(args[2].strip('/'), args[3] if verb[1] == 'set' else None)
    elif verb == ['topic', 'echo']:
        check_topic(args[2])
    elif verb == ['topic', 'pub']:
        rest = [argument for argument in args[2:] if argument != '--once']
        check_topic(rest[0])
        check_message(rest[1], yaml.safe_load(rest[2]))
    else:
        pytest.fail(f'no check for `ros2 {" ".join(args[:2])}`')


def check_lifecycle(node: str, transition: str | None) -> None:
    """`node` is a managed node and `transition` one of the lifecycle's."""
    assert node in MANAGED_NODES, f'{node} is not a managed (lifecycle) node'
    module, name = MANAGED_NODES[node]
    node_class = getattr(importlib.import_module(module), name)
    assert issubclass(node_class, LifecycleNode), f'{node} is not a LifecycleNode'
    assert transition is None or transition in LIFECYCLE_TRANSITIONS, f'no transition {transition}'


def check_python(args: list[str]) -> None:
    """``python -m pytest PATHS``, ``python SCRIPT``, ``python -m wbc_control.benchmark|mutmut``.

    The benchmark may run under ``-m cProfile [options]``; ``-m venv`` and ``-c`` are not
    checked.
    """
    module = 'wbc_control.benchmark'
    if module in args and args[args.index(module) - 1] == '-m':
        parse_with('wbc_control.benchmark.cli', args[args.index(module) + 1 :])
    elif args[:2] == ['-m', 'pytest']:
        paths = [argument.split('::')[0] for argument in args[2:] if argument.startswith('test')]
        for path in paths:
            assert (REPO / path).exists(), f'no test path {path}'
    elif args[:2] == ['-m', 'mutmut']:
        assert args[2] in MUTMUT_COMMANDS, f'mutmut has no command {args[2]!r}'
        config = configparser.ConfigParser()
        config.read(REPO / 'setup.cfg')
        assert config.has_option('mutmut', 'only_mutate'), 'setup.cfg configures no mutmut run'
    elif args and args[0].endswith('.py'):
        assert (REPO / args[0]).exists(), f'no script {args[0]}'
    else:
        assert args[:2] == ['-m', 'venv'] or args[:1] == ['-c'], f'no check for python {args}'


CHECKS: dict[str, Callable[[list[str]], None]] = {
    './run.sh': check_run_sh,
    'ros2': check_ros2,
    'python': check_python,
    'wbc_demo': lambda args: parse_with('wbc_control.demo.main', args),
    'wbc_bench': lambda args: parse_with('wbc_control.benchmark.cli', args),
    'wbc_faults': lambda args: parse_with('wbc_control.faults.injection', args),
    'wbc_out_of_reach': lambda args: parse_with('wbc_control.sim.out_of_reach', args),
    **{node: (lambda args, node=node: check_ros_args(node, args)) for node in NODES},
}


def check_command(line: str, page: Path) -> None:
    words = shlex.split(line)
    while words and re.match(r'\w+=', words[0]):
        words = words[1:]  # environment variables
    program, args = words[0], words[1:]
    if re.fullmatch(r'(.*/)?python3?', program):
        program = 'python'
    if program in CHECKS:
        CHECKS[program](args)
    else:
        unchecked = UNCHECKED_PROGRAMS + SHELL_KEYWORDS
        name = Path(program).name or program  # .venv-kilted/bin/pip is pip
        assert page != README and name in unchecked, f'no check for `{line}`'


@pytest.mark.parametrize('page', [README, *DOC_PAGES], ids=page_id)
def test_example_commands_name_real_things(page: Path) -> None:
    errors = []
    for line in commands(page):
        try:
            check_command(line, page)
        except Exception as error:
            errors.append(f'`{line}`: {type(error).__name__}: {error}')
    if errors:
        pytest.fail(f'{page_id(page)}:\n' + '\n'.join(errors), pytrace=False)


@pytest.mark.parametrize('page', RUNNABLE_EXAMPLES, ids=page_id)
def test_python_examples_run(page: Path) -> None:
    for block in code_blocks(page, 'python'):
        exec(compile(block, page_id(page), 'exec'), {})


# --- citations ---------------------------------------------------------------------------------

#: Names of documents a user of the repository does not have.
UNAVAILABLE = re.compile(
    r"\bseeds?\s?0\d\d|\bseeds?\s+(?:eqs?|equations?|documents?|papers?)\b|\bseed's\b|\bseeds'\s"
    r'|design\.md|shared/seeds|\.\./shared|\bissues?\s#?\d+',
    re.I,
)
SCANNED = [
    'README.md',
    'CHANGELOG.md',
    'docs',
    'wbc_control',
    'launch',
    'config',
    'test',
    'dev',
]


def scanned_files() -> Iterator[Path]:
    for name in SCANNED:
        path = REPO / name
        files = [path] if path.is_file() else sorted(path.rglob('*'))
        for file in files:
            if file.is_file() and file.suffix in ('.md', '.py', '.yaml', '.xml', '.txt'):
                if file != Path(__file__).resolve():
                    yield file


def test_no_citation_of_unavailable_documents() -> None:
    hits = []
    for file in scanned_files():
        for number, line in enumerate(file.read_text(encoding='utf-8').splitlines(), 1):
            match = UNAVAILABLE.search(line)
            if match and not (
                '../shared/launch_harness' in line and file.is_relative_to(REPO / 'test')
            ):
                hits.append(f'{file.relative_to(REPO)}:{number}: {match.group(0)!r}')
    assert not hits, 'cite the paper (author, year, equation) instead of:\n' + '\n'.join(hits)


DOC_PAGE_NAMED = re.compile(r'\bdocs/([A-Za-z0-9_.-]+\.md)')


def test_doc_pages_named_in_code_and_configs_exist() -> None:
    """A comment or message that sends the user to docs/<page>.md names a page that exists."""
    missing = []
    for file in scanned_files():
        if file.is_relative_to(REPO / 'docs') or file.name == 'CHANGELOG.md':
            continue
        for number, line in enumerate(file.read_text(encoding='utf-8').splitlines(), 1):
            for page in DOC_PAGE_NAMED.findall(line):
                if not (REPO / 'docs' / page).is_file():
                    missing.append(f'{file.relative_to(REPO)}:{number}: docs/{page}')
    assert not missing, 'no such page:\n' + '\n'.join(missing)
