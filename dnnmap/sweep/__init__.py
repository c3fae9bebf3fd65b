"""Design-space sweeps: hardware candidates x networks x objectives, run serially or on Dask, results in a
resumable SQLite store (docs/hwgen.md "Sweeps")."""
