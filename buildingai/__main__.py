"""``python -m buildingai ...``: the command line (see ``buildingai.cli``)."""

import sys

from .cli import main

sys.exit(main())
