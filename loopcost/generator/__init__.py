"""Random programs and random legal schedules, for building datasets."""
