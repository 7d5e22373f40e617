"""A run compared with a baseline: its settings, every figure's verdict, their causes, the refusals."""
