"""Run 96: why FlatAdam's captured gradient table read illegal addresses (debugging, one graph)."""
import torch

from deeppot.train.adam import FlatAdam

torch.manual_seed(0)
shapes = ((5, 3), (7,), (40, 30), (1200,))
params = [torch.nn.Parameter(torch.randn(s, dtype=torch.float64, device="cuda")) for s in shapes]
opt = FlatAdam(params, lr=1e-2)


def step():
    opt.zero_grad(set_to_none=True)
    sum(p.square().sum() for p in params).backward()
    opt.step()


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    step()
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with opt.captured_steps(), torch.cuda.graph(g):
    step()
    print("in capture: grad ptrs", [p.grad.data_ptr() for p in params], flush=True)
flat = opt.flats[0]
print("tables", [t.tolist() for t in flat._captured], flush=True)
print("grad ptrs after", [p.grad.data_ptr() for p in params], "contiguous", [p.grad.is_contiguous() for p in params])
print("first", flat.first.tolist(), "numel", flat.numel.tolist(), "owner", flat.owner.numel(), flush=True)
g.replay()
torch.cuda.synchronize()
print("replayed once", float(params[3].sum()), flush=True)
