"""Exploration (run 33): `deeppot train` with torch._dynamo imported on a background thread from the start, to see
whether that import (which the first torch.optim optimizer triggers) overlaps with the data set-up on a GPU."""
import importlib
import sys
import threading

import torch  # noqa: F401  (the thread's import needs torch itself in place first)

threading.Thread(target=importlib.import_module, args=("torch._dynamo",), daemon=True).start()
from deeppot.cli.main import main  # noqa: E402

sys.exit(main())
