"""otter-grader: otter's own commands grade through the gptcourse engine.

``gptcourse build`` writes ``release/otter/<stage>.zip``, an otter-grader autograder zip
(``autograder.build.otter_zip``) whose ``otter_config.json`` names the plugin
``plugin.GradeWithEngine``. ``otter run``, ``otter grade`` and Gradescope (through otter's
``run_autograder``) load the plugin, which

- before otter runs anything, leaves in the submission folder only the notebook and
  otter's own files (no student file reaches otter's kernel or otter's unpickling);
- in place of the student's notebook, has the engine grade it in a process of its own
  (``worker``): the student's code in the engine's confined children, every public and
  hidden test judged outside them; otter's kernel then runs an empty notebook;
- after otter's grading, puts the engine's results in place of otter's, test by test
  (``results``): a question per otter test file, its tests as otter's test cases.

The zip's ``tests/<question>.py`` declare the questions and tests for otter (names,
points, hidden or public); each case fails if ever run in a kernel, so that a plugin
that did not run can give no points. The engine, the stage's suites and fixtures travel
in the zip's ``files/gptcourse/`` (``SUPPORT``): otter's grading image and Gradescope
both unpack ``files/`` into ``/autograder/source/files``. otter also copies ``files/``
into the submission folder; one folder there, named ``gptcourse``, holds no importable
``autograder`` beside the student's notebook, and the plugin removes it before grading.
"""

import pprint

PLUGIN = "autograder.channels.otter.plugin.GradeWithEngine"  # as otter_config.json names it
SUPPORT = "files/gptcourse"  # in otter's folder of support files: the engine, the stage, its settings
NOT_IN_A_KERNEL = "graded by the gptcourse engine, never in a kernel"
PROTOCOL = 1  # the worker's JSON document, as the plugin reads it


def declaration(qid: str, cases: list[tuple[str, bool, float]]) -> str:
    """An OK-format test file declaring question ``qid`` for otter: a case per test, each
    ``(name, public, points)``, every one failing if a kernel ever runs it.

    >>> text = declaration("ngram", [("ngram: sums to one", True, 2.0)])
    >>> env = {}; exec(text, env); case = env["test"]["suites"][0]["cases"][0]
    >>> env["OK_FORMAT"], env["test"]["name"], case["name"], case["hidden"], case["points"]
    (True, 'ngram', 'ngram: sums to one', False, 2.0)
    """
    code = f">>> raise RuntimeError({NOT_IN_A_KERNEL!r})"
    test = {
        "name": qid,
        "suites": [
            {
                "cases": [
                    {"name": name, "code": code, "hidden": not public, "points": points, "locked": False}
                    for name, public, points in cases
                ],
                "scored": True,
                "setup": "",
                "teardown": "",
                "type": "doctest",
            }
        ],
    }
    header = f"# {qid}: {NOT_IN_A_KERNEL} (the zip's otter plugin)"
    return f"OK_FORMAT = True\n\n{header}\ntest = {pprint.pformat(test, width=100, sort_dicts=False)}\n"
