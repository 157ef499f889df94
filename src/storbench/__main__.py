from storbench.cli import main

raise SystemExit(main())
