"""``python -m kafka_fast`` runs the ``kafka-fast`` command."""

from .cli import main

raise SystemExit(main())
