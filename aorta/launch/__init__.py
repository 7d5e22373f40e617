"""``aorta torchrun``: torchrun, but the exit code is rank 0's pytest code (the gate's 10, 13, 14, ...)."""
