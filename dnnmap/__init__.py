"""dnnmap: map CNNs onto DNN accelerators."""
