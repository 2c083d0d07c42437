"""One run of a case: the Simulation, its schedule of outputs and checkpoints, restart,
steady runs and the summary (docs/architecture.md)."""
