"""Time-domain Maxwell equations by SEDG (NekCEM formulation)."""
