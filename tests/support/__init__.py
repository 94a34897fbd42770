"""Test helpers shared by the whole suite (scripted LLM server, ...)."""
