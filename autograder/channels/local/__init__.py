"""The local channel, ``gptcourse grade``: a folder of submissions graded into a folder of
results (``folder``), each student named from the path an LMS export gave the file
(``identity``) and matched to the class list (``roster``), what each graded folder records
(``records``), and the class gradebook with its Canvas import (``gradebook``)."""
