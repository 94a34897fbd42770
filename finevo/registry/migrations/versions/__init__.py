"""The registry's schema revisions, oldest first: 0001 is release 0.1.0's schema."""
