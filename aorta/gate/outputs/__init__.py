"""What the gate shows and writes: the terminal table, the verdict JSON and markdown, outputs checked against inputs."""
