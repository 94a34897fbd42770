"""Stage 4, verdict: judged results against the baseline and thresholds, statistics of repeated
trials, and writing a new baseline."""
