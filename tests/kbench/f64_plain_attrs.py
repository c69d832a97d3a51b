import torch
import torch.nn as nn


class Model(nn.Module):
    """A projection through a matrix the model keeps as a plain tensor attribute (not a
    parameter or buffer), then an MLP its own lambda calls: the float64 tolerance pass must
    reach both."""

    def __init__(self, features, hidden):
        super().__init__()
        self.proj = torch.randn(features, features) / features ** 0.5
        mlp = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Linear(hidden, features))
        self.mlp = mlp
        self.mlpf = lambda x: mlp(x)

    def forward(self, x):
        self.proj = self.proj.to(x.device)
        return self.mlpf(x @ self.proj)


batch = 256
features = 512
hidden = 1024


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, hidden]
