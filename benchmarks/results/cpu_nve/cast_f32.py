"""Cast a float64 .dp model to float32 (same weights rounded to float32): python cast_f32.py IN.dp OUT.dp

Builds the same architecture with descriptor and fitting precision float32 and loads the float64 state dict into
it (load_state_dict rounds each tensor), so the float32 NVE run uses exactly the trained model at float32 precision.
"""

import copy
import sys

from deeppot.io import load_model, save_model
from deeppot.model import EnergyModel

src, dst = sys.argv[1], sys.argv[2]
m64 = load_model(src)
cfg = copy.deepcopy(m64.config)
cfg["descriptor"]["precision"] = cfg["fitting_net"]["precision"] = "float32"
m32 = EnergyModel.from_config(cfg)
m32.load_state_dict(m64.state_dict())
m32.min_nbor_dist.copy_(m64.min_nbor_dist)
save_model(m32, dst)
print(f"{src} -> {dst}: descriptor {m32.descriptor.dtype}, fitting {m32.fitting.dtype}")
