"""`deeppot` command line: thin subcommands that parse arguments and call the library (like DeePMD-kit's `dp`)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from deeppot.config.schema import ConfigError
from deeppot.data import DataError
from deeppot.tools.show import ATTRIBUTES as SHOW_ATTRIBUTES
from deeppot.train.trainer import TrainingError

log = logging.getLogger("deeppot")


def _train(args: argparse.Namespace) -> None:
    from deeppot.config.input import compat_input, load_input, normalize_input, resolve_data_paths, write_out_json
    from deeppot.train import distributed
    from deeppot.train.trainer import RunOptions, Trainer, pick_device

    if args.use_pretrain_script and not args.finetune:
        raise ValueError("--use-pretrain-script goes with --finetune (deeppot takes the model section from a "
                         "pretrained model only when fine-tuning)")
    input_path = Path(args.INPUT)
    raw = load_input(input_path)
    config = normalize_input(raw)
    resolve_data_paths(config, input_path.parent)
    ranks, rank_device = distributed.from_env(args.device)  # started by torchrun: join its process group
    distributed.quiet_other_ranks(ranks)
    options = RunOptions(workdir=Path.cwd(), device=rank_device or pick_device(args.device),
                         restart=_path_or_none(args.restart),
                         init_model=_path_or_none(args.init_model or args.init_frz_model),
                         finetune=_path_or_none(args.finetune),
                         use_pretrain_script=args.use_pretrain_script,
                         skip_neighbor_stat=args.skip_neighbor_stat,
                         cuda_graph=False if args.no_cuda_graph else None,
                         fused_kernels=_fused_choice(args), tf32=args.tf32, dist=ranks,
                         compile={"auto": None, "on": True, "off": False}[args.compile])
    if ranks.enabled:
        log.info("data-parallel training: %d ranks (this is rank %d)", ranks.world_size, ranks.rank)
    log.info("training on %s", options.device)
    trainer = None
    try:
        trainer = Trainer(config, options)
        if ranks.is_main:
            write_out_json(compat_input(raw), "input_v2_compat.json")  # as `dp train` writes them
            write_out_json(config, args.output)
        if args.profile:
            from deeppot.train.profile import profile_training

            print(profile_training(trainer, trace=config["training"]["profiling_file"]))
            return
        trainer.run()
        distributed.barrier(ranks)  # no rank tears down gloo's connections while another still uses them
    finally:
        if trainer is not None:
            trainer.release_graphs()  # before the NCCL group goes: its captured all-reduce would hang it
        distributed.shutdown(ranks)


def _model_file(name: str) -> str:
    """Like DeePMD-kit's format_model_suffix: a model named without a model suffix gets the frozen one (.dp)."""
    return name if name.lower().endswith((".dp", ".yaml", ".yml", ".pt", ".pth")) else name + ".dp"


def _path_or_none(path: str | None) -> Path | None:
    return Path(path) if path else None


def _freeze(args: argparse.Namespace) -> None:
    from deeppot.io import save_model
    from deeppot.io.model_file import load_checkpoint_model
    from deeppot.train.checkpoint import resolve_checkpoint

    checkpoint = resolve_checkpoint(args.checkpoint_folder)
    output = args.output if Path(args.output).suffix else args.output + ".dp"
    save_model(load_checkpoint_model(checkpoint), output)
    log.info("frozen %s to %s", checkpoint, output)


def _test(args: argparse.Namespace) -> None:
    from deeppot.evaluate import run_test, systems_to_test
    from deeppot.io import load_model
    from deeppot.train.trainer import pick_device

    if args.set_prefix != "set":
        log.warning("-S/--set-prefix is deprecated and ignored (as in DeePMD-kit): sets are always set.*")
    systems = systems_to_test(args.system, args.datafile, args.train_json, args.valid_json)
    model = load_model(_model_file(args.model), pick_device(args.device))
    report = run_test(model, systems, numb_test=args.numb_test, detail_file=args.detail_file,
                      shuffle_test=args.shuffle_test, rand_seed=args.rand_seed, atomic=args.atomic)
    if args.plot:
        from deeppot.evaluate.plots import parity_plot

        parity_plot(report, args.plot)
        log.info("parity plot written to %s", args.plot)


