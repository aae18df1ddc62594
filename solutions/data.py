"""Corpora for the course: Tiny Shakespeare (downloaded once, verified, cached) and a
default corpus made offline from the documentation that ships with every Python.

``load_corpus`` is copied into the notebooks as given code, so it is self-contained.
"""

import hashlib
import os
import urllib.request
from pathlib import Path


def load_corpus(name: str = "shakespeare", cache_dir: str | None = None, offline_ok: bool = True) -> str:
    """Return the text of a corpus: ``"shakespeare"``, ``"default"`` or a file path.

    Tiny Shakespeare (1,115,394 bytes) is looked for, in order, at ``$GPTCOURSE_SHAKESPEARE``,
    in the cache (``cache_dir``, else ``$GPTCOURSE_CACHE``, else ``~/.cache/gptcourse``), and
    then downloaded from its public address; every copy is checked against its SHA-256
    before use. Without a network, and with ``offline_ok``, it falls back to the default
    corpus: the docstrings of a fixed list of standard-library modules, which every
    Python installation has.

    Raises:
        ValueError: a file or download whose checksum does not match, or an unknown name.

    Example:
        >>> text = load_corpus("default")
        >>> len(text) > 100_000
        True
    """
    url = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
    sha256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    if name == "default":
        import importlib
        import inspect
        import warnings

        modules = [
            "abc",
            "argparse",
            "asyncio",
            "base64",
            "bisect",
            "calendar",
            "collections",
            "csv",
            "dataclasses",
            "datetime",
            "decimal",
            "difflib",
            "email",
            "enum",
            "fractions",
            "functools",
            "glob",
            "gzip",
            "hashlib",
            "heapq",
            "html",
            "http",
            "inspect",
            "io",
            "ipaddress",
            "itertools",
            "json",
            "logging",
            "mailbox",
            "math",
            "mimetypes",
            "operator",
            "optparse",
            "os",
            "pathlib",
            "pickle",
            "pprint",
            "queue",
            "random",
            "re",
            "shlex",
            "shutil",
            "socket",
            "sqlite3",
            "statistics",
            "string",
            "subprocess",
            "tarfile",
            "tempfile",
            "textwrap",
            "threading",
            "time",
            "timeit",
            "tokenize",
            "turtle",
            "typing",
            "unittest",
            "urllib",
            "uuid",
            "warnings",
            "wave",
            "weakref",
            "xml",
            "zipfile",
        ]
        parts: list[str] = []
        with warnings.catch_warnings():  # reading a few deprecated aliases (typing.io) warns
            warnings.simplefilter("ignore")
            for module_name in modules:
                try:
                    module = importlib.import_module(module_name)
                except Exception:  # a trimmed Python may lack a module: skip it
                    continue
                for obj in [module, *(getattr(module, n, None) for n in sorted(dir(module)) if not n.startswith("_"))]:
                    doc = inspect.getdoc(obj) if obj is not None else None
                    if doc and len(doc) > 80 and doc not in parts:
                        parts.append(doc)
        return "\n\n".join(parts)
    if name != "shakespeare":
        path = Path(name)
        if path.is_dir():
            raise ValueError(f"corpus {name!r} is a folder: give a text file in it, or 'shakespeare' or 'default'")
        if not path.is_file():
            raise ValueError(
                f"unknown corpus {name!r}: no such file; use 'shakespeare', 'default' or a path to a text file"
            )
        return path.read_text(encoding="utf-8")

    def verified(data: bytes, where: str) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise ValueError(f"{where} is not Tiny Shakespeare (sha256 {digest[:12]}..., expected {sha256[:12]}...)")
        return data.decode("utf-8")

    explicit = os.environ.get("GPTCOURSE_SHAKESPEARE")
    if explicit:
        return verified(Path(explicit).read_bytes(), explicit)
    cache = Path(cache_dir or os.environ.get("GPTCOURSE_CACHE") or Path.home() / ".cache" / "gptcourse")
    cached = cache / "tinyshakespeare.txt"
    if cached.is_file():
        return verified(cached.read_bytes(), str(cached))
    print(f"Downloading Tiny Shakespeare (1.1 MB, once) into {cache} ...")
    try:
        # A network that hangs gives up after 5 s without a reply (a working one answers in well under a second).
        with urllib.request.urlopen(url, timeout=5) as response:
            data = response.read()
    except OSError as exc:  # no network, a refused or silent connection, a timeout: all OSErrors
        if not offline_ok:
            raise
        reason = getattr(exc, "reason", None) or exc
        print(
            f"Could not download Tiny Shakespeare ({reason}). Using the default corpus instead: the documentation "
            "of Python's standard library, which needs no network. (Set GPTCOURSE_SHAKESPEARE "
            "to a local copy to use Shakespeare.)"
        )
        return load_corpus("default")
    text = verified(data, url)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(cached)
    return text
