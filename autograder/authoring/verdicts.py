"""No verdict where the student's code runs: the static rule every suite file is held to.

A probe runs in the process of the student's code, which can patch ``torch.equal``,
redefine ``==`` on a tensor subclass or fake ``isinstance``: a comparison made there
can be faked. So the parent computes every verdict, and ``gptcourse check-stage``
applies this rule to ``public.py`` and ``hidden.py``:

    In a probe (a function decorated with ``<suite>.case(...)``), and in every function
    or class of the same file that a probe reaches (calls or hands on, directly or
    through another such function), no comparison may have a student-derived operand.

- A *comparison* is an operator ``==  !=  <  <=  >  >=  is  is not  in  not in``, or a
  call (as a function or as a method) of ``equal``, ``allclose``, ``isclose``,
  ``array_equal``, ``assert_close``, ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge``,
  ``all``, ``any``, ``bool``, ``isinstance``, ``issubclass``, ``hasattr`` or
  ``callable``. Its operands are the operator's sides, or the call's arguments and, for
  a method, the object it is called on.
- A name is *student-derived* when it is the probe's first parameter (the notebook's
  namespace); a parameter of a reached function to which a call passes a
  student-derived argument (every parameter, when the function is handed on rather
  than called, or is a method other than ``__init__``, a nested function or a lambda:
  the student's code may call those with anything); bound (assigned, augmented, looped
  over, ``with ... as``, a comprehension's target, ``:=``) from an expression that
  mentions a student-derived name; mentioned in the arguments of a call whose callee
  mentions one (the student's code may change what it is handed); or the object whose
  method is called with a student-derived argument, or whose item or attribute is
  assigned one (``out.append(model(x))``). Names of the file's functions, classes and
  imports, and builtins, are never student-derived. An operand is student-derived
  when it mentions a student-derived name.
- ``x is None`` and ``x is not None`` are no comparison (no object can fake its
  identity with None); they may steer a helper (``if targets is not None: ...``), and
  the judge refuses the boolean should one reach the output.

Truth tests (``if model.training:``, ``"train" if m.training else "eval"``) are no
comparison: they read raw state. The judge refuses any boolean in a probe's output
(``kit.runtime.boolean_in``), which catches what reaches the output another way.

Example:
    >>> verdict_problems('''
    ... @suite.case("q", "not modified", points=1, check=equal(), expected=True)
    ... def _(ns):
    ...     x = _X.clone()
    ...     ns.f(x)
    ...     return torch.equal(x, _X)
    ... ''', "hidden.py")
    ['hidden.py:6: probe `q: not modified` compares student-derived values (torch.equal(x, _X)):
    return them and let the check compare']
"""

import ast
import builtins

COMPARING = frozenset(
    {
        "equal",
        "allclose",
        "isclose",
        "array_equal",
        "assert_close",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "all",
        "any",
        "bool",
        "isinstance",
        "issubclass",
        "hasattr",
        "callable",
        "near",  # the kit's never-raising comparisons: for checks and hints, never in a probe
        "same_shape",
    }
)
_BUILTINS = frozenset(dir(builtins))


def _is_probe(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "case"
        for d in node.decorator_list
    )


def _probe_name(node: ast.FunctionDef) -> str:
    call = next(
        d
        for d in node.decorator_list
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "case"
    )
    parts = [a.value for a in call.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return ": ".join(parts) if len(parts) == 2 else node.name


def _body_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node of a function's or class's body (decorators and defaults left out)."""
    if isinstance(node, ast.Lambda):
        return list(ast.walk(node.body))
    return [n for stmt in node.body for n in ast.walk(stmt)]


def _names(node: ast.AST | None) -> set[str]:
    return set() if node is None else {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _base(target: ast.AST) -> ast.AST:
    while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
        target = target.value
    return target


def _targets(target: ast.AST) -> set[str]:
    """The names a binding target binds (or, for ``a[i] = ...`` and ``a.x = ...``, changes)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_targets(t) for t in target.elts)) if target.elts else set()
    base = _base(target)
    return {base.id} if isinstance(base, ast.Name) else set()


def _parameters(node: ast.AST) -> set[str]:
    args = node.args
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg for a in every}


def _callee_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_none_test(node: ast.Compare) -> bool:
    return (
        len(node.ops) == 1
        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and any(isinstance(side, ast.Constant) and side.value is None for side in (node.left, node.comparators[0]))
    )


def _operands(node: ast.AST) -> list[ast.AST] | None:
    """The operands of a comparison, or None when ``node`` is none."""
    if isinstance(node, ast.Compare):
        return None if _is_none_test(node) else [node.left, *node.comparators]
    if isinstance(node, ast.Call) and _callee_name(node) in COMPARING:
        operands = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(node.func, ast.Attribute):
            operands.append(node.func.value)
        return operands
    return None