def _eval_desc(args: argparse.Namespace) -> None:
    from deeppot.evaluate import eval_desc, systems_to_test

    systems = systems_to_test(args.system, args.datafile)
    written = eval_desc(_model_file(args.model), systems, args.output, args.dtype, args.device)
    log.info("descriptors of %d system(s) written to %s", len(written), args.output)


def _embed(args: argparse.Namespace) -> None:
    from deeppot.evaluate import embed, systems_to_test

    embed(_model_file(args.model), systems_to_test(args.system, args.datafile), args.output, args.dtype, args.device)


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
    models = [_model_file(m) for m in args.models]
    make_model_devi(models, args.system, args.output, args.frequency, real_error=args.real_error,
                    atomic=args.atomic, relative=args.relative, relative_v=args.relative_v, device=args.device)
    log.info("model deviation written to %s", args.output)


def _compress(args: argparse.Namespace) -> None:
    from deeppot.io.compress import compress_file

    compress_file(args.input, args.output, args.step, args.extrapolate, args.frequency, args.training_script)
    log.info("compressed %s to %s", args.input, args.output)


def _neighbor_stat(args: argparse.Namespace) -> None:
    from deeppot.tools.neighbor_stat import run_neighbor_stat

    run_neighbor_stat(args.system, args.rcut, args.type_map, mixed_type=args.mixed_type, device=args.device)


def _show(args: argparse.Namespace) -> None:
    from deeppot.tools.show import show

    show(args.INPUT, args.ATTRIBUTES)


def _change_bias(args: argparse.Namespace) -> None:
    from deeppot.tools.change_bias import change_bias

    change_bias(args.INPUT, systems=args.system, datafile=args.datafile, numb_batch=args.numb_batch, mode=args.mode,
                bias_value=args.bias_value, output=args.output, device=args.device)


def _convert_data(args: argparse.Namespace) -> None:
    from deeppot.tools.convert_data import convert_data

    try:
        convert_data(args.INPUT, args.format, args.output, type_map=args.type_map, set_size=args.set_size)
    except ImportError as err:  # the optional dpdata extra is missing: a user error with its fix
        raise ValueError(str(err)) from None


def _md(args: argparse.Namespace) -> None:
    from deeppot.md import MDError
    from deeppot.md.driver import MDOptions, run_md

    names = ("structure", "ensemble", "thermostat", "barostat", "temperature", "pressure", "dt", "steps", "thermo",
             "dump", "seed", "skin", "tau_t", "tau_p", "compressibility", "devi_freq", "device", "restart", "fmt",
             "max_temperature", "precision", "graph", "tf32")
    opts = MDOptions(models=args.models, output=Path(args.output), **{name: getattr(args, name) for name in names})
    try:
        run_md(opts)
    except MDError as err:  # the dynamics failed: say so in one line; the last good restart file stays
        print(f"deeppot md: error: {err}", file=sys.stderr)
        raise SystemExit(1) from err


