"""``python -m aorta ...`` is the ``aorta`` command."""

import sys

from aorta.cli import main

sys.exit(main())
