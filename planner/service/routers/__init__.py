"""One router per resource of the API: health, plans, evaluations, profiles."""
