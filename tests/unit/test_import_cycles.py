"""No import cycle among cyborg_like's modules (docs/design.md, "Rooms").

Two modules importing each other, directly or around a ring, cannot be
read or tested alone, and which one loads first decides what the other
sees. The imports counted are those run when a module is loaded (any
statement outside a function body); an import inside a function is how a
module reaches one that is only needed later, and is not an edge here.
"""

import ast
import functools
import pathlib

import cyborg_like

PACKAGE = pathlib.Path(cyborg_like.__file__).parent


def _modules(package_dir, package_name):
    """{dotted name: (path, is it a package's __init__)}."""
    found = {}
    for path in sorted(package_dir.rglob('*.py')):
        parts = [package_name, *path.relative_to(package_dir).parts]
        parts[-1] = parts[-1][:-3]
        is_package = parts[-1] == '__init__'
        if is_package:
            parts.pop()
        found['.'.join(parts)] = (path, is_package)
    return found


def _loaded_imports(tree):
    """The import statements run when the module loads: everything but
    the bodies of functions."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                   ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def _targets(node, name, is_package, known):
    """The dotted names an import statement of module ``name`` loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ''
    if node.level:
        anchor = (name if is_package else name.rpartition('.')[0]).split('.')
        anchor = anchor[:len(anchor) - node.level + 1]
        base = '.'.join(anchor + ([base] if base else []))
    # ``from package import module`` loads the module; ``from module
    # import name`` loads the module.
    return [base + '.' + alias.name
            if base + '.' + alias.name in known else base
            for alias in node.names]


def _known(target, known):
    """The module a dotted name lies in (its longest known prefix)."""
    while target and target not in known:
        target = target.rpartition('.')[0]
    return target or None


def import_graph(package_dir, package_name):
    """{module: {modules of the package it imports when it loads}}."""
    known = _modules(package_dir, package_name)
    graph = {}
    for name, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = set()
        for node in _loaded_imports(tree):
            for target in _targets(node, name, is_package, known):
                module = _known(target, known)
                if module is not None and module != name:
                    edges.add(module)
        graph[name] = edges
    return graph


def cycles(graph):
    """The strongly connected components of more than one module
    (Tarjan's algorithm), each sorted, in order."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


@functools.cache
def _project_graph():
    return import_graph(PACKAGE, 'cyborg_like')


def _described(graph, components):
    return '\n'.join(
        '%s -> %s' % (module, sorted(graph[module] & set(component)))
        for component in components for module in component)


def test_no_import_cycle_among_cyborg_like_modules():
    graph = _project_graph()
    found = cycles(graph)
    assert found == [], 'import cycles:\n' + _described(graph, found)


def test_the_graph_holds_the_imports_of_the_db_layer():
    graph = _project_graph()
    # The cross-cutting pieces are imported by the feature modules ...
    assert {'cyborg_like.db.arq_handles', 'cyborg_like.db.arq_rows',
            'cyborg_like.db.lease_windows',
            'cyborg_like.db.api'} <= graph['cyborg_like.db.arqs']
    assert 'cyborg_like.db.host_changes' in graph[
        'cyborg_like.db.arq_handles']
    # The admission rules are common/'s, applied by binds, scheduling and
    # leases alike.
    for module in ('arqs', 'scheduling', 'leases'):
        assert 'cyborg_like.common.admission' in graph[
            'cyborg_like.db.' + module]
    assert 'cyborg_like.db.change_recorder' in graph['cyborg_like.db.api']
    # ... and import nothing of the package but the models (and common/).
    assert graph['cyborg_like.db.host_changes'] == {'cyborg_like.db.models'}
    assert graph['cyborg_like.db.lease_windows'] == {
        'cyborg_like.db.models', 'cyborg_like.common.states'}
    assert graph['cyborg_like.db.change_recorder'] == {
        'cyborg_like.db.models', 'cyborg_like.db.generations',
        'cyborg_like.common.deadlines', 'cyborg_like.common.exception'}


def _package(root, files):
    for relative, text in files.items():
        path = root / 'pkg' / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / 'pkg'


def test_a_ring_of_module_level_imports_is_found(tmp_path):
    package = _package(tmp_path, {
        '__init__.py': '',
        'a.py': 'from pkg import b\n',
        'b.py': 'try:\n    import pkg.sub.c\nexcept ImportError:\n'
                '    pass\n',
        'sub/__init__.py': '',
        'sub/c.py': 'from .. import a\n',
        # Back to ``a`` from inside a function only: no edge, no cycle.
        'd.py': 'from pkg.a import b\n',
        'e.py': 'def later():\n    from pkg import d\n',
        'f.py': 'from pkg import e\nfrom pkg.sub.c import a\n',
    })
    graph = import_graph(package, 'pkg')
    assert graph['pkg.d'] == {'pkg.a'}
    assert graph['pkg.e'] == set()
    assert cycles(graph) == [['pkg.a', 'pkg.b', 'pkg.sub.c']]


def test_two_modules_importing_each_other_are_a_cycle(tmp_path):
    package = _package(tmp_path, {
        '__init__.py': '',
        'api.py': 'import pkg.changes\n',
        'changes.py': 'class Log:\n    from pkg import api\n',
    })
    assert cycles(import_graph(package, 'pkg')) == [['pkg.api',
                                                     'pkg.changes']]
