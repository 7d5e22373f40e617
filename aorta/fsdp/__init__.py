"""FSDP2 compute-communication overlap scenarios: config, model, scenarios, trace analysis, fixtures."""
