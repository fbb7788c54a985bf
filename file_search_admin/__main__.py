"""`python -m file_search_admin`."""

import sys

from file_search_admin.cli import main

sys.exit(main())
