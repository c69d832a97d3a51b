import torch
import torch.nn as nn


class Model(nn.Module):
    """Ignores its input and returns its own weight, doubled. kevo must refuse it."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w * 2 + 0 * x.sum()


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
