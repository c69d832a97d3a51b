import torch
import torch.nn as nn


class Model(nn.Module):
    """Sums a 3-D tensor over one axis, keeping that axis with size 1."""

    def __init__(self, axis: int):
        super().__init__()
        self.axis = axis

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.axis, keepdim=True)


batch_size = 32
rows = 512
cols = 257
reduce_axis = 1


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return [reduce_axis]