def _derived(unit: ast.AST, seeds: set[str], fixed: set[str]) -> set[str]:
    """The student-derived names of one function or class body (a fixed point)."""
    nodes = _body_nodes(unit)
    tainted = set(seeds)
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            tainted |= _parameters(node)
    tainted -= fixed
    while True:
        before = len(tainted)
        for node in nodes:
            bound: set[str] = set()
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                if _names(node.value) & tainted:
                    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        bound |= _targets(target)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _names(node.iter) & tainted:
                bound |= _targets(node.target)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None and _names(item.context_expr) & tainted:
                        bound |= _targets(item.optional_vars)
            elif isinstance(node, ast.NamedExpr) and _names(node.value) & tainted:
                bound |= _targets(node.target)
            elif isinstance(node, ast.Call):
                arguments = set().union(*(_names(a) for a in node.args), *(_names(k.value) for k in node.keywords))
                if _names(node.func) & tainted:
                    bound |= arguments
                if arguments & tainted and isinstance(node.func, ast.Attribute):
                    bound |= _targets(node.func.value)
            tainted |= bound - fixed
        if len(tainted) == before:
            return tainted


def _module_names(tree: ast.Module) -> tuple[dict[str, ast.AST], set[str]]:
    """The file's functions and classes by name, and every name bound to a def, class or import."""
    units: dict[str, ast.AST] = {}
    fixed = set(_BUILTINS)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            fixed.add(node.name)
            if not _is_probe(node):
                units[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            fixed |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return units, fixed


def _seeds(helper: ast.AST, call: ast.Call | None, tainted: set[str]) -> set[str] | None:
    """The parameters of ``helper`` that a reference to it makes student-derived.

    ``call`` is the call that reaches it (None: handed on, so every parameter). For a
    class, the parameters of its ``__init__`` (None when the class defines none).
    """
    if isinstance(helper, ast.ClassDef):
        init = next((n for n in helper.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            return None
        function, skip = init, 1
    else:
        function, skip = helper, 0
    if call is None:
        return _parameters(function)
    args = function.args
    positional = [a.arg for a in args.posonlyargs + args.args][skip:]
    seeds: set[str] = set()
    for i, value in enumerate(call.args):
        if _names(value) & tainted:
            if isinstance(value, ast.Starred) or i >= len(positional):
                return _parameters(function)
            seeds.add(positional[i])
    for keyword in call.keywords:
        if _names(keyword.value) & tainted:
            if keyword.arg is None or keyword.arg not in _parameters(function):
                return _parameters(function)
            seeds.add(keyword.arg)
    return seeds


def verdict_problems(source: str, filename: str) -> list[str]:
    """Where a suite file's probes (or the helpers they reach) compare student-derived values."""
    tree = ast.parse(source)
    units, fixed = _module_names(tree)
    problems: list[str] = []
    queue: list[tuple[ast.AST, str, set[str]]] = []
    for probe in (n for n in tree.body if _is_probe(n)):
        params = [a.arg for a in probe.args.posonlyargs + probe.args.args]
        queue.append((probe, f"probe `{_probe_name(probe)}`", set(params[:1])))
    done: set[tuple[str, frozenset[str]]] = set()
    flagged: set[int] = set()
    while queue:
        unit, label, seeds = queue.pop(0)
        if isinstance(unit, ast.ClassDef):
            for item in unit.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    init = item.name == "__init__"
                    params = seeds if init else _parameters(item)
                    queue.append((item, f"{label} (method {item.name})", set(params)))
            continue
        tainted = _derived(unit, seeds, fixed)
        callees = {id(n.func): n for n in _body_nodes(unit) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        for node in _body_nodes(unit):
            operands = _operands(node)
            if operands and any(_names(o) & tainted for o in operands) and node.lineno not in flagged:
                flagged.add(node.lineno)
                text = " ".join((ast.get_source_segment(source, node) or ast.unparse(node)).split())
                text = text if len(text) <= 80 else text[:77] + "..."
                problems.append(
                    f"{filename}:{node.lineno}: {label} compares student-derived values ({text}): "
                    "return them and let the check compare"
                )
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in units:
                helper = units[node.id]
                reach = _seeds(helper, callees.get(id(node)), tainted)
                key = (node.id, frozenset(reach or ()))
                if key not in done:
                    done.add(key)
                    origin = label if label.startswith("probe") else label.split(" (reached from ")[-1].rstrip(")")
                    queue.append((helper, f"helper `{node.id}` (reached from {origin})", set(reach or ())))
    return sorted(problems, key=lambda p: int(p.split(":")[1]))