def _add_train_command(sub) -> None:
    p = sub.add_parser("train", help="train a model from a DeePMD-kit input.json")
    p.add_argument("INPUT")
    p.add_argument("-o", "--output", default="out.json", help="normalised input written here")
    start = p.add_mutually_exclusive_group()
    start.add_argument("-r", "--restart", help="continue from a checkpoint (.pt)")
    start.add_argument("-i", "--init-model", help="start from another model's weights (.pt or .dp)")
    start.add_argument("-f", "--init-frz-model", help="start from a frozen model's weights (.dp or .yaml; the same "
                       "as -i, DeePMD-kit's name for a frozen model)")
    start.add_argument("-t", "--finetune", help="fine-tune a pretrained model (.dp, .yaml, deeppot or DeePMD-kit "
                       ".pt): its weights, type map matched by element names, energy bias re-fitted on the data")
    p.add_argument("--use-pretrain-script", action="store_true",
                   help="with --finetune: take the descriptor and fitting_net from the pretrained model")
    p.add_argument("--skip-neighbor-stat", action="store_true", help="skip the neighbour statistics of the data")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available)")
    p.add_argument("--no-cuda-graph", action="store_true", help="run the step eagerly on a GPU (for debugging)")
    p.add_argument("--fused-kernels", choices=["auto", "on", "off"], default="auto",
                   help="the embedding net on a GPU: the fused Triton kernels (on), PyTorch (off), or whichever a "
                        "timing of both at start-up finds faster for this model and batch (auto, the default)")
    p.add_argument("--no-fused-kernels", action="store_true", help="the same as --fused-kernels off")
    p.add_argument("--compile", choices=["auto", "on", "off"], default="auto",
                   help="torch.compile the force computation: faster steps for seconds of start-up; auto (default): "
                        "as training.enable_compile says, or on for float64 GPU runs of 200,000 steps or more")
    p.add_argument("--tf32", action="store_true",
                   help="mixed precision: float32 GEMMs (fused embedding kernels, cuBLAS, compiled step) on TF32 "
                        "tensor cores (float32 models on a GPU)")
    p.add_argument("--profile", action="store_true", help="profile a few steps, print the top kernels, write a trace")
    p.set_defaults(func=_train)


def _fused_choice(args) -> bool | None:
    """RunOptions.fused_kernels from --fused-kernels / --no-fused-kernels (None: timed at start-up)."""
    if args.no_fused_kernels:
        return False
    return {"auto": None, "on": True, "off": False}[args.fused_kernels]


def _add_model_devi_command(sub) -> None:
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


def _model_and_systems(p: argparse.ArgumentParser,
                       model: str = "frozen_model.dp") -> argparse._MutuallyExclusiveGroup:
    """-m, and -s or -f (DeePMD-kit's test, eval-desc and embed); returns the group of the data sources."""
    p.add_argument("-m", "--model", default=model)
    source = p.add_mutually_exclusive_group()
    source.add_argument("-s", "--system", default=".", help="system folder, searched recursively")
    source.add_argument("-f", "--datafile", default=None, help="a file naming one system a line")
    return source


def _add_test_command(sub) -> None:
    p = sub.add_parser("test", help="errors of a model on labelled systems, like `dp test`")
    source = _model_and_systems(p)
    source.add_argument("--train-data", dest="train_json", default=None,
                        help="an input.json: test on its training data (paths from its folder)")
    source.add_argument("--valid-data", dest="valid_json", default=None,
                        help="an input.json: test on its validation data (paths from its folder)")
    p.add_argument("-S", "--set-prefix", default="set", help="deprecated and ignored, as in DeePMD-kit")
    p.add_argument("-n", "--numb-test", type=int, default=0, help="frames per system (0: all)")
    p.add_argument("-r", "--rand-seed", type=int, default=None)
    p.add_argument("--shuffle-test", action="store_true")
    p.add_argument("-d", "--detail-file", default=None, help="prefix of the .e.out/.f.out/.v.out detail files")
    p.add_argument("-a", "--atomic", action="store_true", help="also test atomic energies (needs atom_ener.npy)")
    p.add_argument("--plot", default=None, help="write energy/force parity plots to this PNG")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.set_defaults(func=_test)


def _add_eval_desc_command(sub) -> None:
    p = sub.add_parser("eval-desc", help="the descriptor of every atom of each system, like `dp eval-desc`")
    _model_and_systems(p)
    p.add_argument("-o", "--output", default="desc", help="folder for <system name>.npy, (nframes, natoms, ndesc)")
    p.add_argument("--dtype", choices=["fp32", "fp64", "native"], default="native",
                   help="the files' dtype; native: the model's precision")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.set_defaults(func=_eval_desc)


