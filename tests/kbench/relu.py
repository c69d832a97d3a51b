import torch
import torch.nn as nn


class Model(nn.Module):
    """Rectified linear unit over a batch of feature vectors."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 64
dim = 65537


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
