import sys

from abiprobe.cli import main

sys.exit(main())
