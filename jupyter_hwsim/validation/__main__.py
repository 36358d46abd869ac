"""python -m jupyter_hwsim.validation [out.md]: write the validation report and bands.json."""

import sys

from . import main

sys.exit(main())
