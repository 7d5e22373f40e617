"""Statistics over the runs: a document's samples run by run, between-machine noise and spread, the sequential looks."""
