"""``python -m otel_compaction`` runs the command line."""

import sys

from otel_compaction.cli import main

sys.exit(main())
