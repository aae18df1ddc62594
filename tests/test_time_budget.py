"""The whole-submission time budget when hangs pile up (``runner.Limits``): once a test of a
question runs out of time, that question's later tests get ``strike_fraction`` of their
limit; once ``unstoppable_tests`` tests of a question had to be killed (code that catches
the grader's time-out), its other tests are not run. Other questions are not touched."""

from support import submission

from autograder.build.fixtures import stage_tests
from autograder.course import get_stage
from autograder.engine.pipeline import grade_submission
from autograder.engine.runner import Limits

STAGE = "01_tokenisation"
HANGING_DECODE = """
def decode(ids, itos):
    while True:
        pass
"""
UNSTOPPABLE_GET_BATCH = """
def get_batch(data, block_size, batch_size, generator=None):
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
"""


def test_hangs_shorten_their_questions_tests_and_unstoppable_code_is_given_up(tmp_path):
    tests = stage_tests(get_stage(STAGE))
    notebook = submission(
        STAGE, tmp_path, "hangs", replace={"decode": HANGING_DECODE, "get_batch": UNSTOPPABLE_GET_BATCH}
    )
    limits = Limits(case_timeout=2.0, grace=1.0)
    graded = grade_submission(notebook, tests, limits)
    by_qid: dict[str, list] = {}
    for r in graded.results:
        by_qid.setdefault(r.qid, []).append(r)

    timed_out = [r.message for r in by_qid["encode_decode"] if "did not finish within" in r.message]
    assert timed_out and "did not finish within 2 s" in timed_out[0]  # the first hang gets the whole limit
    assert all("did not finish within 0.4 s" in m and "a shorter limit" in m for m in timed_out[1:]), timed_out
    assert len(timed_out) > 1

    messages = [r.message for r in by_qid["get_batch"]]
    killed = [m for m in messages if "did not finish in time and was stopped" in m]
    given_up = [
        m for m in messages if "not run: 2 tests of this question ran out of time and could not be stopped" in m
    ]
    assert len(killed) == limits.unstoppable_tests and len(given_up) == len(messages) - len(killed), messages

    for qid in ("build_vocab", "train_val_split", "ngram", "kneser_ney"):
        assert all(r.passed for r in by_qid[qid]), [(r.key, r.message) for r in by_qid[qid] if not r.passed]
