"""dnnmap: map CNNs onto DNN accelerators."""

from dnnmap.api import map_network

__all__ = ["map_network"]
