"""The measurement store: every run time of every (program, schedule, machine) record."""
