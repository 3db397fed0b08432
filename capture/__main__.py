"""``python -m capture MODEL [options]``: run a seed model's workload (no nsys involved)."""
from capture.workload import main

raise SystemExit(main())
