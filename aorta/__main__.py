import sys

from aorta.cli import main

sys.exit(main())
