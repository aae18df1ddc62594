"""``python -m training train|sample ...``: also what ``torchrun -m training`` runs."""

import sys

from training.cli import main

sys.exit(main())
