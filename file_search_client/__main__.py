"""`python -m file_search_client`: see file_search_client.cli."""

from file_search_client.cli import main

raise SystemExit(main())
