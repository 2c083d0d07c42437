"""Element-local operators built from tensor products of 1-D matrices."""
