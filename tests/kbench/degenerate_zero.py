import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies by zero: every kernel that writes zeros would pass. kevo must refuse it."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.0


def get_inputs():
    return [torch.randn(128, 1000)]


def get_init_inputs():
    return []
