from budcluster.cli import main

raise SystemExit(main())
