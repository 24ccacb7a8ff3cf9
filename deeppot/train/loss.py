"""The `ener` loss of DeePMD-kit's PyTorch backend (spec §7): energy, force, virial, atomic energy and
atom-weighted ("prefactor") force terms with prefactors linear in the learning rate.

For a batch of nf frames of N atoms (Δ = label − prediction, q = 2 if intensive_ener_virial else 1):

    L_e  = pref_e · mean_f ΔE² / N^q              rmse_e  = sqrt(mean_f ΔE²) / N        (eV/atom)
    L_f  = pref_f · mean ΔF²   (nf·N·3 comps)     rmse_f  = sqrt(mean ΔF²)              (eV/Å)
    L_v  = pref_v · mean ΔΞ²   (nf·9 comps) / N^q rmse_v  = sqrt(mean ΔΞ²) / N          (eV/atom)
    L_ae = pref_ae · mean ΔE_i²                   rmse_ae = sqrt(mean ΔE_i²)            (eV)
    L_pf = pref_pf · mean(ΔF² · atom_pref)        rmse_pf = sqrt(mean(ΔF² · atom_pref))
    loss = Σ active terms                         rmse    = sqrt(loss)

pref_X = (limit_X + (start_X − limit_X) · lr/start_lr) · find_X. As in DeePMD PT, a term is active only when
both its start and limit prefactors are non-zero; a metric whose label is absent (find = 0) is NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["EnergyLoss"]

Tensor = torch.Tensor
Scalar = float | Tensor
# term name -> (label key, model output key)
_TERMS = {"e": ("energy", "energy"), "f": ("force", "force"), "v": ("virial", "virial"),
          "ae": ("atom_ener", "atom_energy"), "pf": ("atom_pref", "force")}


class EnergyLoss:
    """Callable loss for one batch; holds only the normalised `loss` section and start_lr (no parameters)."""

    def __init__(self, loss_section: Mapping[str, Any], start_lr: float) -> None:
        self.start_lr = float(start_lr)
        self.start = {t: float(loss_section.get(f"start_pref_{t}", 0.0)) for t in _TERMS}
        self.limit = {t: float(loss_section.get(f"limit_pref_{t}", 0.0)) for t in _TERMS}
        # PT rule (spec §7.2): active only if BOTH prefactors are non-zero (TF: either)
        self.active = tuple(t for t in _TERMS if self.start[t] != 0.0 and self.limit[t] != 0.0)
        self.norm_exp = 2 if loss_section.get("intensive_ener_virial", False) else 1
        self.use_default_pf = bool(loss_section.get("use_default_pf", False))
        self.kernel = None  # deeppot.kernels.loss after use_kernel()
        self._constants: dict[int, Tensor] = {}

    def use_kernel(self, device: torch.device) -> bool:
        """Compute e, f, v losses of graphed steps (rate and flags on the device) with the fused Triton twin
        (`deeppot.kernels.loss`) if Triton runs on `device`; returns whether it will."""
        from deeppot.kernels import loss as fused
        from deeppot.kernels.embedding import triton_available

        if not (triton_available(device) and self.active and set(self.active) <= set(fused.TERMS)):
            return False
        self.kernel = fused
        return True

    @property
    def metric_keys(self) -> list[str]:
        """Display keys, sorted as DeePMD sorts them: rmse, rmse_ae, rmse_e, rmse_f, rmse_pf, rmse_v."""
        return sorted(["rmse", *(f"rmse_{t}" for t in self.active)])

    def prefactor(self, term: str, lr: Scalar) -> Scalar:
        """pref_X(lr) before multiplying by find (a tensor if `lr` is one, so no host sync)."""
        return self.limit[term] + (self.start[term] - self.limit[term]) * (lr / self.start_lr)

    def __call__(self, pred: Mapping[str, Tensor], label: Mapping[str, Tensor], find: Mapping[str, Any],
                 natoms: int, lr: Scalar) -> tuple[Tensor, dict[str, Tensor]]:
        """Loss (0-d float64 tensor, differentiable) and detached 0-d float64 metrics for the active terms.

        pred: energy (nf,), force (nf, nloc, 3), virial (nf, 9), atom_energy (nf, nloc);
        label: energy (nf,), force (nf, nloc, 3), virial (nf, 9), atom_ener (nf, nloc), atom_pref (nf, nloc);
        find: label name -> bool, 0/1 float or 0-d tensor (missing = 0); natoms: atoms per frame (N);
        lr: the learning rate of this step, float or 0-d tensor.
        """
        if self.kernel is not None and self.kernel.applies(self, label, find, lr):
            return self.kernel.fused_loss(self, self._kernel_constants(natoms, lr.device), pred, label, find, lr)
        # accumulated in float64 whatever the model precision, as DeePMD PT does
        loss = torch.zeros((), dtype=torch.float64, device=pred["energy"].device)
        metrics: dict[str, Tensor] = {}
        for term in self.active:
            found = self._found(term, label, find)
            mse = self._mse(term, pred, label).to(torch.float64)
            scale = self._size_scale(term, natoms)
            loss = loss + self.prefactor(term, lr) * found * scale * mse
            rmse = mse.detach().sqrt() * self.metric_scale(term, natoms)
            metrics[f"rmse_{term}"] = _nan_unless(rmse, found)
        metrics["rmse"] = loss.detach().sqrt()
        return loss, metrics

    def display(self, metrics: Mapping[str, Tensor]) -> dict[str, float]:
        """Metrics as Python floats, keys sorted; one host sync (call on display steps only)."""
        keys = self.metric_keys
        values = torch.stack([metrics[k].detach().to(torch.float64).reshape(()) for k in keys]).tolist()
        return dict(zip(keys, values, strict=True))

    def _kernel_constants(self, natoms: int, device: torch.device) -> Tensor:
        """The kernel's constants of a batch size, made at its first (eager, uncaptured) call."""
        if natoms not in self._constants:
            self._constants[natoms] = self.kernel.constants(self, natoms, device)
        return self._constants[natoms]

    @staticmethod
    def metric_scale(term: str, natoms: int) -> float:
        """1/N for the energy and virial metrics (per atom), 1 otherwise."""
        return 1.0 / natoms if term in ("e", "v") else 1.0

    def _size_scale(self, term: str, natoms: int) -> float:
        """1/N^q for the extensive energy and virial terms, 1 otherwise."""
        return (1.0 / natoms) ** self.norm_exp if term in ("e", "v") else 1.0

    def _found(self, term: str, label: Mapping[str, Tensor], find: Mapping[str, Any]) -> Scalar:
        """find_X as a float or 0-d tensor; pf needs both forces and atom_pref (unless use_default_pf)."""
        key = _TERMS[term][0]
        if key not in label:
            return 0.0
        if term == "pf":
            pref_found = 1.0 if self.use_default_pf else _as_factor(find.get("atom_pref", 0.0))
            return _as_factor(find.get("force", 0.0)) * pref_found
        return _as_factor(find.get(key, 0.0))

    @staticmethod
    def _mse(term: str, pred: Mapping[str, Tensor], label: Mapping[str, Tensor]) -> Tensor:
        """Mean squared error of one term's components (atom_pref-weighted for pf)."""
        label_key, pred_key = _TERMS[term]
        if label_key not in label:
            return torch.zeros((), dtype=pred[pred_key].dtype, device=pred[pred_key].device)
        if term == "pf":
            diff = label["force"] - pred["force"]  # (nf, nloc, 3); atom_pref repeated over x, y, z
            return (diff.square() * label["atom_pref"].unsqueeze(-1)).mean()
        diff = label[label_key] - pred[pred_key]
        return diff.square().mean()


def _as_factor(value: Any) -> Scalar:
    """bool / number / tensor -> float or 0-d tensor, without a host sync."""
    if isinstance(value, Tensor):
        return value.reshape(()).to(torch.float64)
    return float(value)


def _nan_unless(metric: Tensor, found: Scalar) -> Tensor:
    """`metric` where the label was found, NaN otherwise (torch.where for tensors: no host sync)."""
    if isinstance(found, Tensor):
        return torch.where(found > 0, metric, torch.full_like(metric, float("nan")))
    return metric if found > 0 else torch.full_like(metric, float("nan"))
