"""Issue 11: can part of the step be compiled, for the compiled step's speed without its start-up?

Times the force-training pass of one training batch (`deeppot.train.kernel_choice.force_training_pass`: energy,
forces with create_graph, the parameter gradients), replayed from a CUDA graph as the default step is, with the
embedding net as
  fused            the fused Triton kernels (the default path's choice for water);
  pytorch          `analytic.embed_all`, eager (every tanh, skip and product its own kernel);
  compiled-jet     the same with each layer's activation, tangent and skip (`analytic._jet_out`) under
                   torch.compile: cuBLAS GEMMs, Inductor's fused elementwise kernels;
  compiled-net     each net's whole `embed_with_tangent` under torch.compile (GEMMs and the stacked jet),
and prints one JSON line per case and variant: ms of the pass (best of 2 rounds of median-of-10), and the wall
seconds of the variant's first pass (its compile, with whatever Inductor cache the machine has).

    PYTHONPATH=$PWD python benchmarks/embed_compile_bench.py water:float64 water:float32 --data .peer/data \
        --inputs .peer/inputs
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from train_bench import make_config, parse_case

from deeppot.model import analytic
from deeppot.train.kernel_choice import force_training_pass, largest_batch, time_pass
from deeppot.train.trainer import RunOptions, Trainer

PLAIN_JET, PLAIN_NET = analytic._jet_out, analytic.embed_with_tangent


def use(variant: str, model, fused_fn) -> None:
    analytic._jet_out, analytic.embed_with_tangent = PLAIN_JET, PLAIN_NET
    model.embed_fn = fused_fn if variant == "fused" else analytic.embed_all
    if variant == "compiled-jet":
        analytic._jet_out = torch.compile(PLAIN_JET, dynamic=False)
    elif variant == "compiled-net":
        analytic.embed_with_tangent = torch.compile(PLAIN_NET, dynamic=False)


def bench(case_text: str, args: argparse.Namespace) -> None:
    case = parse_case(case_text)
    config = make_config(Path(args.inputs), Path(args.data), case, 10)
    options = RunOptions(workdir=Path(tempfile.mkdtemp()), device=torch.device("cuda"), progress=False,
                         fused_kernels=True)
    trainer = Trainer(config, options)
    model, pairs = trainer.model, largest_batch(trainer.train_data).pairs
    fused_fn = model.embed_fn
    run = force_training_pass(model, pairs)
    reference = None
    for variant in ("fused", "pytorch", "compiled-jet", "compiled-net"):
        use(variant, model, fused_fn)
        start = time.perf_counter()
        grads = run()
        torch.cuda.synchronize()
        first_s = time.perf_counter() - start
        reference = reference or grads
        deviation = max(float((g - r).abs().max() / r.abs().max().clamp(min=1e-30)) for g, r in zip(grads, reference,
                                                                                                      strict=True))
        ms = min(time_pass(run, graphed=True) for _ in range(2))
        print(json.dumps({"case": case_text, "variant": variant, "ms_per_pass": round(ms, 4),
                          "first_pass_s": round(first_s, 2), "grad_deviation_vs_fused": deviation,
                          "gpu": torch.cuda.get_device_name()}), flush=True)
    use("pytorch", model, fused_fn)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="+")
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--inputs", default="../shared/bench/inputs")
    args = p.parse_args()
    for case in args.cases:
        bench(case, args)


if __name__ == "__main__":
    main()
