"""`deeppot` command line: thin subcommands that parse arguments and call the library (like DeePMD-kit's `dp`)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from deeppot.config.schema import ConfigError
from deeppot.data import DataError
from deeppot.train.trainer import TrainingError

log = logging.getLogger("deeppot")


def _train(args: argparse.Namespace) -> None:
    from deeppot.config.input import load_input, normalize_input, write_out_json
    from deeppot.train.trainer import RunOptions, Trainer, pick_device

    input_path = Path(args.INPUT)
    config = normalize_input(load_input(input_path))
    _resolve_data_paths(config, input_path.parent)
    options = RunOptions(workdir=Path.cwd(), device=pick_device(args.device),
                         restart=Path(args.restart) if args.restart else None,
                         init_model=Path(args.init_model) if args.init_model else None,
                         skip_neighbor_stat=args.skip_neighbor_stat,
                         cuda_graph=False if args.no_cuda_graph else None,
                         fused_kernels=not args.no_fused_kernels, tf32=args.tf32)
    log.info("training on %s", options.device)
    trainer = Trainer(config, options)
    write_out_json(config, args.output)
    if args.profile:
        from deeppot.train.profile import profile_training

        print(profile_training(trainer, trace=config["training"]["profiling_file"]))
        return
    trainer.run()


def _resolve_data_paths(config: dict, input_dir: Path) -> None:
    """Data paths are taken relative to the working directory (as DeePMD-kit does) and, failing that, to the
    folder of input.json, so `deeppot train examples/water/input.json` works from anywhere."""
    for key in ("training_data", "validation_data"):
        section = config["training"].get(key)
        if not section:
            continue
        systems = section["systems"]
        paths = [systems] if isinstance(systems, str) else list(systems)
        resolved = [p if Path(p).exists() or not (input_dir / p).exists() else str(input_dir / p) for p in paths]
        section["systems"] = resolved if isinstance(systems, list) else resolved[0]


def _freeze(args: argparse.Namespace) -> None:
    from deeppot.io import save_model
    from deeppot.io.model_file import load_checkpoint_model
    from deeppot.train.checkpoint import resolve_checkpoint

    checkpoint = resolve_checkpoint(args.checkpoint_folder)
    output = args.output if Path(args.output).suffix else args.output + ".dp"
    save_model(load_checkpoint_model(checkpoint), output)
    log.info("frozen %s to %s", checkpoint, output)


def _test(args: argparse.Namespace) -> None:
    from deeppot.data import find_systems
    from deeppot.evaluate import run_test
    from deeppot.io import load_model
    from deeppot.train.trainer import pick_device

    model = load_model(args.model, pick_device(args.device))
    systems = find_systems(args.system)
    report = run_test(model, systems, numb_test=args.numb_test, detail_file=args.detail_file,
                      shuffle_test=args.shuffle_test, rand_seed=args.rand_seed)
    if args.plot:
        from deeppot.evaluate.plots import parity_plot

        parity_plot(report, args.plot)
        log.info("parity plot written to %s", args.plot)


def _convert(args: argparse.Namespace) -> None:
    from deeppot.io.convert import convert

    convert(args.INPUT, args.OUTPUT)
    log.info("converted %s to %s", args.INPUT, args.OUTPUT)


def _plot(args: argparse.Namespace) -> None:
    from deeppot.evaluate import plot_lcurve

    plot_lcurve(args.LCURVE, args.output)
    log.info("learning curves written to %s", args.output)


def _model_devi(args: argparse.Namespace) -> None:
    from deeppot.infer.model_devi import make_model_devi

    if args.set_prefix != "set":
        log.warning("-S/--set-prefix is deprecated and ignored (as in DeePMD-kit): sets are always set.*")
    # like DeePMD-kit's format_model_suffix: a name without a model suffix gets the default one
    suffixes = (".dp", ".yaml", ".yml", ".pt", ".pth")
    models = [m if m.lower().endswith(suffixes) else m + ".dp" for m in args.models]
    make_model_devi(models, args.system, args.output, args.frequency, real_error=args.real_error,
                    atomic=args.atomic, relative=args.relative, relative_v=args.relative_v, device=args.device)
    log.info("model deviation written to %s", args.output)


def _compress(args: argparse.Namespace) -> None:
    from deeppot.io.compress import compress_file

    compress_file(args.input, args.output, args.step, args.extrapolate, args.frequency, args.training_script)
    log.info("compressed %s to %s", args.input, args.output)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deeppot", description="Fast Deep Potential training, DeePMD-kit compatible")
    parser.add_argument("-v", "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a model from a DeePMD-kit input.json")
    p.add_argument("INPUT")
    p.add_argument("-o", "--output", default="out.json", help="normalised input written here")
    start = p.add_mutually_exclusive_group()
    start.add_argument("-r", "--restart", help="continue from a checkpoint (.pt)")
    start.add_argument("-i", "--init-model", help="start from another model's weights (.pt or .dp)")
    p.add_argument("--skip-neighbor-stat", action="store_true", help="skip the neighbour statistics of the data")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available)")
    p.add_argument("--no-cuda-graph", action="store_true", help="run the step eagerly on a GPU (for debugging)")
    p.add_argument("--no-fused-kernels", action="store_true",
                   help="keep the plain PyTorch embedding net on a GPU (the fused Triton kernels are the default)")
    p.add_argument("--tf32", action="store_true",
                   help="mixed precision: TF32 GEMM inputs in the fused embedding kernels (float32 models)")
    p.add_argument("--profile", action="store_true", help="profile a few steps, print the top kernels, write a trace")
    p.set_defaults(func=_train)

    p = sub.add_parser("freeze", help="write a frozen model (DeePMD-kit .dp format)")
    p.add_argument("-c", "--checkpoint-folder", default=".", help="folder with a 'checkpoint' file, or a .pt")
    p.add_argument("-o", "--output", default="frozen_model.dp")
    p.set_defaults(func=_freeze)

    p = sub.add_parser("test", help="errors of a model on labelled systems, like `dp test`")
    p.add_argument("-m", "--model", default="frozen_model.dp")
    p.add_argument("-s", "--system", default=".", help="system folder, searched recursively")
    p.add_argument("-n", "--numb-test", type=int, default=0, help="frames per system (0: all)")
    p.add_argument("-r", "--rand-seed", type=int, default=None)
    p.add_argument("--shuffle-test", action="store_true")
    p.add_argument("-d", "--detail-file", default=None, help="prefix of the .e.out/.f.out/.v.out detail files")
    p.add_argument("--plot", default=None, help="write energy/force parity plots to this PNG")
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=_test)

    p = sub.add_parser("convert", help="convert a model (.dp/.yaml, deeppot or DeePMD-kit .pt) to .dp or .yaml")
    p.add_argument("INPUT")
    p.add_argument("OUTPUT")
    p.set_defaults(func=_convert)

    p = sub.add_parser("compress", help="tabulate the embedding nets of a model for faster inference, "
                       "like `dp compress`")
    p.add_argument("-i", "--input", default="frozen_model.dp", help="model to compress (.dp/.yaml/.pt)")
    p.add_argument("-o", "--output", default="frozen_model_compressed.dp", help="compressed model (.dp/.yaml)")
    p.add_argument("-s", "--step", type=float, default=0.01, help="table stride (the second table uses 10x)")
    p.add_argument("-e", "--extrapolate", type=float, default=5.0, help="the table spans up to this times the "
                   "upper bound of the environment matrix")
    p.add_argument("-f", "--frequency", type=int, default=-1, help="overflow-check frequency, stored in the "
                   "table info (-1: off; deeppot does not check)")
    p.add_argument("-t", "--training-script", default=None, help="input.json whose training data gives "
                   "min_nbor_dist (needed when the model does not store it)")
    p.set_defaults(func=_compress)

    p = sub.add_parser("plot", help="plot learning curves from lcurve.out")
    p.add_argument("LCURVE", nargs="?", default="lcurve.out")
    p.add_argument("-o", "--output", default="lcurve.png")
    p.set_defaults(func=_plot)

    p = sub.add_parser("model-devi", help="model deviation of an ensemble on systems, like `dp model-devi`")
    p.add_argument("-m", "--models", nargs="+", default=[f"graph.00{i}" for i in range(4)],
                   help="frozen models (.dp, .yaml, .pt); a name without a model suffix gets .dp")
    p.add_argument("-s", "--system", default=".", help="system folder, searched recursively")
    p.add_argument("-S", "--set-prefix", default="set", help="deprecated and ignored, as in DeePMD-kit")
    p.add_argument("-o", "--output", default="model_devi.out", help="output file (appended to)")
    p.add_argument("-f", "--frequency", type=int, default=1,
                   help="steps between frames of the trajectory: the step column is frame index x frequency")
    p.add_argument("--real_error", "--real-error", dest="real_error", action="store_true",
                   help="RMS error of the models against the systems' labels instead of their deviation")
    p.add_argument("--atomic", action="store_true", help="also write the force deviation of each atom")
    p.add_argument("--relative", type=float, default=None, metavar="LEVEL",
                   help="relative force deviation: eps_i / (|<F_i>| + LEVEL)")
    p.add_argument("--relative_v", "--relative-v", dest="relative_v", type=float, default=None, metavar="LEVEL",
                   help="relative virial deviation: eps_ab / (||<W/N>|| + LEVEL), one magnitude per frame")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.set_defaults(func=_model_devi)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stdout, format="%(asctime)s DEEPPOT %(levelname)s %(message)s",
                        datefmt="%H:%M:%S")
    try:
        args.func(args)
    except (ConfigError, DataError, FileNotFoundError, TrainingError, ValueError) as err:
        # user errors get one clear line, not a traceback (use -v DEBUG for the traceback)
        log.debug("traceback", exc_info=True)
        print(f"deeppot {args.command}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
