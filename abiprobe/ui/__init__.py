"""Edge: the terminal: the rich console, the progress display and the help layout the CLI prints with.

Only ``abiprobe.cli``, ``abiprobe.commands`` and the network edge's download progress use it."""
