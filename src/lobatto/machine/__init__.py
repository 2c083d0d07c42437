"""The machine a run uses: MPI helpers, CPU threads, memory estimates, energy meters."""
