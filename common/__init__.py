"""Pieces shared by the explorer (`queries`, `ui`) and the runner; standard library only."""
