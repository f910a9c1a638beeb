"""The planner core: model, validation, rates, simulator and strategies. Knows nothing of HTTP."""
