"""`python -m deeppot ...` (and `torchrun -m deeppot ...`): the same command line as the `deeppot` script."""

import sys

from deeppot.cli.main import main

sys.exit(main())
