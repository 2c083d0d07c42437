"""Run-time compilers shared by every layer: C through the system compiler (`c`), CUDA
through NVRTC (`nvrtc`). Lowest layer: imports nothing else of lobatto."""
