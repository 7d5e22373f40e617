"""The verdict on one figure: baseline runs against candidate runs, paired where they share blocks, and the one-machine rule."""
