"""CUDA backend (CuPy + NVRTC kernels): see docs/cuda.md."""
