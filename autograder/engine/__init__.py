"""The grading engine: run a submission in a confined child process, judge its raw outputs.

Shipped whole in every Gradescope zip. It imports only the kit, the standard library,
torch and numpy (``tests/test_layers.py``): never the build, the channels, the reports,
the course layout or the reference solutions. Its one pipeline (``pipeline``) is what every
channel calls: ``gptcourse grade``, the Gradescope entry point and nbgrader alike.

- ``suites``: a stage's tests, read once (``StageTests``)
- ``submission``: reading a submitted notebook
- ``runner`` (parent) and ``child`` (the confined process), with ``sandbox``, ``processes``, ``codec``
- ``judge``: raw outputs to scored results; ``results``: results.json
- ``pipeline``: load, run, judge, for one submission or a class (``progress``: a bar or plain lines)
- ``fixtures``: reading the reference's expected outputs
"""
