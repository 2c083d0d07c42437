from lobatto.cli import main

raise SystemExit(main())
