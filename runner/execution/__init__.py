"""Stage 2, execution: the agent session, each task under a deadline, repeats, the payload corpus
and the sandbox's containment self-test."""
