"""What observes a run while it steps: the monitor contract (base.py), the registry of monitors
by ``[output.<section>]`` (registry.py), the generic monitors (probes, integrals and their time
series, running Fourier transforms) and the run's set of them (run_set.MonitorSet).
docs/architecture.md: "Adding a monitor"."""

from lobatto.monitors.base import Monitor
from lobatto.monitors.registry import MONITORS, monitor_tables, register_monitor, unregister_monitor
from lobatto.monitors.run_set import MonitorSet

__all__ = ["MONITORS", "Monitor", "MonitorSet", "monitor_tables", "register_monitor", "unregister_monitor"]
