"""abiprobe: which exact torch / sgl-kernel / flashinfer wheels will load and run on a CUDA target."""

__version__ = "0.1.0"
