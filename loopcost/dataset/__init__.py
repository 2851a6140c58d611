"""Building measured datasets: random programs, random schedules, verified timings, locally or on Dask."""
