"""Stage 3, judging: the trusted oracle, the comparison rules, probes and hidden worlds, and the
harness self-check that proves the judge before a verdict."""
