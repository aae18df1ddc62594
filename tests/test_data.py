"""Corpus loading: checksum-verified Tiny Shakespeare from a local copy or the cache, and the offline default."""

import hashlib
import socket

import pytest
from support import SHAKESPEARE

from solutions.data import load_corpus


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason="no local copy of Tiny Shakespeare")
def test_local_copy_is_verified_and_cache_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("GPTCOURSE_SHAKESPEARE", str(SHAKESPEARE))
    text = load_corpus("shakespeare")
    assert len(text.encode()) == 1_115_394
    monkeypatch.delenv("GPTCOURSE_SHAKESPEARE")
    (tmp_path / "tinyshakespeare.txt").write_bytes(SHAKESPEARE.read_bytes())
    assert load_corpus("shakespeare", cache_dir=str(tmp_path)) == text


def test_a_corrupted_copy_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "tinyshakespeare.txt"
    bad.write_text("First Citizen:\nNot really.\n")
    monkeypatch.setenv("GPTCOURSE_SHAKESPEARE", str(bad))
    with pytest.raises(ValueError, match="not Tiny Shakespeare"):
        load_corpus("shakespeare")
    monkeypatch.delenv("GPTCOURSE_SHAKESPEARE")
    with pytest.raises(ValueError, match="not Tiny Shakespeare"):
        load_corpus("shakespeare", cache_dir=str(tmp_path))


def test_default_corpus_is_offline_and_stable():
    first, second = load_corpus("default"), load_corpus("default")
    assert first == second and len(first) > 100_000
    assert hashlib.sha256(first.encode()).hexdigest() == hashlib.sha256(second.encode()).hexdigest()


def test_unknown_name_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown corpus 'no/such/file.txt': no such file"):
        load_corpus("no/such/file.txt")
    with pytest.raises(ValueError, match="is a folder: give a text file in it"):
        load_corpus(str(tmp_path))


def test_a_silent_network_falls_back_to_the_default_corpus(tmp_path, monkeypatch, capsys):
    """A connection that is accepted and then never answered (a hanging proxy or network) ends
    at the download's timeout, and the notebook goes on with the default corpus, saying why."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete in the backlog; nobody ever reads or answers
        monkeypatch.delenv("GPTCOURSE_SHAKESPEARE", raising=False)
        monkeypatch.setenv("GPTCOURSE_CACHE", str(tmp_path))
        for name in ("https_proxy", "HTTPS_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{silent.getsockname()[1]}")
        for name in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        text = load_corpus("shakespeare")
    out = capsys.readouterr().out
    assert text == load_corpus("default")
    assert "Could not download Tiny Shakespeare (timed out). Using the default corpus instead" in out, out
    assert not list(tmp_path.iterdir())  # nothing half-downloaded is cached
