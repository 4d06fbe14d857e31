"""Test order and distribution for every suite (hooks imported by
tests/conftest.py).

Tests run in a random order, so that none can lean on another's state: the
seed is printed in the header and ``--order-seed N`` repeats an order. A
gabbi file is a sequence (each test builds on the one before), so its tests
keep their order and, under pytest-xdist's ``--dist loadgroup``, one worker.
Every xdist worker gets the controller's seed, as they must all collect the
same items in the same order. Tests marked ``long`` (a minute or more of a
worker's time) start first, in random order among themselves.
"""

import random

import pytest

SEED = pytest.StashKey[int]()


def pytest_addoption(parser):
    parser.addoption(
        '--order-seed', type=int, default=None,
        help='seed of the random test order (default: a new one per run; '
             'the header names it); 0 keeps the collected order')


def pytest_configure(config):
    workerinput = getattr(config, 'workerinput', None)
    if workerinput is not None:
        seed = workerinput['order_seed']
    else:
        seed = config.getoption('order_seed')
        if seed is None:
            seed = random.randrange(1, 2 ** 31)
    config.stash[SEED] = seed


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput['order_seed'] = node.config.stash[SEED]


def pytest_terminal_summary(terminalreporter, config):
    # Also at the end, and under -q (which drops the header).
    terminalreporter.write_line(pytest_report_header(config))


def pytest_report_header(config):
    return 'test order seed: %d (--order-seed %d repeats this order)' % (
        config.stash[SEED], config.stash[SEED])


def _gabbi_suite(item):
    """The gabbi suite (YAML file) of ``item``, or None."""
    if not item.name.startswith('test_pytest['):
        return None
    from gabbi import pytester
    return pytester.get_suitename(pytester.get_cleanname(item))


def _shares_a_fixture(item):
    """Whether ``item`` uses a fixture of ours wider than a function (a
    module's cloud, an all-in-one process): its module then stays on one
    worker, which builds the fixture once."""
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for fixturedef in defs:
            if (fixturedef.scope != 'function'
                    and fixturedef.baseid.startswith('tests')):
                return True
    return False


# First among the plain hooks: xdist's worker reads the groups in its own,
# and gabbi's wrapper pairs each suite with its fixtures after all of them.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    modules = {}
    shared = set()
    for item in items:
        module = item.nodeid.split('::', 1)[0]
        suite = _gabbi_suite(item)
        if suite is not None:
            item.add_marker(pytest.mark.xdist_group(suite))
        elif _shares_a_fixture(item):
            shared.add(module)
        block = suite or item.nodeid
        modules.setdefault(module, {}).setdefault(block, []).append(item)
    for module in shared:
        for block in modules[module].values():
            for item in block:
                item.add_marker(pytest.mark.xdist_group(module))
    seed = config.stash[SEED]
    if not seed:
        return
    rng = random.Random(seed)
    order = sorted(modules)
    rng.shuffle(order)
    # Modules with a long test go out first, so that the run does not end
    # with the other workers idle while one finishes it.
    order.sort(key=lambda module: not any(
        item.get_closest_marker('long') for block in modules[module].values()
        for item in block))
    items[:] = []
    for module in order:
        blocks = list(modules[module].values())
        rng.shuffle(blocks)
        blocks.sort(key=lambda block: not block[0].get_closest_marker('long'))
        items.extend(item for block in blocks for item in block)
