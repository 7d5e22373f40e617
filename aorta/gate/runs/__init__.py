"""Plan and run: the fresh runs, their blocks and seeds, their wall, ``aorta ab``'s sides, what an empty run means."""
