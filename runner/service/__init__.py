"""The runner service: HTTP API, job store, worker threads, and the client the explorer uses."""
