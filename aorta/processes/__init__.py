"""Processes below the gate, the launchers and the sweep: starting a child, the keeper over its tree, death with the parent, the fork and rank servers, the locks between processes."""