def _add_embed_command(sub) -> None:
    p = sub.add_parser("embed", help="descriptor, atomic and structural features of each system in one HDF5 file, "
                       "like `dp embed`")
    _model_and_systems(p, model="model.ckpt.pt")
    p.add_argument("-o", "--output", default="embedding.hdf5", help="the HDF5 file, a group a system")
    p.add_argument("--dtype", choices=["fp32", "fp64", "native"], default="fp32",
                   help="the datasets' dtype; native: the model's precision")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.set_defaults(func=_embed)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deeppot", description="Fast Deep Potential training, DeePMD-kit compatible")
    parser.add_argument("-v", "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train_command(sub)

    p = sub.add_parser("freeze", help="write a frozen model (DeePMD-kit .dp format)")
    p.add_argument("-c", "--checkpoint-folder", default=".", help="folder with a 'checkpoint' file, or a .pt")
    p.add_argument("-o", "--output", default="frozen_model.dp")
    p.set_defaults(func=_freeze)

    _add_test_command(sub)
    _add_eval_desc_command(sub)
    _add_embed_command(sub)

    p = sub.add_parser("convert", aliases=["convert-backend"],
                       help="convert a model (.dp/.yaml, deeppot or DeePMD-kit .pt) to .dp or .yaml")
    p.add_argument("INPUT")
    p.add_argument("OUTPUT")
    p.set_defaults(func=_convert)

    _add_compress_command(sub)

    p = sub.add_parser("plot", help="plot learning curves from lcurve.out")
    p.add_argument("LCURVE", nargs="?", default="lcurve.out")
    p.add_argument("-o", "--output", default="lcurve.png")
    p.set_defaults(func=_plot)

    _add_model_devi_command(sub)
    _add_tool_commands(sub)
    _add_md_command(sub)
    return parser


def _add_tool_commands(sub) -> None:
    """neighbor-stat, show, change-bias, convert-data (deeppot.tools)."""
    p = sub.add_parser("neighbor-stat", help="min distance and max neighbours per type, like `dp neighbor-stat`")
    p.add_argument("-s", "--system", nargs="+", default=["."],
                   help="system folders (searched recursively) or HDF5 files")
    p.add_argument("-r", "--rcut", type=float, required=True, help="cutoff radius (Å)")
    p.add_argument("-t", "--type-map", nargs="+", default=None, help="type names (default: the data's type_map.raw)")
    p.add_argument("--mixed-type", "--one-type", dest="mixed_type", action="store_true",
                   help="count all types as one (as DeePMD-kit does for type-embedding descriptors)")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.set_defaults(func=_neighbor_stat)

    p = sub.add_parser("show", help="type map, descriptor, fitting net, size and observed types of a model, like "
                       "`dp show`")
    p.add_argument("INPUT", help="a model file (.dp, .yaml) or a checkpoint (.pt)")
    p.add_argument("ATTRIBUTES", nargs="+", choices=SHOW_ATTRIBUTES)
    p.set_defaults(func=_show)

    p = sub.add_parser("change-bias", help="re-fit a model's per-type energy bias on data, like `dp change-bias`")
    p.add_argument("INPUT", help="a model file (.dp, .yaml) or a checkpoint (.pt, deeppot's or DeePMD-kit's)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("-s", "--system", nargs="+", default=None,
                        help="system folders (searched recursively) or HDF5 files (default: .)")
    source.add_argument("-f", "--datafile", default=None, help="a text file listing one system per line")
    source.add_argument("-b", "--bias-value", type=float, nargs="+", default=None,
                        help="the new bias of each type of the model's type_map (eV), instead of a fit")
    p.add_argument("-n", "--numb-batch", type=int, default=0, help="frames per system used (0: all)")
    p.add_argument("-m", "--mode", default="change", choices=["change", "set"],
                   help="change: add the fit of E_label - E_model to the bias; set: fit the bias to E_label")
    p.add_argument("-o", "--output", default=None, help="output model (default: INPUT with _updated before the suffix)")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.set_defaults(func=_change_bias)

    p = sub.add_parser("convert-data", help="convert data in any format dpdata reads to DeePMD npy systems")
    p.add_argument("INPUT", help="a file or folder in format FMT")
    p.add_argument("-f", "--format", required=True, help="dpdata's format name (vasp/outcar, extxyz, deepmd/npy, ...)")
    p.add_argument("-o", "--output", required=True, help="output folder (new or empty)")
    p.add_argument("-t", "--type-map", nargs="+", default=None, help="type names: atom types are mapped onto them")
    p.add_argument("--set-size", type=int, default=5000, help="frames per set.* folder")
    p.set_defaults(func=_convert_data)


def _add_md_command(sub) -> None:
    """md (deeppot.md)."""
    p = sub.add_parser("md", help="molecular dynamics (NVE, NVT, NPT) with a model; several models: model deviation")
    p.add_argument("-m", "--models", nargs="+", required=True,
                   help="model files; the first drives the dynamics, all give model_devi.out")
    p.add_argument("-c", "--structure", help="any file ASE reads (extxyz, POSCAR, ...) or a DeePMD system folder")
    p.add_argument("--format", dest="fmt", default=None, help="ASE format of the structure, e.g. lammps-data")
    p.add_argument("--ensemble", default="nve", choices=["nve", "nvt", "npt"])
    p.add_argument("--thermostat", default="bussi", choices=["bussi", "langevin"])
    p.add_argument("--barostat", default="iso", choices=["iso", "aniso"], help="NPT cell scaling")
    p.add_argument("--temp", dest="temperature", type=float, default=300.0, help="K (also the initial velocities)")
    p.add_argument("--press", dest="pressure", type=float, default=1.0, help="bar")
    p.add_argument("--dt", type=float, default=0.5, help="time step, fs")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--thermo", type=int, default=100, help="steps between thermo.out rows and progress lines")
    p.add_argument("--dump", type=int, default=1000, help="steps between trajectory frames and restart files")
    p.add_argument("--devi-freq", dest="devi_freq", type=int, default=None,
                   help="steps between model-deviation rows (default: --thermo)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skin", type=float, default=2.0, help="neighbour-list skin, Å")
    p.add_argument("--tau-t", dest="tau_t", type=float, default=100.0, help="thermostat time constant, fs")
    p.add_argument("--tau-p", dest="tau_p", type=float, default=1000.0, help="barostat time constant, fs")
    p.add_argument("--compressibility", type=float, default=4.5e-5, help="barostat compressibility, 1/bar")
    p.add_argument("--max-temp", dest="max_temperature", type=float, default=None,
                   help="stop above this temperature, K (default: 10x --temp, at least 5000)")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    p.add_argument("--precision", choices=["float32", "float64"], default=None,
                   help="run the models in this precision (default: each model's own; float32 is 2-3x faster at "
                        "scale, and a float64 model cast to it conserved energy as well in NVE, docs/md.md)")
    p.add_argument("--graph", choices=["auto", "on", "off"], default="auto",
                   help="replay each MD step from a CUDA graph (auto: up to 20,000 atoms on a GPU; docs/md.md)")
    p.add_argument("--tf32", action="store_true",
                   help="mixed-precision opt-in for float32 models on a GPU: their GEMMs on TF32 tensor cores "
                        "(inputs rounded to 10 mantissa bits; docs/md.md)")
    p.add_argument("-o", "--output", default=".", help="folder for thermo.out, traj.extxyz, restart.pt")
    p.add_argument("--restart", default=None, help="continue from a restart file (restart.pt)")
    p.set_defaults(func=_md)


def _add_compress_command(sub) -> None:
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stdout, format="%(asctime)s DEEPPOT %(levelname)s %(message)s",
                        datefmt="%H:%M:%S")
    try:
        args.func(args)
    except (ConfigError, DataError, FileNotFoundError, FileExistsError, TrainingError, ValueError) as err:
        # user errors get one clear line, not a traceback (use -v DEBUG for the traceback)
        log.debug("traceback", exc_info=True)
        print(f"deeppot {args.command}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
