"""What observes a run while it steps: probes, integrals, running Fourier transforms, time
series (docs/architecture.md: adding a monitor)."""

from lobatto.monitors.probes import TimeSeries as MonitorSet  # noqa: E402  (the run's monitors, one object)

__all__ = ["MonitorSet"]
