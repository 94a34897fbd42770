"""JSON Schema files shipped with the gate (package data)."""
