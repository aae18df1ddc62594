"""No network for a notebook run: every Internet connection and name lookup fails at once,
so that a download falls back as it would offline (the course's corpus loader says so and
uses the default corpus). Local sockets (a Jupyter kernel's own) still connect.

Used two ways, from one text: ``notebook_run`` (the rule "reference notebook runs") calls
``cut_off()``; the project's tests copy this file as the ``sitecustomize.py`` of a kernel's
``PYTHONPATH``, which Python imports at start-up under that name, and which then cuts the
kernel off before any cell runs. The file imports nothing but ``socket``.

Example::

    cut_off()
    socket.create_connection(("example.org", 80))  # OSError: [Errno 101] Network is unreachable ...
"""

import socket

MESSAGE = "Network is unreachable (this run is offline)"


def _refuse(*args, **kwargs):
    raise OSError(101, MESSAGE)


def cut_off() -> None:
    """Make every Internet connection and name lookup of this process fail at once."""
    connect = socket.socket.connect

    def connect_local_only(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _refuse()
        return connect(self, address)

    socket.socket.connect = connect_local_only
    socket.socket.connect_ex = connect_local_only
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse


if __name__ == "sitecustomize":  # copied into a kernel's PYTHONPATH: cut off at start-up
    cut_off()
