"""Edge: one module per command (argparse, wiring of the edges into the core, printing), and the
items the commands take (``items``: local wheels, directories, URLs, ``PROJECT==VERSION``).

Only here and in ``abiprobe.cli`` are argv and stdout touched."""
