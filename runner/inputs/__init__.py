"""Stage 1, inputs: everything a run reads, checked before anything is written (suite, baseline,
settings, price table). A flaw is one line naming the file, exit 2."""
