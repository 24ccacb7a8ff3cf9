"""The training loop (spec §9.2): one readable loop, with set-up and bookkeeping in small helpers.

The step itself does no host synchronisation: the learning rate and loss prefactors are Python floats from the
schedule, metrics stay on the device and are read only on display steps.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deeppot.data import load_systems
from deeppot.io.model_file import load_model, read_checkpoint
from deeppot.model import EnergyModel
from deeppot.model.slots import per_type_padding, trimmed_widths
from deeppot.model.stats import set_statistics
from deeppot.model.summary import observed_in
from deeppot.tools.change_bias import select_frames
from deeppot.train.adam import FusedAdam, gpu_adam
from deeppot.train.checkpoint import CheckpointManager, resolve_checkpoint
from deeppot.train.data import DataSampler
from deeppot.train.distributed import (
    DistInfo,
    average_gradients,
    broadcast_state,
    lr_scale,
    rank_seed,
)
from deeppot.train.finetune import adjust_out_bias, copy_pretrained, finetune_model_section, load_pretrained
from deeppot.train.force_path import (
    PathOptions,
    TrainingError,
    choose_force_path,
    distinct_shapes,
    wants_compile,
)
from deeppot.train.graph_step import StepInputs, batch_capacity
from deeppot.train.lcurve import LcurveWriter, format_eta, format_log_line
from deeppot.train.loss import EnergyLoss
from deeppot.train.lr import build_lr
from deeppot.train.memory import (
    MemoryOptions,
    apply_memory_options,
    gather_optimizer_state,
    make_optimizer,
    use_cuda_graph,
)
from deeppot.train.neighbor_stat import neighbor_stat, resolve_sel
from deeppot.train.progress import Clock, Progress, StartupTimes

log = logging.getLogger("deeppot")


@dataclass
class RunOptions:
    workdir: Path
    device: torch.device
    restart: Path | None = None
    init_model: Path | None = None
    finetune: Path | None = None  # a pretrained model to fine-tune (deeppot.train.finetune)
    use_pretrain_script: bool = False  # with finetune: the model section from the pretrained model
    skip_neighbor_stat: bool = False
    progress: bool | None = None  # None: a progress line when stderr is a terminal
    cuda_graph: bool | None = None  # None: capture the step in CUDA graphs when training on a GPU
    fused_kernels: bool | None = None  # Triton embedding kernels on a GPU: forced on/off, None = the faster (timed)
    compile: bool | None = None  # torch.compile of the force function: forced on/off, None = training.enable_compile
    #                             or, without it, on for long GPU runs (deeppot.train.force_path)
    tf32: bool = False  # mixed-precision opt-in: float32 models' GEMMs on TF32 tensor cores (sets it for the process)
    trim_lists: bool = True  # lists only as wide as the data's most neighbours per type (deeppot.model.slots)
    dist: DistInfo = field(default_factory=DistInfo)  # data-parallel ranks; default: one process


def pick_device(name: str | None) -> torch.device:
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Trainer:
    def __init__(self, config: dict[str, Any], options: RunOptions) -> None:
        self.config, self.opt = config, options
        tr = config["training"]
        if tr.get("seed") is not None:
            torch.manual_seed(tr["seed"])
        self.startup = StartupTimes()
        self.pretrained = self._pretrained_model() if options.finetune is not None else None
        with self.startup.phase("data and neighbour statistics"):
            self.train_data, self.valid_data = self._load_data()
        self.numb_steps = self._numb_steps()
        with self.startup.phase("model and data statistics"):
            self.model = self._build_model().to(options.device)
        if options.dist.enabled:  # every rank starts from rank 0's weights and statistics
            broadcast_state(self.model)
        self.memory = MemoryOptions.from_training(tr)
        use_graph = use_cuda_graph(options.cuda_graph, options.device, self.memory, options.dist.world_size)
        self.lr = build_lr(config["learning_rate"], self.numb_steps)
        self.loss = EnergyLoss(config["loss"], self.lr.start_lr)
        # model and loss of one batch, as the step and validation run them (compiled or not)
        self.batch_loss = self._force_path(PathOptions(options.fused_kernels, options.compile, options.tf32,
                                                       use_graph, options.dist.enabled))
        # after the kernel choice: it wraps the chosen function
        apply_memory_options(self.model, self.memory, options.tf32)
        # multiplies the optimizer's rate only; the loss prefactors and lcurve.out see the schedule (as DeePMD TF)
        self.lr_scale = lr_scale(config["learning_rate"].get("scale_by_worker", "linear"), options.dist.world_size)
        if self.lr_scale != 1.0:
            log.info("Scale learning rate by coef: %f (scale_by_worker, %d ranks)", self.lr_scale,
                     options.dist.world_size)
        if use_graph and options.device.type != "cuda":
            raise TrainingError("CUDA graphs need a CUDA device")
        self.grad_accum_steps = tr.get("grad_accum_steps", 1)
        if use_graph and self.grad_accum_steps > 1:
            raise TrainingError("training.grad_accum_steps > 1 runs on the eager step only: add --no-cuda-graph "
                                "(the captured step holds one batch), or use a larger batch_size")
        # graphs read the frames and the learning rate from device memory (no host sync, no re-capture when the
        # rate changes): float64 for the loss, float32 for fused Adam
        self.step_inputs = StepInputs(batch_capacity(self.train_data, self.valid_data), self.lr.start_lr,
                                      self.lr_scale, options.device) if use_graph else None
        with self.startup.phase("optimizer"):
            self.optimizer = self._optimizer()
        self.start_step = 0
        if options.restart is not None:
            self._restore(options.restart)
        # only rank 0 writes checkpoints (the other ranks hold the same weights)
        self.ckpt = CheckpointManager(tr["save_ckpt"], tr.get("save_dir"), tr["max_ckpt_keep"], options.workdir) \
            if options.dist.is_main else None
        with self.startup.phase("neighbour data"):
            self.graphed, self.graphed_valid = self._graph_replayers() if use_graph else (None, None)
        log.info("training step: %s", "CUDA graph replay" if use_graph else "eager")

    # ---- set-up --------------------------------------------------------------------------------------------

    def _graph_replayers(self):
        """The CUDA-graph replayers of the training step and of validation (deeppot.train.graph_step)."""
        from deeppot.train.graph_step import GraphedMetrics, GraphedStep

        self.train_data.build_all()  # every frame's neighbour data now, on the GPU: the graphs gather from it
        step = GraphedStep(self)
        if self.opt.dist.enabled:  # every rank captures the same graphs at the same time (see capture_all)
            step.capture_all()
        if self.valid_data is None:
            return step, None
        self.valid_data.build_all()
        return step, GraphedMetrics(self, self.valid_data, step.pool)

    def _pretrained_model(self) -> EnergyModel:
        """Load the model to fine-tune; the model section is checked against it (or taken from it) before the
        data are read, so sel and the type map are the fine-tuned run's."""
        pretrained = load_pretrained(self.opt.finetune)
        self.config["model"] = finetune_model_section(self.config["model"], pretrained, self.opt.use_pretrain_script,
                                                      self.opt.finetune)
        return pretrained

    def _load_data(self) -> tuple[DataSampler, DataSampler | None]:
        cfg, tr = self.config, self.config["training"]
        type_map = cfg["model"]["type_map"]
        systems = load_systems(tr["training_data"]["systems"], type_map,
                               rglob_patterns=tr["training_data"].get("rglob_patterns"))
        info = cfg["model"].setdefault("info", {})
        if info.get("observed_type") is None:  # as DeePMD-kit 3.2: the training data's types, kept in the model
            info["observed_type"] = observed_in((s.atype for s in systems), type_map)
        valid_systems = None
        if tr.get("validation_data"):  # validation runs on rank 0 only; every rank sizes the lists for it
            valid_systems = load_systems(tr["validation_data"]["systems"], type_map,
                                         rglob_patterns=tr["validation_data"].get("rglob_patterns"))
        desc = cfg["model"]["descriptor"]
        widths = None
        if not self.opt.skip_neighbor_stat or isinstance(desc["sel"], str):
            desc["sel"], self.min_nbor_dist, max_count = resolve_sel(systems, desc["rcut"], desc["sel"],
                                                                     len(type_map), self.opt.device)
            widths = self._list_widths(desc, max_count, valid_systems)
        else:
            self.min_nbor_dist = -1.0
        seed = tr.get("seed")
        train = self._sampler(systems, tr["training_data"], rank_seed(seed, self.opt.dist), widths)
        valid = self._sampler(valid_systems, tr["validation_data"], None if seed is None else seed + 1, widths) \
            if valid_systems and self.opt.dist.is_main else None
        for line in train.summary():
            log.info(line)
        return train, valid

    def _force_path(self, request: PathOptions):
        """The batch-loss function: the embedding and kernels chosen, compiled where `wants_compile` says."""
        compiled = wants_compile(request, self.config["training"], self.numb_steps, self.opt.device, self.memory,
                                 self.model.descriptor.dtype, distinct_shapes(self.train_data, self.valid_data))
        with self.startup.phase("embedding choice" + (" and torch.compile" if compiled else "")):
            return choose_force_path(self.model, self.train_data, self.loss, request, compiled, self.memory)

    def _numb_steps(self) -> int:
        """training.numb_steps, or from numb_epoch: ceil(numb_epoch * ceil(max_i nbatch_i / p_i)) (spec §9.1)."""
        tr = self.config["training"]
        if "numb_steps" in tr:
            return int(tr["numb_steps"])
        data, ranks = self.train_data, self.opt.dist.world_size
        # per-rank batch counts, as DeePMD's DistributedSampler gives each rank ceil(nframes / ranks) frames
        nbatch = data.nbatch if ranks == 1 else [math.ceil(math.ceil(s.nframes / ranks) / b)
                                                 for s, b in zip(data.systems, data.batch_sizes, strict=True)]
        per_epoch = max(math.ceil(n / p) for n, p in zip(nbatch, data.probs, strict=True) if p > 0)
        # every step draws grad_accum_steps batches
        steps = math.ceil(tr["numb_epoch"] * per_epoch / tr.get("grad_accum_steps", 1))
        log.info("numb_epoch %g -> numb_steps %d", tr["numb_epoch"], steps)
        return steps

    def _list_widths(self, desc: dict[str, Any], max_count: np.ndarray, valid_systems) -> tuple[int, ...] | None:
        """The slots per type the run's lists keep: the most neighbours of any training or validation frame, where
        that is below sel (deeppot.model.slots; the model keeps its sel). None: full lists."""
        if not self.opt.trim_lists:
            return None
        start = self._starting_statistics()
        if start is not None and not per_type_padding(*start):
            log.info("neighbour lists of sel slots: the starting model's davg/dstd differ between slots of one type")
            return None
        if valid_systems:
            max_count = np.maximum(max_count, neighbor_stat(valid_systems, desc["rcut"], len(max_count),
                                                            self.opt.device)[0])
        widths = trimmed_widths(desc["sel"], max_count)
        if widths is not None:
            log.info("neighbour lists of %s slots per type (the data's most neighbours, and a slot standing in for the "
                     "always-empty ones) for sel %s; the model keeps sel", list(widths), desc["sel"])
        return widths

    def _starting_statistics(self) -> tuple[torch.Tensor, torch.Tensor, list[int]] | None:
        """davg, dstd and sel of the model the run starts from (fine-tuning, --init-model, --restart), read ahead
        of the model's set-up; None where the run computes them."""
        if self.pretrained is not None:
            d = self.pretrained.descriptor
        elif self.opt.init_model is not None:
            d = self._init_source.descriptor
        elif self.opt.restart is not None:
            state = self._restart_state["model"]
            return state["descriptor.davg"], state["descriptor.dstd"], self.config["model"]["descriptor"]["sel"]
        else:
            return None
        return d.davg, d.dstd, d.sel

    @functools.cached_property
    def _init_source(self) -> EnergyModel:
        """The --init-model model, read once (the lists' sizing and the model's set-up both look at it)."""
        return load_model(self.opt.init_model)

    @functools.cached_property
    def _restart_state(self) -> dict[str, Any]:
        """The --restart checkpoint, read once (the lists' sizing and the restore both look at it)."""
        return read_checkpoint(resolve_checkpoint(self.opt.restart))

    def _sampler(self, systems, section: dict[str, Any], seed: int | None,
                 widths: tuple[int, ...] | None) -> DataSampler:
        desc = self.config["model"]["descriptor"]
        return DataSampler(systems, desc["rcut"], desc["sel"], self.opt.device, section["batch_size"],
                           section.get("sys_probs"), section["auto_prob"], seed, widths)

    def _build_model(self) -> EnergyModel:
        model = EnergyModel.from_config(self.config["model"])
        model.min_nbor_dist.fill_(self.min_nbor_dist)
        if self.opt.init_model is not None:
            source = self._init_source
            if source.descriptor.compressed:  # its uncompressed nets are inside: train those, not the tables
                log.info("--init-model %s is compressed: starting from its embedding nets", self.opt.init_model)
                source.descriptor.tables = None
            if source.config and source.config.get("descriptor", {}).get("sel") != model.sel:
                raise TrainingError(f"--init-model {self.opt.init_model}: its sel {source.sel} differs from "
                                    f"input.json's {model.sel}")
            model.load_state_dict(source.state_dict())
            log.info("initialised the weights from %s", self.opt.init_model)
        elif self.pretrained is not None:
            copy_pretrained(model, self.pretrained)
            log.info("copied the descriptor and fitting weights, davg/dstd and out_bias from %s", self.opt.finetune)
            adjust_out_bias(model, self._stat_frames(), self.opt.device)
        elif self.opt.restart is None:
            self._statistics(model)
        nparams = sum(p.numel() for p in model.parameters())
        log.info("Model Params: %.3f M (Trainable: %.3f M)", nparams / 1e6, nparams / 1e6)
        return model

    def _statistics(self, model: EnergyModel) -> None:
        """davg/dstd and the energy shift from data_stat_nbatch batches of every training system (spec §4.7)."""
        data = self.train_data
        pairs, energies = [], []
        for system, picked, (store_id, offset) in zip(data.systems, self._stat_picks(), data.where, strict=True):
            store = data.stores[store_id]
            store.build(picked + offset)
            pairs.append(store.gather(torch.as_tensor(picked + offset, device=self.opt.device)).pairs)
            counts = np.bincount(system.atype, minlength=len(model.type_map))
            energies.append((np.repeat(counts[None], len(picked), 0), system.labels["energy"][picked]))
        set_statistics(model, pairs, energies)

    def _stat_picks(self) -> list[np.ndarray]:
        """The statistics sample: data_stat_nbatch batches of frames drawn from every training system."""
        nbatch = self.config["model"]["data_stat_nbatch"]
        rng = np.random.default_rng(self.config["training"].get("seed"))
        data = self.train_data
        return [rng.permutation(s.nframes)[: nbatch * bs] for s, bs in zip(data.systems, data.batch_sizes,
                                                                            strict=True)]

    def _stat_frames(self) -> list:
        """The statistics sample as systems (for the fine-tuning bias fit, like DeePMD-kit's sampled data)."""
        return [select_frames(s, np.sort(p)) for s, p in zip(self.train_data.systems, self._stat_picks(), strict=True)]

    def _optimizer(self) -> torch.optim.Optimizer | FusedAdam:
        o = self.config.get("optimizer", {"type": "Adam", "adam_beta1": 0.9, "adam_beta2": 0.999,
                                          "weight_decay": 0.0})
        cls = {"Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}.get(o["type"])
        if cls is None:
            raise TrainingError(f"optimizer.type: {o['type']!r} is not supported (use Adam or AdamW)")
        fused = self.opt.device.type == "cuda"
        lr = self.step_inputs.adam_lr if self.step_inputs is not None else self.lr.start_lr
        if fused and (self.memory.zero_stage == 0 or self.opt.dist.world_size == 1):
            # torch.optim's fused update without torch.optim, whose first use imports torch._dynamo (seconds);
            # with Triton, as one kernel over flat buffers
            return gpu_adam()(self.model.parameters(), lr=lr, betas=(o["adam_beta1"], o["adam_beta2"]),
                              weight_decay=o["weight_decay"], decoupled=o["type"] == "AdamW")
        return make_optimizer(cls, self.model.parameters(), self.memory.zero_stage, self.opt.dist.world_size, lr=lr,
                              betas=(o["adam_beta1"], o["adam_beta2"]), weight_decay=o["weight_decay"], fused=fused,
                              capturable=self.step_inputs is not None)

    def _restore(self, path: Path) -> None:
        state = self._restart_state
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError as err:
            raise TrainingError(f"--restart {path}: the checkpoint's model does not match input.json's model "
                                f"section ({str(err).splitlines()[0]})") from None
        self.optimizer.load_state_dict(state["optimizer"])
        self.start_step = int(state["step"])
        if self.opt.dist.is_main:  # the checkpoint holds rank 0's sampler state, whatever the number of ranks
            self.train_data.load_state_dict(state["sampler"]["train"])
        else:  # the other ranks start a fresh stream of their own, so any number of ranks can restart
            self.train_data.reseed(rank_seed(self.config["training"].get("seed"), self.opt.dist, self.start_step))
        if self.valid_data is not None and state["sampler"].get("valid"):
            self.valid_data.load_state_dict(state["sampler"]["valid"])
        log.info("restarting from %s at step %d", path, self.start_step)

    # ---- the loop ------------------------------------------------------------------------------------------

    def release_graphs(self) -> None:
        """Free the captured CUDA graphs; later steps run eagerly. Must come before an NCCL process group is
        destroyed: destroy_process_group waits forever while graphs holding its captured all-reduce are alive
        (seen on 2 H200s, torch 2.11, NCCL 2.28)."""
        if self.graphed is None and self.graphed_valid is None:
            return
        self.graphed = self.graphed_valid = None
        gc.collect()  # a replayer and the trainer refer to each other
        torch.cuda.synchronize(self.opt.device)

    def step(self, step: int) -> dict[str, torch.Tensor]:
        """One optimisation step (0-based `step`); returns the (last accumulated) batch metrics from before the
        update."""
        if self.graphed is not None:
            return self.graphed(step)
        lr = self.lr.value(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr * self.lr_scale
        self.optimizer.zero_grad(set_to_none=True)
        for _ in range(self.grad_accum_steps):
            metrics = self._accumulate(lr)
        self.reduce_gradients()
        self.clip_gradients()
        self.optimizer.step()
        return metrics

    def _accumulate(self, lr: float) -> dict[str, torch.Tensor]:
        """Forward and backward of the next batch, adding its share to the gradients; returns its metrics."""
        batch = self.train_data.next()
        loss, metrics = self.batch_loss(self.model, self.loss, batch, lr, True)
        # the mean over the accumulated batches, as one larger batch would give (one batch: loss as is)
        (loss if self.grad_accum_steps == 1 else loss / self.grad_accum_steps).backward()
        return metrics

    def reduce_gradients(self) -> None:
        """Average the gradients over the ranks (before clipping, as DDP does); nothing in one process."""
        if self.opt.dist.enabled:
            average_gradients(list(self.model.parameters()), self.opt.dist.world_size)

    def clip_gradients(self) -> None:
        max_norm = self.config["training"].get("gradient_max_norm", 0.0)
        if max_norm:  # foreach norm, no host sync: safe inside a CUDA graph
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)

    def run(self) -> None:
        tr = self.config["training"]
        disp_freq, save_freq = tr["disp_freq"], tr["save_freq"]
        main = self.opt.dist.is_main  # the other ranks only step: rank 0 displays, validates and saves
        lcurve = LcurveWriter(self.opt.workdir / tr["disp_file"], self.loss.metric_keys,
                              self.valid_data is not None, append=self.start_step > 0) if main else None
        clock = Clock(self.numb_steps, self.start_step)
        progress = Progress(self.numb_steps, self.opt.progress if main else False)
        with lcurve or contextlib.nullcontext():
            for step in range(self.start_step, self.numb_steps):
                metrics = self._first_step(step, main) if step == self.start_step else self.step(step)
                display_step = step + 1
                saving = display_step % save_freq == 0 or display_step == self.numb_steps
                if saving:  # every rank: a sharded optimizer state is gathered on rank 0
                    gather_optimizer_state(self.optimizer)
                if not main:
                    continue
                # the step's loss before validation: a replayed step's metrics are valid until the next replay
                # of any graph (they share one memory pool), and validation replays its own
                rmse = float(metrics["rmse"]) if saving else math.nan
                if display_step % disp_freq == 0 or display_step == 1:
                    self._display(display_step, metrics, lcurve, clock)
                if saving:
                    self._save(display_step, rmse)
                progress.update(display_step, clock)
        progress.close()
        clock.report()
        if hasattr(self.optimizer, "mark_updated"):  # FlatAdam wrote the weights behind torch (its docstring)
            self.optimizer.mark_updated()
        if main:
            log.info("Trained model has been saved to: %s", self.ckpt.dir / f"{self.ckpt.name}.pt")

    def _first_step(self, step: int, main: bool) -> dict[str, torch.Tensor]:
        """The first step of the run, timed to its end on the device; then the start-up line (rank 0)."""
        with self.startup.phase("first step"):
            metrics = self.step(step)
            if self.opt.device.type == "cuda":
                torch.cuda.synchronize(self.opt.device)
        if main:
            self.startup.report()
        return metrics

    def _display(self, step: int, metrics: dict[str, torch.Tensor], lcurve: LcurveWriter, clock: Clock) -> None:
        trn = self.loss.display(metrics)  # the one host sync of a display step
        self._check_finite(step, trn["rmse"])
        val = self._validate(self.lr.value(step - 1)) if self.valid_data is not None else None
        lr = self.lr.value(step - 1)
        lcurve.write(step, trn, lr, val)
        if self.config["training"]["disp_training"]:
            log.info(format_log_line(step, "trn", trn, lr, check_nan=False))
            if val is not None:
                log.info(format_log_line(step, "val", val, check_nan=False))
        wall, eta = clock.interval(step)
        if self.config["training"]["time_training"]:
            log.info(format_eta(step, wall, eta))

    def _validate(self, lr: float) -> dict[str, float]:
        """natoms-weighted mean of per-batch metrics over numb_btch validation batches (spec §1.7)."""
        numb_btch = self.config["training"]["validation_data"]["numb_btch"]
        total: dict[str, float] = {}
        weight = 0
        for _ in range(numb_btch):
            metrics, natoms = self._valid_metrics(lr)
            for k, v in self.loss.display(metrics).items():
                total[k] = total.get(k, 0.0) + v * natoms
            weight += natoms
        return {k: v / weight for k, v in total.items()}

    def _valid_metrics(self, lr: float) -> tuple[dict[str, torch.Tensor], int]:
        if self.graphed_valid is not None:
            return self.graphed_valid(lr)
        batch = self.valid_data.next()
        return self.batch_loss(self.model, self.loss, batch, lr, False)[1], batch.natoms

    def _check_finite(self, step: int, rmse: float) -> None:
        if not math.isfinite(rmse):
            saved = self.ckpt.numbered()
            last = f"the last good checkpoint is {saved[-1][1]}" if saved else "no checkpoint was saved yet"
            raise TrainingError(f"NaN detected at batch {step}: the loss is {rmse}; training stopped and "
                                f"{last}. Lower learning_rate.start_lr or check the data for bad frames.")

    def _save(self, step: int, rmse: float) -> None:
        # never save a model that has gone NaN: this step's loss, and the weights after its update
        params_finite = torch.stack([torch.isfinite(p).all() for p in self.model.parameters()]).all()
        self._check_finite(step, rmse if bool(params_finite) else math.nan)
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "config": self.config, "step": step,
                 "sampler": {"train": self.train_data.state_dict(),
                             "valid": self.valid_data.state_dict() if self.valid_data else None}}
        self.ckpt.save(step, state)


def train(config: dict[str, Any], options: RunOptions) -> Trainer:
    trainer = Trainer(config, options)
    trainer.run()
    return trainer
