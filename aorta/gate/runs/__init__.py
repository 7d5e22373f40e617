"""Plan and run: fresh processes, their blocks and seeds, the lock on a baseline, what an empty run means."""
