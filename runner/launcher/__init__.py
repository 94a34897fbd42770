"""The container launcher: ``finevo-verify docker`` runs the gate in a fresh image through the
Docker SDK."""
