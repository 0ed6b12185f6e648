"""Edge: the terminal: the rich console, the progress display and the help layout the CLI prints with.

Only ``abiprobe.cli``, ``abiprobe.commands`` and the network edge's download progress use it; ``interrupt``
(how a signal stops the run) is used by every edge that makes temporary files or child processes."""
