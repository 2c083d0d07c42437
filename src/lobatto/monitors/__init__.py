"""What observes a run while it steps: probes, integrals, running Fourier transforms, time
series (docs/architecture.md: adding a monitor)."""
